package darshan

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"math"
)

// Segment is one traced access of a DXT record.
type Segment struct {
	Write  bool
	Offset int64 // -1 where the module version did not record it (DXT_MPIIO 1)
	Length int64
	Start  float64 // seconds since the job started
	End    float64
	// Thread is the POSIX thread id of the access (HasThread false:
	// DXT_POSIX 1 and DXT_MPIIO 1-2 did not record it).
	Thread    uint64
	HasThread bool
}

// Trace is one DXT record: the traced accesses of one file by one rank.
// Its segments are read by Segments, writes first, then reads, as the log
// holds them.
type Trace struct {
	Module     Module // DXTPOSIX or DXTMPIIO
	ID         uint64
	Rank       int64
	Name       string
	Hostname   string
	Shared     bool // the record is of a file every rank shares
	WriteCount int64
	ReadCount  int64

	segments func(yield func(Segment, error) bool)
}

// Segments iterates over the trace's accesses. It reads them from the log
// as it goes: call it at most once, before the next trace.
func (t Trace) Segments() iter.Seq2[Segment, error] { return t.segments }

// dxtHeader is sizeof(struct dxt_file_record).
const dxtHeader = 16 + 8 + 64 + 8 + 8

// maxSegments bounds a record's segment count (a corrupt count would
// otherwise read gigabytes of nothing).
const maxSegments = 1 << 40

// Traces iterates over the DXT records of module m (DXTPOSIX or DXTMPIIO)
// in log order, in bounded memory: a trace's segments are read when its
// Segments is iterated (and skipped otherwise).
func (l *Log) Traces(m Module) iter.Seq2[Trace, error] {
	return func(yield func(Trace, error) bool) {
		if m != DXTPOSIX && m != DXTMPIIO {
			yield(Trace{}, fmt.Errorf("darshan: %s is not a DXT module", m))
			return
		}
		if !l.HasModule(m) {
			return
		}
		v := l.ModuleVersion[m]
		thread := m == DXTPOSIX && v >= 2 || m == DXTMPIIO && v >= 3
		if v == 0 || m == DXTPOSIX && v > 2 || m == DXTMPIIO && v > 3 {
			yield(Trace{}, bad(m.String()+" region", int64(l.mods[m].off), "module version %d: this reader knows DXT_POSIX 1-2, DXT_MPIIO 1-3", v))
			return
		}
		segSize := 32
		if thread {
			segSize = 40
		}
		br := bufio.NewReaderSize(l.open(l.mods[m]), 64<<10)
		where := m.String() + " region"
		var off int64
		hdr := make([]byte, dxtHeader)
		seg := make([]byte, segSize)
		for {
			n, err := io.ReadFull(br, hdr)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(Trace{}, bad(where, off, "record header cut short (%d of %d bytes): %v", n, dxtHeader, err))
				return
			}
			t := Trace{Module: m, ID: l.order.Uint64(hdr), Rank: int64(l.order.Uint64(hdr[8:])),
				Shared: int64(l.order.Uint64(hdr[16:])) == -1, Hostname: cString(hdr[24:88]),
				WriteCount: int64(l.order.Uint64(hdr[88:])), ReadCount: int64(l.order.Uint64(hdr[96:]))}
			t.Name = l.nameOf[t.ID]
			if t.WriteCount < 0 || t.ReadCount < 0 || t.WriteCount+t.ReadCount > maxSegments {
				yield(Trace{}, bad(where, off, "record %d: %d writes and %d reads", t.ID, t.WriteCount, t.ReadCount))
				return
			}
			off += dxtHeader
			count := t.WriteCount + t.ReadCount
			var read int64 // segments consumed
			var segErr error
			t.segments = func(yieldSeg func(Segment, error) bool) {
				for ; read < count; read++ {
					if n, err := io.ReadFull(br, seg); err != nil {
						segErr = bad(where, off, "segment %d of record %d cut short (%d of %d bytes): %v", read, t.ID, n, segSize, err)
						yieldSeg(Segment{}, segErr)
						return
					}
					off += int64(segSize)
					s := Segment{Write: read < t.WriteCount, Offset: int64(l.order.Uint64(seg)), Length: int64(l.order.Uint64(seg[8:])),
						Start: math.Float64frombits(l.order.Uint64(seg[16:])), End: math.Float64frombits(l.order.Uint64(seg[24:]))}
					if thread {
						s.Thread, s.HasThread = l.order.Uint64(seg[32:]), true
					}
					if m == DXTMPIIO && v == 1 {
						s.Offset = -1
					}
					if !yieldSeg(s, nil) {
						read++
						return
					}
				}
			}
			if !yield(t, nil) {
				return
			}
			if segErr != nil {
				yield(Trace{}, segErr)
				return
			}
			// Skip what the caller did not read.
			if rest := (count - read) * int64(segSize); rest > 0 {
				if n, err := br.Discard(int(rest)); err != nil {
					yield(Trace{}, bad(where, off, "segments of record %d cut short (%d of %d bytes): %v", t.ID, n, rest, err))
					return
				}
				off += rest
				read = count
			}
		}
	}
}
