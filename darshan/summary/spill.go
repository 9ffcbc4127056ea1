package summary

import (
	"cmp"
	"encoding/binary"
	"math"

	"github.com/adaptio/adaptio/darshan/internal/spill"
)

// segment is one traced access (host is an index into the log's hosts;
// seq its arrival order, which keeps the time order stable).
type segment struct {
	start    float64
	seq      int64
	rank     int64
	host     uint32
	file     uint64
	off, len int64
	write    bool
}

func cmpSegment(a, b segment) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.seq, b.seq))
}

// segmentCodec writes a segment in 56 bytes for spilled runs.
var segmentCodec = spill.Codec[segment]{Size: 8 * 7,
	Put: func(b []byte, s segment) {
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
	},
	Get: func(b []byte) segment {
		hw := binary.LittleEndian.Uint64(b[24:])
		return segment{start: math.Float64frombits(binary.LittleEndian.Uint64(b[0:])), seq: int64(binary.LittleEndian.Uint64(b[8:])),
			rank: int64(binary.LittleEndian.Uint64(b[16:])), host: uint32(hw >> 1), write: hw&1 == 1,
			file: binary.LittleEndian.Uint64(b[32:]), off: int64(binary.LittleEndian.Uint64(b[40:])), len: int64(binary.LittleEndian.Uint64(b[48:]))}
	},
}

// timeOrder sorts a DXT log's segments by start time in bounded memory
// (package spill: runs of chunk segments spilled to temporary files and
// merged as they are read back).
type timeOrder struct {
	s   *spill.Sorter[segment]
	seq int64
}

func newTimeOrder(chunk int) *timeOrder {
	return &timeOrder{s: spill.New(chunk, cmpSegment, segmentCodec, "summary: DXT segments")}
}

func (t *timeOrder) add(s segment) error {
	s.seq = t.seq
	t.seq++
	return t.s.Add(s)
}

// each calls f with every segment in time order, then releases the runs.
func (t *timeOrder) each(f func(segment)) error {
	return t.s.Each(func(s segment) error { f(s); return nil })
}
