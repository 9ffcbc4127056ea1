package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/adaptio/adaptio/workload"
)

// traceState is the replay of the current phase when it is a trace
// (Config.Traces): processes read their requests from cur one at a time,
// so a trace streamed from storage is never held whole.
type traceState struct {
	cur     workload.Cursor   // nil: the phase is a pattern
	names   []string          // the trace's files
	handles []uint64          // the scheduler's file id of each of them
	ids     map[string]uint64 // file ids by name over the run: a file keeps its id (and cached pages) from trace to trace
}

// fail stops the run with err (the first error only).
func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// startTrace places the processes of trace k, reads each one's first
// request and lets it start after its jitter and think time. Processes are
// placed on client and I/O nodes as a pattern's are.
func (s *Sim) startTrace(k int) {
	t := s.cfg.Traces[k]
	s.phase = k
	s.phaseStart = s.now
	s.tr.names = t.Files()
	s.firsts = s.firsts[:0]
	s.tr.handles = s.tr.handles[:0]
	if s.tr.ids == nil {
		s.tr.ids = map[string]uint64{}
	}
	for _, name := range s.tr.names {
		s.firsts = append(s.firsts, s.layout.FirstServer(name, s.cfg.Servers))
		id, ok := s.tr.ids[name]
		if !ok {
			id = uint64(len(s.tr.ids)) + 1
			s.tr.ids[name] = id
		}
		s.tr.handles = append(s.tr.handles, id)
	}
	cur, err := t.Cursor()
	if err != nil {
		s.fail(fmt.Errorf("sim: trace %d: %w", k, err))
		return
	}
	s.tr.cur = cur
	procs := t.Processes()
	if cap(s.procs) < procs {
		s.procs = make([]process, procs)
	}
	s.procs = s.procs[:procs]
	clients := min(s.cfg.ClientNodes, procs)
	for i := range s.procs {
		c := i * clients / procs
		s.procs[i] = process{client: int32(c), ion: int32(c * s.cfg.IONodes / clients)}
	}
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0xc11e47+uint64(k)))
	s.remaining = procs + 1 // one more, so that processes with nothing to issue cannot end the phase before the loop does
	for i := range s.procs {
		var j int64
		if s.cfg.StartJitter > 0 {
			j = rng.Int64N(int64(s.cfg.StartJitter))
		}
		think, ok := s.traceRead(i)
		if s.err != nil {
			return
		}
		if !ok {
			s.remaining--
			continue
		}
		s.q.push(s.now+j+think, evClientDone, int32(-1-i)) // negative id: issue without a completion
	}
	s.processDone() // the extra one: ends the phase at once if no process has a request
}

// traceRead reads process i's next request of the current trace into the
// process and returns its think time; ok is false when the process has no
// more. An unreadable or invalid request fails the run.
func (s *Sim) traceRead(i int) (think int64, ok bool) {
	pr := &s.procs[i]
	r, ok, err := s.tr.cur.Next(i)
	if err == nil && ok {
		err = r.Validate(len(s.tr.names))
		switch {
		case err != nil:
		case r.Think > s.cfg.MaxTime:
			err = fmt.Errorf("%w: think time %v beyond MaxTime %v", workload.ErrBadRequest, r.Think, s.cfg.MaxTime)
		case r.Length/s.cfg.StripeBytes >= 1<<pieceBits-1:
			err = fmt.Errorf("%w: %d bytes, more than %d stripes", workload.ErrBadRequest, r.Length, 1<<pieceBits-2)
		}
	}
	if err != nil {
		s.fail(fmt.Errorf("sim: trace %d, process %d, request %d: %w", s.phase, i, pr.next, err))
		return 0, false
	}
	if !ok {
		return 0, false
	}
	pr.file, pr.off, pr.length, pr.op = int(r.File), r.Offset, r.Length, r.Op
	return int64(r.Think), true
}

// traceNext moves process i, whose request just completed, to its next
// request: issued now, or after its think time; or the process is done.
func (s *Sim) traceNext(i int) {
	think, ok := s.traceRead(i)
	switch {
	case s.err != nil:
	case !ok:
		s.processDone()
	case think > 0:
		s.q.push(s.now+think, evClientDone, int32(-1-i))
	default:
		s.issue(i)
	}
}
