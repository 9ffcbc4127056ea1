// Package spill sorts more records than memory should hold, for the
// readers of large DXT traces: up to a chunk of records is sorted in
// memory, then written to a temporary file as a sorted run; Each merges
// the runs as it reads them back. The temporary files are unlinked as
// they are made, so nothing is left behind.
//
//	s := spill.New(1<<19, cmpRecord, codec, "summary: DXT segments")
//	defer s.Close()
//	for ... { if err := s.Add(r); err != nil { ... } }
//	err := s.Each(func(r record) error { ... })
package spill

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"
)

// Codec writes a record as Size bytes and reads it back.
type Codec[T any] struct {
	Size int
	Put  func(b []byte, x T)
	Get  func(b []byte) T
}

// Sorter sorts records of type T by cmp in bounded memory. Give cmp a
// tie-breaker (an arrival number in the record) where equal records must
// keep their order. Not safe for concurrent use.
type Sorter[T any] struct {
	chunk int
	cmp   func(a, b T) int
	codec Codec[T]
	what  string // what is sorted, for errors
	buf   []T
	runs  []*os.File
	n     int64
}

// New returns a sorter holding at most chunk records in memory (at least
// 1); what names the records in errors ("summary: DXT segments").
func New[T any](chunk int, cmp func(a, b T) int, codec Codec[T], what string) *Sorter[T] {
	return &Sorter[T]{chunk: max(chunk, 1), cmp: cmp, codec: codec, what: what}
}

// Add adds x, spilling a sorted run when the chunk is full.
func (s *Sorter[T]) Add(x T) error {
	s.buf = append(s.buf, x)
	s.n++
	if len(s.buf) >= s.chunk {
		return s.spill()
	}
	return nil
}

// Len is the number of records added.
func (s *Sorter[T]) Len() int64 { return s.n }

// Spilled reports whether records went to temporary files.
func (s *Sorter[T]) Spilled() bool { return len(s.runs) > 0 }

func (s *Sorter[T]) spill() error {
	slices.SortFunc(s.buf, s.cmp)
	f, err := os.CreateTemp("", "adaptio-spill-*.run")
	if err != nil {
		return fmt.Errorf("%s: spilling: %w", s.what, err)
	}
	os.Remove(f.Name()) // the open file stays readable; nothing is left behind
	w := bufio.NewWriterSize(f, 64<<10)
	b := make([]byte, s.codec.Size)
	for _, x := range s.buf {
		s.codec.Put(b, x)
		if _, err := w.Write(b); err != nil {
			f.Close()
			return fmt.Errorf("%s: spilling: %w", s.what, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: spilling: %w", s.what, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return fmt.Errorf("%s: spilling: %w", s.what, err)
	}
	s.runs = append(s.runs, f)
	clear(s.buf)
	s.buf = s.buf[:0]
	return nil
}

// run is one sorted run being merged.
type run[T any] struct {
	r   *bufio.Reader
	b   []byte
	cur T
}

func (r *run[T]) next(c Codec[T], what string) (bool, error) {
	if _, err := io.ReadFull(r.r, r.b); err == io.EOF {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("%s: reading a spilled run: %w", what, err)
	}
	r.cur = c.Get(r.b)
	return true, nil
}

type runHeap[T any] struct {
	runs []*run[T]
	cmp  func(a, b T) int
}

func (h *runHeap[T]) Len() int           { return len(h.runs) }
func (h *runHeap[T]) Less(i, j int) bool { return h.cmp(h.runs[i].cur, h.runs[j].cur) < 0 }
func (h *runHeap[T]) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap[T]) Push(x any)         { h.runs = append(h.runs, x.(*run[T])) }
func (h *runHeap[T]) Pop() any {
	x := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return x
}

// Each calls f with every record in order, then releases the runs; it
// stops at f's first error and returns it. Call it once.
func (s *Sorter[T]) Each(f func(T) error) error {
	defer s.Close()
	if len(s.runs) == 0 {
		slices.SortFunc(s.buf, s.cmp)
		for _, x := range s.buf {
			if err := f(x); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	h := &runHeap[T]{cmp: s.cmp}
	for _, file := range s.runs {
		r := &run[T]{r: bufio.NewReaderSize(file, 64<<10), b: make([]byte, s.codec.Size)}
		ok, err := r.next(s.codec, s.what)
		if err != nil {
			return err
		}
		if ok {
			h.runs = append(h.runs, r)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		r := h.runs[0]
		if err := f(r.cur); err != nil {
			return err
		}
		ok, err := r.next(s.codec, s.what)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// Close releases the runs and the records held (Each does it too).
func (s *Sorter[T]) Close() {
	for _, r := range s.runs {
		r.Close()
	}
	s.runs, s.buf = nil, nil
}
