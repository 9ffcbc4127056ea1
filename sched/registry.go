package sched

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// algo is what every scheduler of this package implements; Switcher relies
// on base and drain.
type algo interface {
	Scheduler
	Tunable
	StatsReporter
	base() *core
	// drain removes every queued request and appends it to dst (in any
	// order; callers sort by seq). Ids stay recorded in core until forget.
	drain(dst []item) []item
}

type algoInfo struct {
	desc string
	make func(Config) algo
}

// registry is the one place where algorithms are registered by name.
func registry() map[string]algoInfo {
	return map[string]algoInfo{
		"noop": {"no scheduling: requests leave one by one in arrival order (AGIOS NOOP)",
			func(c Config) algo { return newTimeOrder("noop", c) }},
		"fifo": {"first in, first out across all servers, one request per batch (IOFSL FIFO)",
			func(c Config) algo { return newTimeOrder("fifo", c) }},
		"to": {"time order: one arrival-ordered queue, one request per batch (AGIOS TO)",
			func(c Config) algo { return newTimeOrder("to", c) }},
		"to-agg": {"time order, the oldest request aggregated with its contiguous same-file same-operation neighbours (AGIOS TO-agg)",
			func(c Config) algo { return newTOAgg(c) }},
		"sjf": {"shortest job first: the stream (server, file, operation) with the fewest queued bytes, aggregated (AGIOS SJF)",
			func(c Config) algo { return newSJF(c) }},
		"aioli": {"quantum-based, offset order per stream, FCFS between streams, synchronous, aggregated (aIOLi in AGIOS)",
			func(c Config) algo { return newAIOLi(c) }},
		"mlf": {"aIOLi's quanta without synchronisation, streams visited round robin, aggregated (AGIOS MLF)",
			func(c Config) algo { return newMLF(c) }},
		"sw": {"static windows: arrival window, then application, then arrival order (AGIOS SW)",
			func(c Config) algo { return newStaticWindows(c) }},
		"hbrr": {"handle-based round robin with a byte quantum per turn, merging up to 16 contiguous requests (IOFSL HBRR)",
			func(c Config) algo { return newHBRR(c) }},
		"wfq": {"weighted fair queueing across servers: deficit round robin with Weights x Quantum bytes per visit (AGIOS WFQ)",
			func(c Config) algo { return newWFQ(c) }},
		"twins": {"one queue per server, one server per time window, round robin from a per-node start (TWINS)",
			func(c Config) algo { return newTWINS(c) }},
	}
}

