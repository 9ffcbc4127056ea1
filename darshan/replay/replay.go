// Package replay turns a Darshan log's DXT trace into a recorded workload
// (workload.Trace) that the simulator replays access by access: each
// rank's accesses in the order it issued them (file, offset, length, read
// or write), with the gaps between them kept as think time.
//
//	l, c, _ := darshan.Open(path)
//	defer c.Close()
//	tr, info, err := replay.FromDXT(l, replay.Options{})
//	res, err := sim.Run(ctx, sim.Config{Traces: []workload.Trace{tr}, IONodes: 4}, sim.Hooks{})
//
// The files are renamed workload.TraceFileName(i), numbered in the order
// the log first names them (Info.Files keeps the log's names), so that the
// simulator stripes them as a forwarder's backends would stripe the files
// a replay creates.
package replay

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Errors.
var (
	// ErrNoDXT: the log has no DXT trace the replay can use.
	ErrNoDXT = errors.New("replay: no usable DXT trace")
	// ErrTooLarge: the trace has more accesses than Options.MaxAccesses.
	ErrTooLarge = errors.New("replay: DXT trace too large")
	// ErrBadTrace: a traced access cannot be replayed (times not finite,
	// a rank out of range).
	ErrBadTrace = errors.New("replay: unusable DXT trace")
)

// DefaultMaxAccesses is the most accesses FromDXT converts by default:
// the trace is held in memory, about 72 bytes per access at the peak of
// the conversion (300 MB for 4 Mi accesses), 32 once converted.
const DefaultMaxAccesses = 4 << 20

// MaxRanks bounds a traced rank number (a damaged log could otherwise ask
// for billions of processes).
const MaxRanks = 1 << 22

// Options say how a DXT trace becomes a workload. The zero value replays
// DXT_POSIX (else DXT_MPIIO) with the think times as traced.
type Options struct {
	// Module is the trace to replay: DXTPOSIX (what reached the file
	// system: what a forwarder sees) or DXTMPIIO; 0: DXT_POSIX when the log
	// has it, else DXT_MPIIO.
	Module darshan.Module
	// ThinkScale multiplies the think times (0: 1, as traced).
	ThinkScale float64
	// NoThink drops the think times: each rank issues its accesses back to
	// back, from the start.
	NoThink bool
	// MaxAccesses is the most accesses converted (0: DefaultMaxAccesses);
	// a larger trace is refused with ErrTooLarge.
	MaxAccesses int64
}

// Info describes a conversion.
type Info struct {
	Module    darshan.Module
	Partial   bool     // the log says the module ran out of memory: the trace is incomplete
	Accesses  int64    // accesses replayed
	Skipped   int64    // traced accesses left out: no bytes, or no offset
	Ranks     int      // ranks with at least one access
	Processes int      // processes replayed: the job's, or up to the highest traced rank
	Files     []string // the log's name of each file of the trace (index: workload.Request.File)
	Read      int64    // bytes
	Written   int64    // bytes
	// Span is the traced I/O's duration: from the first access's start to
	// the last one's end.
	Span time.Duration
	// Think is the most think time of one rank (after scaling): the
	// replay's makespan is at least this.
	Think time.Duration
}

// Module returns the DXT module FromDXT reads by default: DXT_POSIX when
// the log has it, else DXT_MPIIO; ok false when it has neither.
func Module(l *darshan.Log) (m darshan.Module, ok bool) {
	for _, m := range []darshan.Module{darshan.DXTPOSIX, darshan.DXTMPIIO} {
		if l.HasModule(m) {
			return m, true
		}
	}
	return 0, false
}

// access is one traced access during the conversion.
type access struct {
	start, end  float64 // seconds since the job started
	off, length int64
	file        int32
	write       bool
}

