package summary

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// timeOrder sorts a DXT log's segments by start time in bounded memory:
// up to chunk segments are held and sorted, then spilled to a temporary
// file; the sorted runs are merged as they are read back.
type timeOrder struct {
	chunk int
	buf   []segment
	runs  []*os.File
	seq   int64 // arrival order, to keep the sort stable
}

// segment is one traced access (host is an index into the log's hosts).
type segment struct {
	start    float64
	seq      int64
	rank     int64
	host     uint32
	file     uint64
	off, len int64
	write    bool
}

const segmentBytes = 8 * 7

func cmpSegment(a, b segment) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.seq, b.seq))
}

func (t *timeOrder) add(s segment) error {
	s.seq = t.seq
	t.seq++
	t.buf = append(t.buf, s)
	if len(t.buf) >= t.chunk {
		return t.spill()
	}
	return nil
}

func (t *timeOrder) spill() error {
	slices.SortFunc(t.buf, cmpSegment)
	f, err := os.CreateTemp("", "adaptio-dxt-*.run")
	if err != nil {
		return fmt.Errorf("summary: spilling DXT segments: %w", err)
	}
	os.Remove(f.Name()) // the open file stays readable; nothing is left behind
	w := bufio.NewWriter(f)
	var b [segmentBytes]byte
	for _, s := range t.buf {
		binary.LittleEndian.PutUint64(b[0:], math.Float64bits(s.start))
		binary.LittleEndian.PutUint64(b[8:], uint64(s.seq))
		binary.LittleEndian.PutUint64(b[16:], uint64(s.rank))
		hw := uint64(s.host) << 1
		if s.write {
			hw |= 1
		}
		binary.LittleEndian.PutUint64(b[24:], hw)
		binary.LittleEndian.PutUint64(b[32:], s.file)
		binary.LittleEndian.PutUint64(b[40:], uint64(s.off))
		binary.LittleEndian.PutUint64(b[48:], uint64(s.len))
		if _, err := w.Write(b[:]); err != nil {
			f.Close()
			return fmt.Errorf("summary: spilling DXT segments: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("summary: spilling DXT segments: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return err
	}
	t.runs = append(t.runs, f)
	t.buf = t.buf[:0]
	return nil
}

// run is one sorted run being merged.
type run struct {
	r   *bufio.Reader
	cur segment
}

func (r *run) next() (bool, error) {
	var b [segmentBytes]byte
	if _, err := io.ReadFull(r.r, b[:]); err == io.EOF {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("summary: reading spilled DXT segments: %w", err)
	}
	hw := binary.LittleEndian.Uint64(b[24:])
	r.cur = segment{start: math.Float64frombits(binary.LittleEndian.Uint64(b[0:])), seq: int64(binary.LittleEndian.Uint64(b[8:])),
		rank: int64(binary.LittleEndian.Uint64(b[16:])), host: uint32(hw >> 1), write: hw&1 == 1,
		file: binary.LittleEndian.Uint64(b[32:]), off: int64(binary.LittleEndian.Uint64(b[40:])), len: int64(binary.LittleEndian.Uint64(b[48:]))}
	return true, nil
}

type runHeap []*run

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return cmpSegment(h[i].cur, h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// each calls f with every segment in time order, then releases the runs.
func (t *timeOrder) each(f func(segment)) error {
	defer func() {
		for _, r := range t.runs {
			r.Close()
		}
	}()
	if len(t.runs) == 0 {
		slices.SortFunc(t.buf, cmpSegment)
		for _, s := range t.buf {
			f(s)
		}
		return nil
	}
	if len(t.buf) > 0 {
		if err := t.spill(); err != nil {
			return err
		}
	}
	h := runHeap{}
	for _, file := range t.runs {
		r := &run{r: bufio.NewReaderSize(file, 64<<10)}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, r)
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		r := h[0]
		f(r.cur)
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}
