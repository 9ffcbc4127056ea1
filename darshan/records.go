package darshan

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"slices"
)

// Record is one record of a counter module (POSIX, MPI-IO, STDIO): one
// file as one rank saw it (Rank -1: a file shared by every rank, its
// counters reduced over them).
type Record struct {
	Module    Module
	ID        uint64
	Rank      int64
	Name      string
	Counters  []int64   // by index; CounterNames(Module) names them
	FCounters []float64 // by index; FCounterNames(Module) names them
}

// Counter returns the counter named name (e.g. "POSIX_BYTES_READ") and
// whether the module has it.
func (r Record) Counter(name string) (int64, bool) {
	for i, n := range CounterNames(r.Module) {
		if n == name {
			return r.Counters[i], true
		}
	}
	return 0, false
}

// FCounter returns the floating-point counter named name.
func (r Record) FCounter(name string) (float64, bool) {
	for i, n := range FCounterNames(r.Module) {
		if n == name {
			return r.FCounters[i], true
		}
	}
	return 0, false
}

// layout is a counter module's record format in one version: how many
// integer and floating-point counters, and how to bring a record to the
// current version.
type layout struct {
	ints, floats int
	// up converts a record of this version (its 64-bit words, base record
	// first, already in host byte order) to the current one; keep false
	// is a record darshan-util leaves out.
	up func(words []uint64) (current []uint64, keep bool)
}

// The up-conversions bring a record to the current version as
// darshan-util does (darshan-posix-logutils.c and the others): counters
// added by later versions are -1 (unknown), POSIX_RENAMED_FROM 0. Where
// darshan-util's in-place conversion loses values, these keep them (see
// the golden test, which shows the two differences).

var (
	minusOne  = uint64(math.MaxUint64) // int64 -1
	minusOneF = math.Float64bits(-1)   // double -1
)

// insertAt returns w with vals inserted at i.
func insertAt(w []uint64, i int, vals ...uint64) []uint64 {
	return append(w[:i:i], append(vals, w[i:]...)...)
}

// POSIX record positions, base record (2 words) included.
const (
	posixInts    = 2
	posixFloatsV = 2 + 64 // floats of versions 2 and 3
)

func posixUp(ver int) func(words []uint64) ([]uint64, bool) {
	return func(w []uint64) ([]uint64, bool) {
		if ver == 1 {
			// Version 1 kept four STDIO counters after the sixth: a record
			// with fopens cannot be converted and is left out.
			if int64(w[posixInts+6]) > 0 {
				return nil, false
			}
			w = append(w[:posixInts+6:posixInts+6], w[posixInts+10:]...)
		}
		if ver <= 2 {
			w = insertAt(w, posixFloatsV+3, minusOneF, minusOneF) // F_CLOSE_START, F_OPEN_END
		}
		w = insertAt(w, posixInts+1, minusOne, minusOne)     // FILENOS, DUPS
		w = insertAt(w, posixInts+10, minusOne, minusOne, 0) // RENAME_SOURCES, RENAME_TARGETS, RENAMED_FROM
		return w, true
	}
}

func mpiioUp(w []uint64) ([]uint64, bool) {
	return insertAt(w, 2+51+3, minusOneF, minusOneF), true // F_CLOSE_START, F_OPEN_END
}

func stdioUp(w []uint64) ([]uint64, bool) {
	return insertAt(w, 2+1, minusOne), true // FDOPENS
}

var layouts = map[Module]map[uint32]layout{
	POSIX: {
		1: {68, 15, posixUp(1)},
		2: {64, 15, posixUp(2)},
		3: {64, 17, posixUp(3)},
		4: {69, 17, nil},
	},
	MPIIO: {
		1: {51, 15, mpiioUp},
		2: {51, 15, mpiioUp},
		3: {51, 17, nil},
	},
	STDIO: {
		1: {13, 15, stdioUp},
		2: {14, 15, nil},
	},
}

// CounterNames names the integer counters of a counter module (nil for
// other modules).
func CounterNames(m Module) []string {
	switch m {
	case POSIX:
		return posixCounters
	case MPIIO:
		return mpiioCounters
	case STDIO:
		return stdioCounters
	}
	return nil
}

// FCounterNames names the floating-point counters of a counter module.
func FCounterNames(m Module) []string {
	switch m {
	case POSIX:
		return posixFCounters
	case MPIIO:
		return mpiioFCounters
	case STDIO:
		return stdioFCounters
	}
	return nil
}

// Records iterates over module m's records (POSIX, MPI-IO or STDIO), in
// log order, decompressing as it goes. A malformed record ends the
// iteration with an error naming the region and the offset.
func (l *Log) Records(m Module) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if !l.HasModule(m) {
			return
		}
		vers, ok := layouts[m]
		if !ok {
			yield(Record{}, fmt.Errorf("darshan: module %s has no counter records (known: POSIX, MPI-IO, STDIO)", m))
			return
		}
		v := l.ModuleVersion[m]
		lay, ok := vers[v]
		if !ok {
			yield(Record{}, bad(m.String()+" region", int64(l.mods[m].off), "module version %d: this reader knows %v", v, keys(vers)))
			return
		}
		size := 16 + 8*(lay.ints+lay.floats)
		br := bufio.NewReaderSize(l.open(l.mods[m]), 64<<10)
		buf := make([]byte, size)
		for off := int64(0); ; off += int64(size) {
			n, err := io.ReadFull(br, buf)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(Record{}, bad(m.String()+" region", off, "record cut short (%d of %d bytes, decompressed offset): %v", n, size, err))
				return
			}
			words := make([]uint64, size/8)
			for i := range words {
				words[i] = l.order.Uint64(buf[8*i:])
			}
			if lay.up != nil {
				var keep bool
				if words, keep = lay.up(words); !keep {
					continue
				}
			}
			ni := len(CounterNames(m))
			r := Record{Module: m, ID: words[0], Rank: int64(words[1]),
				Counters: make([]int64, ni), FCounters: make([]float64, len(words)-2-ni)}
			for i := range r.Counters {
				r.Counters[i] = int64(words[2+i])
			}
			for i := range r.FCounters {
				r.FCounters[i] = math.Float64frombits(words[2+ni+i])
			}
			r.Name = l.nameOf[r.ID]
			if !yield(r, nil) {
				return
			}
		}
	}
}

func keys(m map[uint32]layout) []uint32 { return slices.Sorted(maps.Keys(m)) }
