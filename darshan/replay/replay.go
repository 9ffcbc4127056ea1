// Package replay turns a Darshan log's DXT trace into a recorded workload
// (workload.Trace) that the simulator replays access by access: each
// rank's accesses in the order it issued them (file, offset, length, read
// or write), with the gaps between them kept as think time.
//
//	l, c, _ := darshan.Open(path)
//	defer c.Close()
//	tr, info, err := replay.FromDXT(l, replay.Options{})
//	defer tr.Close()
//	res, err := sim.Run(ctx, sim.Config{Traces: []workload.Trace{tr}, IONodes: 4}, sim.Hooks{})
//
// A trace of any size is converted and replayed in bounded memory: the
// log is read once, its accesses sorted by rank and time in runs spilled
// to temporary files past Options.MemoryAccesses, and the replay reads
// each rank's requests from one temporary file a few at a time.
//
// The files are renamed workload.TraceFileName(i), numbered in the order
// the log first names them (Info.Files keeps the log's names), so that the
// simulator stripes them as a forwarder's backends would stripe the files
// a replay creates.
package replay

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/darshan/internal/spill"
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

// DefaultMemoryAccesses is how many accesses the conversion sorts in
// memory (56 bytes each: 28 MiB) before it spills them to temporary files.
const DefaultMemoryAccesses = 1 << 19

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
	// MaxAccesses is the most accesses converted (0: no limit); a larger
	// trace is refused with ErrTooLarge.
	MaxAccesses int64
	// MemoryAccesses is how many accesses are sorted in memory (0:
	// DefaultMemoryAccesses). A trace that fits is held in memory (32 bytes
	// an access); a larger one is sorted in runs spilled to temporary
	// files and kept in one (32 bytes an access on disk), from which a
	// replay reads each rank's requests a few at a time.
	MemoryAccesses int
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
	// Spilled is true when the trace was too large for memory and is read
	// from a temporary file.
	Spilled bool
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

// access is one traced access during the conversion; seq is its place in
// the log, which orders the accesses of a rank that start together.
type access struct {
	rank        int64
	start, end  float64 // seconds since the job started
	off, length int64
	seq         int64
	file        int32
	write       bool
}

func cmpAccess(a, b access) int {
	return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.start, b.start), cmp.Compare(a.seq, b.seq))
}

// accessCodec writes an access in 56 bytes for spilled runs.
var accessCodec = spill.Codec[access]{Size: 56,
	Put: func(b []byte, a access) {
		le := binary.LittleEndian
		le.PutUint64(b[0:], uint64(a.rank))
		le.PutUint64(b[8:], math.Float64bits(a.start))
		le.PutUint64(b[16:], math.Float64bits(a.end))
		le.PutUint64(b[24:], uint64(a.off))
		le.PutUint64(b[32:], uint64(a.length))
		le.PutUint64(b[40:], uint64(a.seq))
		fw := uint64(uint32(a.file)) << 1
		if a.write {
			fw |= 1
		}
		le.PutUint64(b[48:], fw)
	},
	Get: func(b []byte) access {
		le := binary.LittleEndian
		fw := le.Uint64(b[48:])
		return access{rank: int64(le.Uint64(b[0:])), start: math.Float64frombits(le.Uint64(b[8:])), end: math.Float64frombits(le.Uint64(b[16:])),
			off: int64(le.Uint64(b[24:])), length: int64(le.Uint64(b[32:])), seq: int64(le.Uint64(b[40:])), file: int32(uint32(fw >> 1)), write: fw&1 == 1}
	},
}

