package darshan_test

import (
	"math"
	"math/bits"
	"slices"

	"github.com/adaptio/adaptio/darshan"
)

// darshan-util converts an old POSIX record in place in a zeroed 1,024-byte
// buffer, and two of its steps lose values that this package keeps:
//
//   - its memmoves copy the record's length as read, not as it has grown,
//     so the last counters are cut: a version-3 record reads
//     F_VARIANCE_RANK_TIME and F_VARIANCE_RANK_BYTES as 0, a version 1 or
//     2 record loses more of its floating-point counters;
//   - for a log of the other byte order, it leaves unswapped the
//     floating-point counters at the integer indices of RENAME_SOURCES,
//     RENAME_TARGETS and RENAMED_FROM (10 to 12: F_META_TIME,
//     F_MAX_READ_TIME, F_MAX_WRITE_TIME), which it meant to skip among the
//     integer counters.
//
// utilPOSIX returns the counters darshan-parser prints for r, a POSIX
// record of module version ver, by undoing this package's conversion and
// doing darshan-util's, word for word.
func utilPOSIX(r darshan.Record, ver uint32, swapped bool) ([]int64, []float64) {
	if ver >= 4 {
		return r.Counters, r.FCounters
	}
	// The record as it was in the log (host byte order), from the current one.
	w := []uint64{r.ID, uint64(r.Rank)}
	for i, c := range r.Counters {
		if i == 1 || i == 2 || i == 10 || i == 11 || i == 12 { // added by version 4
			continue
		}
		w = append(w, uint64(c))
	}
	if ver == 1 {
		w = slices.Insert(w, 2+6, 0, 0, 0, 0) // the four STDIO counters, 0 in a converted record
	}
	for i, f := range r.FCounters {
		if ver <= 2 && (i == 3 || i == 4) { // added by version 3
			continue
		}
		w = append(w, math.Float64bits(f))
	}
	var s [128]uint64
	n := copy(s[:], w)
	move := func(dest, src, k int) { copy(s[dest:dest+k], s[src:src+k]) }
	if ver == 1 {
		move(2+6, 2+10, n-(2+10))
	}
	if ver <= 2 {
		move(2+64+5, 2+64+3, 12)
		s[2+64+3], s[2+64+4] = math.Float64bits(-1), math.Float64bits(-1)
	}
	move(2+3, 2+1, n-(2+1))
	s[2+1], s[2+2] = math.MaxUint64, math.MaxUint64
	move(2+13, 2+10, n-(2+10))
	s[2+10], s[2+11], s[2+12] = math.MaxUint64, math.MaxUint64, 0
	ints := make([]int64, 69)
	for i := range ints {
		ints[i] = int64(s[2+i])
	}
	floats := make([]float64, 17)
	for i := range floats {
		v := s[2+69+i]
		if swapped && i >= 10 && i <= 12 {
			v = bits.ReverseBytes64(v)
		}
		floats[i] = math.Float64frombits(v)
	}
	return ints, floats
}