// FromDXT converts l's DXT trace (see Options) into a workload of
// Info.Processes processes, process r being rank r: its accesses in the
// order they started (ties in log order), each after its think time: the
// time between the end of the rank's accesses so far and its start (for
// the first, since the trace's first access), scaled. Accesses of no
// bytes, or of an unknown offset, are left out (Info.Skipped). The trace
// is read once, as the log is decompressed.
func FromDXT(l *darshan.Log, o Options) (*workload.Recorded, Info, error) {
	info := Info{Module: o.Module}
	if o.Module == 0 {
		m, ok := Module(l)
		if !ok {
			return nil, info, fmt.Errorf("%w: the log has neither DXT_POSIX nor DXT_MPIIO (Darshan's DXT module, DXT_ENABLE_IO_TRACE=1, records one)", ErrNoDXT)
		}
		info.Module = m
	}
	m := info.Module
	switch {
	case m != darshan.DXTPOSIX && m != darshan.DXTMPIIO:
		return nil, info, fmt.Errorf("%w: %s is not a DXT module", ErrNoDXT, m)
	case !l.HasModule(m):
		return nil, info, fmt.Errorf("%w: the log has no %s trace", ErrNoDXT, m)
	case m == darshan.DXTMPIIO && l.ModuleVersion[m] == 1:
		return nil, info, fmt.Errorf("%w: DXT_MPIIO version 1 did not record offsets (replay DXT_POSIX)", ErrNoDXT)
	case o.ThinkScale < 0 || math.IsNaN(o.ThinkScale) || math.IsInf(o.ThinkScale, 0):
		return nil, info, fmt.Errorf("replay: think scale %v, want >= 0", o.ThinkScale)
	}
	scale := o.ThinkScale
	if scale == 0 {
		scale = 1
	}
	if o.NoThink {
		scale = 0
	}
	limit := o.MaxAccesses
	if limit <= 0 {
		limit = DefaultMaxAccesses
	}
	info.Partial = l.PartialModule(m)

	fileOf := map[uint64]int32{}
	var ranks [][]access
	var traced int64 // accesses the records hold
	t0, tEnd := math.Inf(1), math.Inf(-1)
	for tr, err := range l.Traces(m) {
		if err != nil {
			return nil, info, err
		}
		traced += tr.WriteCount + tr.ReadCount
		if traced > limit {
			continue // count the rest, for the message
		}
		if tr.Rank < 0 || tr.Rank >= MaxRanks {
			return nil, info, fmt.Errorf("%w: %s record of %q: rank %d (want 0 to %d)", ErrBadTrace, m, tr.Name, tr.Rank, MaxRanks-1)
		}
		f, ok := fileOf[tr.ID]
		if !ok {
			f = int32(len(info.Files))
			fileOf[tr.ID] = f
			info.Files = append(info.Files, tr.Name)
		}
		if int(tr.Rank) >= len(ranks) {
			ranks = append(ranks, make([][]access, int(tr.Rank)+1-len(ranks))...)
		}
		n := 0
		for sg, err := range tr.Segments() {
			if err != nil {
				return nil, info, err
			}
			n++
			if sg.Length <= 0 || sg.Offset < 0 || sg.Offset > math.MaxInt64-sg.Length {
				info.Skipped++
				continue
			}
			if !finite(sg.Start) || !finite(sg.End) {
				return nil, info, fmt.Errorf("%w: %s record of %q, rank %d, access %d: start %v, end %v", ErrBadTrace, m, tr.Name, tr.Rank, n, sg.Start, sg.End)
			}
			a := access{start: sg.Start, end: max(sg.End, sg.Start), off: sg.Offset, length: sg.Length, file: f, write: sg.Write}
			ranks[tr.Rank] = append(ranks[tr.Rank], a)
			t0, tEnd = min(t0, a.start), max(tEnd, a.end)
		}
	}
	if traced > limit {
		return nil, info, fmt.Errorf("%w: %d accesses, more than %d (--max-accesses; held in memory, about 72 bytes each while converted)", ErrTooLarge, traced, limit)
	}

	procs := len(ranks)
	if j := l.Job.Procs; j > int64(procs) && j <= MaxRanks {
		procs = int(j)
	}
	tr := &workload.Recorded{Procs: make([][]workload.Request, max(procs, 1))}
	for i := range info.Files {
		tr.Names = append(tr.Names, workload.TraceFileName(i))
	}
	info.Processes = len(tr.Procs)
	if !finite(t0) {
		t0, tEnd = 0, 0
	}
	info.Span = seconds(tEnd - t0)
	for r, acc := range ranks {
		if len(acc) == 0 {
			continue
		}
		info.Ranks++
		slices.SortStableFunc(acc, func(a, b access) int { return cmp.Compare(a.start, b.start) })
		reqs := make([]workload.Request, len(acc))
		var think time.Duration
		end := t0 // the end of the rank's accesses so far
		for i, a := range acc {
			op := rw.Read
			if a.write {
				op, info.Written = rw.Write, info.Written+a.length
			} else {
				info.Read += a.length
			}
			gap := seconds(max(a.start-end, 0) * scale)
			think += gap
			end = max(end, a.end)
			reqs[i] = workload.Request{Think: gap, Offset: a.off, Length: a.length, File: a.file, Op: op}
		}
		info.Think = max(info.Think, think)
		info.Accesses += int64(len(reqs))
		tr.Procs[r] = reqs
		ranks[r] = nil // let the conversion's copy go as the requests are made
	}
	return tr, info, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// maxSeconds bounds a converted time (about 146 years), so that a damaged
// log's times convert without overflow; the simulator refuses a think time
// beyond its MaxTime anyway.
const maxSeconds = float64(math.MaxInt64/2) / 1e9

// seconds converts s >= 0 seconds to a Duration, rounded to the nanosecond.
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(min(s, maxSeconds) * 1e9))
}