// Names returns the registered algorithm names, sorted.
func Names() []string {
	reg := registry()
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Describe returns the one-line description of an algorithm.
func Describe(name string) (string, bool) {
	a, ok := registry()[name]
	return a.desc, ok
}

// New returns a new scheduler running the named algorithm. Zero Config fields
// take their defaults; an invalid Config returns ErrBadConfig and an unknown
// name ErrUnknownAlgo (the message lists the valid names). Every scheduler
// returned implements Tunable and StatsReporter.
func New(name string, cfg Config) (Scheduler, error) {
	return newAlgo(name, cfg)
}

func newAlgo(name string, cfg Config) (algo, error) {
	a, ok := registry()[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownAlgo, name, strings.Join(Names(), ", "))
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Weights = slices.Clone(cfg.Weights)
	return a.make(cfg), nil
}

// Switcher is the scheduler the daemon and the simulator hold: it runs one
// algorithm at a time and can switch to another at run time. Switch moves
// every queued request, in arrival (Add) order, into the new algorithm, and
// Complete still accepts batches dispatched by earlier ones. Parameters set
// with SetParams carry over to the next algorithm. Not safe for concurrent
// use, like every Scheduler.
type Switcher struct {
	cur     algo
	retired []algo // earlier algorithms with batches in flight
	epoch   uint16
	totals  map[string]Stats // statistics of algorithms no longer live
	scratch []item
}

var _ Scheduler = (*Switcher)(nil)
var _ Tunable = (*Switcher)(nil)
var _ StatsReporter = (*Switcher)(nil)

// NewSwitcher returns a Switcher running the named algorithm (see New).
func NewSwitcher(name string, cfg Config) (*Switcher, error) {
	a, err := newAlgo(name, cfg)
	if err != nil {
		return nil, err
	}
	sw := &Switcher{cur: a, epoch: 1, totals: map[string]Stats{}}
	a.base().epoch = sw.epoch
	return sw, nil
}

// Name returns the current algorithm's name.
func (s *Switcher) Name() string { return s.cur.Name() }

// Add queues r in the current algorithm.
func (s *Switcher) Add(now time.Duration, r Request) error {
	for _, old := range s.retired {
		if old.base().has(r.ID) {
			return fmt.Errorf("%w: %d is in flight", ErrDuplicateID, r.ID)
		}
	}
	return s.cur.Add(now, r)
}

// Next asks the current algorithm.
func (s *Switcher) Next(now time.Duration) (Batch, bool, time.Duration) { return s.cur.Next(now) }

// Complete routes the completion to the algorithm that dispatched the batch.
func (s *Switcher) Complete(now time.Duration, batchID uint64, bytes int64, took time.Duration) error {
	e := uint16(batchID >> 48)
	if e == s.epoch {
		return s.cur.Complete(now, batchID, bytes, took)
	}
	for i, old := range s.retired {
		if old.base().epoch != e {
			continue
		}
		if err := old.Complete(now, batchID, bytes, took); err != nil {
			return err
		}
		if old.InFlight() == 0 {
			s.retire(old)
			s.retired = slices.Delete(s.retired, i, i+1)
		}
		return nil
	}
	return fmt.Errorf("%w: %#x", ErrUnknownBatch, batchID)
}

func (s *Switcher) retire(a algo) {
	s.totals[a.Name()] = addStats(s.totals[a.Name()], a.Stats())
}

// Len is the number of queued requests (all in the current algorithm).
func (s *Switcher) Len() int { return s.cur.Len() }

// InFlight counts batches of the current and earlier algorithms.
func (s *Switcher) InFlight() int {
	n := s.cur.InFlight()
	for _, old := range s.retired {
		n += old.InFlight()
	}
	return n
}

// SetParams tunes the current algorithm (and those switched to later); see
// Tunable.
func (s *Switcher) SetParams(now time.Duration, p Config) error { return s.cur.SetParams(now, p) }

// SetWindow changes the TWINS window alone from now on (zero: the default),
// keeping every other parameter and every queued request; see SetParams.
func (s *Switcher) SetWindow(now, w time.Duration) error {
	p := s.cur.Params()
	p.Window = w
	return s.cur.SetParams(now, p)
}

// Params returns the current parameters (the Config in force, defaults
// filled in).
func (s *Switcher) Params() Config { return s.cur.Params() }

// Stats returns the current algorithm's statistics since it became current.
func (s *Switcher) Stats() Stats { return s.cur.Stats() }

// AlgoStats are the statistics accumulated under one algorithm name.
type AlgoStats struct {
	Name  string
	Stats Stats
}

// Totals returns statistics per algorithm name over the Switcher's life
// (every period an algorithm was current, with its late completions), sorted
// by name.
func (s *Switcher) Totals() []AlgoStats {
	acc := make(map[string]Stats, len(s.totals)+1+len(s.retired))
	for n, st := range s.totals {
		acc[n] = st
	}
	for _, a := range append([]algo{s.cur}, s.retired...) {
		acc[a.Name()] = addStats(acc[a.Name()], a.Stats())
	}
	out := make([]AlgoStats, 0, len(acc))
	for n, st := range acc {
		out = append(out, AlgoStats{n, st})
	}
	slices.SortFunc(out, func(a, b AlgoStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Switch makes the named algorithm current at time now, with the current
// parameters. Queued requests move to it in arrival order; batches in flight
// complete through Complete as before. Switching to the current algorithm's
// name does nothing.
func (s *Switcher) Switch(now time.Duration, name string) error {
	if name == s.cur.Name() {
		return nil
	}
	cfg := s.cur.base().cfg
	next, err := newAlgo(name, cfg)
	if err != nil {
		return err
	}
	s.epoch++
	if s.epoch == 0 {
		s.epoch = 1
	}
	next.base().epoch = s.epoch
	old := s.cur
	s.scratch = old.drain(s.scratch[:0])
	slices.SortFunc(s.scratch, func(a, b item) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	next.base().moving = true
	for i := range s.scratch {
		r := s.scratch[i].r
		old.base().forget(r.ID)
		if err := next.Add(now, r); err != nil {
			panic("sched: moving a validated request failed: " + err.Error())
		}
	}
	next.base().moving = false
	clear(s.scratch)
	if old.Len() != 0 {
		panic("sched: " + old.Name() + " drained incompletely")
	}
	s.cur = next
	if old.InFlight() > 0 {
		s.retired = append(s.retired, old)
	} else {
		s.retire(old)
	}
	return nil
}

func addStats(a, b Stats) Stats {
	a.Added += b.Added
	a.Dispatched += b.Dispatched
	a.Batches += b.Batches
	a.Completed += b.Completed
	a.BytesCompleted += b.BytesCompleted
	a.Busy += b.Busy
	a.Service += b.Service
	a.WaitTotal += b.WaitTotal
	return a
}