// FromDXT converts l's DXT trace (see Options) into a workload of
// Info.Processes processes, process r being rank r: its accesses in the
// order they started (ties in log order), each after its think time: the
// time between the end of the rank's accesses so far and its start (for
// the first, since the trace's first access), scaled. Accesses of no
// bytes, or of an unknown offset, are left out (Info.Skipped). The log is
// read once; Close the trace when done.
func FromDXT(l *darshan.Log, o Options) (*Trace, Info, error) {
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
		limit = math.MaxInt64
	}
	chunk := o.MemoryAccesses
	if chunk <= 0 {
		chunk = DefaultMemoryAccesses
	}
	info.Partial = l.PartialModule(m)

	sorted := spill.New(chunk, cmpAccess, accessCodec, "replay: DXT accesses")
	defer sorted.Close()
	fileOf := map[uint64]int32{}
	var traced int64 // accesses the records hold
	ranks := 0       // highest traced rank + 1
	t0, tEnd := math.Inf(1), math.Inf(-1)
	for tr, err := range l.Traces(m) {
		if err != nil {
			return nil, info, err
		}
		if tr.WriteCount+tr.ReadCount > limit-traced {
			return nil, info, fmt.Errorf("%w: more than %d accesses (--max-accesses)", ErrTooLarge, limit)
		}
		traced += tr.WriteCount + tr.ReadCount
		if tr.Rank < 0 || tr.Rank >= MaxRanks {
			return nil, info, fmt.Errorf("%w: %s record of %q: rank %d (want 0 to %d)", ErrBadTrace, m, tr.Name, tr.Rank, MaxRanks-1)
		}
		f, ok := fileOf[tr.ID]
		if !ok {
			f = int32(len(info.Files))
			fileOf[tr.ID] = f
			info.Files = append(info.Files, tr.Name)
		}
		ranks = max(ranks, int(tr.Rank)+1)
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
			a := access{rank: tr.Rank, start: sg.Start, end: max(sg.End, sg.Start), off: sg.Offset, length: sg.Length, seq: sorted.Len(), file: f, write: sg.Write}
			if err := sorted.Add(a); err != nil {
				return nil, info, err
			}
			t0, tEnd = min(t0, a.start), max(tEnd, a.end)
		}
	}

	procs := max(ranks, 1)
	if j := l.Job.Procs; j > int64(procs) && j <= MaxRanks {
		procs = int(j)
	}
	info.Processes = procs
	if !finite(t0) {
		t0, tEnd = 0, 0
	}
	info.Span = seconds(tEnd - t0)
	t := &Trace{procs: procs}
	for i := range info.Files {
		t.names = append(t.names, workload.TraceFileName(i))
	}
	var out sink
	if info.Spilled = sorted.Spilled(); info.Spilled {
		fs, err := newFileSink(procs)
		if err != nil {
			return nil, info, err
		}
		out = fs
	} else {
		out = &memSink{procs: make([][]workload.Request, procs)}
	}
	rank := int64(-1)
	var end float64 // the end of the rank's accesses so far
	var think time.Duration
	err := sorted.Each(func(a access) error {
		if a.rank != rank {
			rank, end, think = a.rank, t0, 0
			info.Ranks++
		}
		op := rw.Read
		if a.write {
			op, info.Written = rw.Write, info.Written+a.length
		} else {
			info.Read += a.length
		}
		gap := seconds(max(a.start-end, 0) * scale)
		think += gap
		info.Think = max(info.Think, think)
		end = max(end, a.end)
		info.Accesses++
		return out.add(int(a.rank), workload.Request{Think: gap, Offset: a.off, Length: a.length, File: a.file, Op: op})
	})
	if err == nil {
		err = out.finish(t)
	}
	if err != nil {
		t.Close()
		return nil, info, err
	}
	return t, info, nil
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

// Trace is a converted DXT trace, a workload.Trace: its requests held in
// memory or, for a trace larger than Options.MemoryAccesses, in an
// unlinked temporary file. Its cursors may be used concurrently (one per
// replay). Close releases the file.
type Trace struct {
	names []string
	procs int
	mem   *workload.Recorded // the requests, when they fit in memory
	file  *os.File           // else: every rank's requests in order, rank after rank, requestBytes each
	spans []span             // and where each process's are in it
}

var _ workload.Trace = (*Trace)(nil)

// span is where a process's requests are in a Trace's file, in requests.
type span struct{ first, n int64 }

// Processes is the number of processes (ranks) replayed.
func (t *Trace) Processes() int { return t.procs }

// Files names the trace's files: workload.TraceFileName(i).
func (t *Trace) Files() []string { return t.names }

// Cursor returns a reader of the requests from the start.
func (t *Trace) Cursor() (workload.Cursor, error) {
	if t.mem != nil {
		return t.mem.Cursor()
	}
	per := int(min(max(readAheadBytes/requestBytes/int64(t.procs), 1), 256))
	return &fileCursor{t: t, ahead: make([]readAhead, t.procs), raw: make([]byte, per*requestBytes), per: per}, nil
}

