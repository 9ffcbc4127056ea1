package sched

import "github.com/adaptio/adaptio/internal/ring"

import "time"

// hbrr is IOFSL's handle-based round robin: requests are queued per handle
// (here per stream: server, file, operation, since a batch goes to one
// server) in offset order and merged when contiguous; handles are served
// round robin, each turn dispatching batches of up to MaxBatch requests
// (IOFSL's 16) and MaxAggregate bytes until Quantum bytes were sent. A turn
// always dispatches at least one batch, so requests larger than the quantum
// go too, and no deficit is carried to the next turn (ours).
type hbrr struct {
	core
	ss     streamSet
	rr     ring.Ring[*stream]
	cur    *stream // stream whose turn it is (not in rr), nil between turns
	budget int64   // bytes left in cur's turn
}

var _ Scheduler = (*hbrr)(nil)
var _ Tunable = (*hbrr)(nil)

func newHBRR(cfg Config) *hbrr {
	t := &hbrr{}
	t.init("hbrr", cfg)
	return t
}

func (t *hbrr) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	s, _ := t.ss.get(skey{r.Queue, r.File, r.Op})
	s.insert(item{r: r, seq: seq})
	if !s.inRing && s != t.cur {
		s.inRing = true
		t.rr.Push(s)
	}
	return nil
}

func (t *hbrr) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.cur != nil && (len(t.cur.reqs) == 0 || t.cur.head().r.Length > t.budget) {
		t.endTurn()
	}
	maxBytes := min(t.cfg.MaxAggregate, t.budget)
	if t.cur == nil {
		if t.rr.Len() == 0 {
			return Batch{}, false, 0
		}
		t.cur = t.rr.Pop()
		t.cur.inRing = false
		t.budget = t.cfg.Quantum
		maxBytes = min(t.cfg.MaxAggregate, t.budget) // the run always takes the head
	}
	s := t.cur
	lo, hi := s.run(0, runLimits{t.cfg.MaxBatch, maxBytes}, nil)
	slot, buf := t.open()
	buf = s.take(lo, hi, buf)
	b := t.emit(now, slot, buf)
	t.budget -= b.Length
	if len(s.reqs) == 0 {
		t.endTurn()
	}
	return b, true, 0
}

// endTurn puts the current stream back at the end of the round (or
// recycles it when empty).
func (t *hbrr) endTurn() {
	s := t.cur
	t.cur = nil
	if len(s.reqs) == 0 {
		t.ss.release(s)
		return
	}
	s.inRing = true
	t.rr.Push(s)
}

func (t *hbrr) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *hbrr) drain(dst []item) []item {
	t.rr.Clear()
	t.cur = nil
	return t.ss.drainAll(dst)
}
