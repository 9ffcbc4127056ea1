package sched

import (
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// Tunable is a scheduler whose parameters can change at run time. SetParams
// replaces every field of the Config but Servers, Node and Nodes, which stay
// as constructed (pass them zero or unchanged; Params returns them). It keeps
// every queued and in-flight request; zero numeric fields take the Config
// defaults and invalid values return ErrBadConfig (and change nothing).
type Tunable interface {
	SetParams(now time.Duration, p Config) error
	Params() Config
}

// Stats are a scheduler's cumulative statistics since it was created.
type Stats struct {
	Added          uint64        // requests accepted by Add (including those a Switch moved in)
	Dispatched     uint64        // requests handed out in batches
	Batches        uint64        // batches handed out
	Completed      uint64        // batches completed
	BytesCompleted int64         // bytes reported by Complete
	Busy           time.Duration // time with at least one batch in flight (up to the last Complete)
	Service        time.Duration // sum of the durations reported by Complete
	WaitTotal      time.Duration // sum over dispatched requests of dispatch time - arrival
}

// MeanBatchSize is the mean number of requests per batch (0 before the first).
func (s Stats) MeanBatchSize() float64 {
	if s.Batches == 0 {
		return 0
	}
	return float64(s.Dispatched) / float64(s.Batches)
}

// MeanWait is the mean time from arrival to dispatch (0 before the first).
func (s Stats) MeanWait() time.Duration {
	if s.Dispatched == 0 {
		return 0
	}
	return s.WaitTotal / time.Duration(s.Dispatched)
}

// StatsReporter is implemented by every scheduler of this package.
type StatsReporter interface{ Stats() Stats }

// StatsOf returns s's statistics if it reports them.
func StatsOf(s Scheduler) (Stats, bool) {
	if r, ok := s.(StatsReporter); ok {
		return r.Stats(), true
	}
	return Stats{}, false
}

// item is a queued request with its admission sequence number (the total
// order of Add calls, used for arrival order and for draining on Switch).
type item struct {
	r   Request
	seq uint64
}

// flight is a batch slot: its request buffer is reused once the batch completes.
type flight struct {
	gen  uint16
	live bool
	reqs []Request
}

// core is the bookkeeping common to every algorithm: validation, duplicate
// ids, in-flight batches, statistics. Batch ids encode epoch<<48 | gen<<32 |
// slot+1 so Complete is a slice index, and a Switcher can route completions
// to the scheduler (epoch) that dispatched them.
type core struct {
	name     string
	cfg      Config
	ids      idSet // queued and in-flight request ids
	slots    []flight
	free     []uint32
	n        int // queued requests
	inflight int
	busyFrom time.Duration
	seq      uint64
	epoch    uint16
	moving   bool // a Switch is moving requests in: keep Arrival as it is
	stats    Stats
}

func (c *core) init(name string, cfg Config) {
	c.name = name
	c.cfg = cfg
}

func (c *core) Name() string  { return c.name }
func (c *core) Len() int      { return c.n }
func (c *core) InFlight() int { return c.inflight }
func (c *core) Stats() Stats  { return c.stats }
func (c *core) Params() Config {
	p := c.cfg
	p.Weights = slices.Clone(p.Weights)
	return p
}
func (c *core) base() *core { return c }

// setParams validates p and stores it; algorithms call it first.
func (c *core) setParams(p Config) error {
	switch {
	case p.Servers != 0 && p.Servers != c.cfg.Servers:
		return fmt.Errorf("%w: Servers = %d, fixed at %d", ErrBadConfig, p.Servers, c.cfg.Servers)
	case p.Node != 0 && p.Node != c.cfg.Node:
		return fmt.Errorf("%w: Node = %d, fixed at %d", ErrBadConfig, p.Node, c.cfg.Node)
	case p.Nodes != 0 && p.Nodes != c.cfg.Nodes:
		return fmt.Errorf("%w: Nodes = %d, fixed at %d", ErrBadConfig, p.Nodes, c.cfg.Nodes)
	}
	cfg := p
	cfg.Servers, cfg.Node, cfg.Nodes = c.cfg.Servers, c.cfg.Node, c.cfg.Nodes
	// Zero fields take the defaults; Nodes is fixed already.
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Weights = slices.Clone(cfg.Weights)
	c.cfg = cfg
	return nil
}

// admit validates r, stamps its arrival (kept when non-zero) and records its id.
func (c *core) admit(now time.Duration, r *Request) (uint64, error) {
	switch {
	case r.Length <= 0:
		return 0, fmt.Errorf("%w: request %d has length %d", ErrBadLength, r.ID, r.Length)
	case r.Offset < 0:
		return 0, fmt.Errorf("%w: request %d has offset %d", ErrBadOffset, r.ID, r.Offset)
	case r.Queue < 0 || r.Queue >= c.cfg.Servers:
		return 0, fmt.Errorf("%w: request %d has queue %d, servers are [0, %d)", ErrBadQueue, r.ID, r.Queue, c.cfg.Servers)
	case !r.Op.Valid():
		return 0, fmt.Errorf("%w: request %d has %v", rw.ErrBadOp, r.ID, r.Op)
	case r.Offset > maxOffset-r.Length:
		return 0, fmt.Errorf("%w: request %d ends beyond %d", ErrBadOffset, r.ID, int64(maxOffset))
	}
	if !c.ids.add(r.ID) {
		return 0, fmt.Errorf("%w: %d is queued or in flight", ErrDuplicateID, r.ID)
	}
	if r.Arrival == 0 && !c.moving {
		r.Arrival = now
	}
	c.n++
	c.stats.Added++
	c.seq++
	return c.seq, nil
}

const maxOffset = 1<<62 - 1

// has reports whether id is queued or in flight here.
func (c *core) has(id uint64) bool { return c.ids.has(id) }

// open returns a free batch slot and its empty request buffer.
func (c *core) open() (uint32, []Request) {
	var s uint32
	if k := len(c.free); k > 0 {
		s = c.free[k-1]
		c.free = c.free[:k-1]
	} else {
		s = uint32(len(c.slots))
		c.slots = append(c.slots, flight{reqs: make([]Request, 0, c.cfg.MaxBatch)})
	}
	return s, c.slots[s].reqs[:0]
}

// emit records the batch made of reqs (in slot s) as in flight and returns it.
// reqs are one queue, file and operation; Offset/Length span them.
func (c *core) emit(now time.Duration, s uint32, reqs []Request) Batch {
	f := &c.slots[s]
	f.reqs = reqs
	f.live = true
	f.gen++
	lo, hi := reqs[0].Offset, reqs[0].End()
	for i := range reqs {
		r := &reqs[i]
		lo = min(lo, r.Offset)
		hi = max(hi, r.End())
		if w := now - r.Arrival; w > 0 {
			c.stats.WaitTotal += w
		}
	}
	c.n -= len(reqs)
	c.stats.Dispatched += uint64(len(reqs))
	c.stats.Batches++
	if c.inflight == 0 {
		c.busyFrom = now
	}
	c.inflight++
	r0 := &reqs[0]
	return Batch{
		ID:    uint64(c.epoch)<<48 | uint64(f.gen)<<32 | uint64(s+1),
		Queue: r0.Queue, File: r0.File, Op: r0.Op,
		Offset: lo, Length: hi - lo, Requests: reqs,
	}
}

// Complete implements Scheduler.
func (c *core) Complete(now time.Duration, batchID uint64, bytes int64, took time.Duration) error {
	s := uint32(batchID&0xffffffff) - 1
	if uint16(batchID>>48) != c.epoch || uint64(s) >= uint64(len(c.slots)) {
		return fmt.Errorf("%w: %#x", ErrUnknownBatch, batchID)
	}
	f := &c.slots[s]
	if !f.live || f.gen != uint16(batchID>>32) {
		return fmt.Errorf("%w: %#x", ErrUnknownBatch, batchID)
	}
	for i := range f.reqs {
		c.ids.remove(f.reqs[i].ID)
	}
	clear(f.reqs) // drop references the caller may still hold through copies
	f.reqs = f.reqs[:0]
	f.live = false
	c.free = append(c.free, s)
	c.inflight--
	c.stats.Completed++
	c.stats.BytesCompleted += bytes
	c.stats.Service += took
	if c.inflight == 0 && now > c.busyFrom {
		c.stats.Busy += now - c.busyFrom
	}
	return nil
}

// forget removes a drained request's id (Switch moves it elsewhere).
func (c *core) forget(id uint64) {
	c.ids.remove(id)
	c.n--
}