// Close releases the temporary file, if any.
func (t *Trace) Close() error {
	if t == nil || t.file == nil {
		return nil
	}
	err := t.file.Close()
	t.file = nil
	return err
}

// requestBytes is a request's size in a Trace's file; readAheadBytes the
// most a cursor holds of it, over every process.
const (
	requestBytes   = 32
	readAheadBytes = 8 << 20
)

func putRequest(b []byte, r workload.Request) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(r.Think))
	le.PutUint64(b[8:], uint64(r.Offset))
	le.PutUint64(b[16:], uint64(r.Length))
	le.PutUint32(b[24:], uint32(r.File))
	b[28] = byte(r.Op)
}

func getRequest(b []byte) workload.Request {
	le := binary.LittleEndian
	return workload.Request{Think: time.Duration(le.Uint64(b[0:])), Offset: int64(le.Uint64(b[8:])), Length: int64(le.Uint64(b[16:])),
		File: int32(le.Uint32(b[24:])), Op: rw.Op(b[28])}
}

// sink receives the converted requests, rank after rank, each rank's in order.
type sink interface {
	add(rank int, r workload.Request) error
	finish(t *Trace) error
}

type memSink struct{ procs [][]workload.Request }

func (s *memSink) add(rank int, r workload.Request) error {
	s.procs[rank] = append(s.procs[rank], r)
	return nil
}

func (s *memSink) finish(t *Trace) error {
	t.mem = &workload.Recorded{Names: t.names, Procs: s.procs}
	return nil
}

type fileSink struct {
	f     *os.File
	w     *bufio.Writer
	spans []span
	n     int64
	b     [requestBytes]byte
}

func newFileSink(procs int) (*fileSink, error) {
	f, err := os.CreateTemp("", "adaptio-replay-*.trace")
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	os.Remove(f.Name()) // the open file stays readable; nothing is left behind
	return &fileSink{f: f, w: bufio.NewWriterSize(f, 256<<10), spans: make([]span, procs)}, nil
}

func (s *fileSink) add(rank int, r workload.Request) error {
	sp := &s.spans[rank]
	if sp.n == 0 {
		sp.first = s.n
	}
	sp.n++
	s.n++
	putRequest(s.b[:], r)
	if _, err := s.w.Write(s.b[:]); err != nil {
		return fmt.Errorf("replay: writing the trace: %w", err)
	}
	return nil
}

func (s *fileSink) finish(t *Trace) error {
	t.file, t.spans = s.f, s.spans
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("replay: writing the trace: %w", err)
	}
	return nil
}

// fileCursor reads a Trace's file: each process's requests, per at a time.
type fileCursor struct {
	t     *Trace
	ahead []readAhead
	raw   []byte
	per   int
}

// readAhead is a process's requests read from the file and not yet issued.
type readAhead struct {
	reqs []workload.Request
	head int
	read int64 // requests read from the file
}

func (c *fileCursor) Next(proc int) (workload.Request, bool, error) {
	if proc < 0 || proc >= len(c.ahead) {
		return workload.Request{}, false, fmt.Errorf("%w: no process %d of %d", workload.ErrBadRequest, proc, len(c.ahead))
	}
	a := &c.ahead[proc]
	if a.head == len(a.reqs) {
		sp := c.t.spans[proc]
		n := int(min(sp.n-a.read, int64(c.per)))
		if n == 0 {
			return workload.Request{}, false, nil
		}
		raw := c.raw[:n*requestBytes]
		if _, err := c.t.file.ReadAt(raw, (sp.first+a.read)*requestBytes); err != nil {
			return workload.Request{}, false, fmt.Errorf("replay: reading the trace of rank %d: %w", proc, err)
		}
		if a.reqs == nil {
			a.reqs = make([]workload.Request, 0, c.per)
		}
		a.reqs, a.head = a.reqs[:0], 0
		for i := range n {
			a.reqs = append(a.reqs, getRequest(raw[i*requestBytes:]))
		}
		a.read += int64(n)
	}
	r := a.reqs[a.head]
	a.head++
	return r, true, nil
}
