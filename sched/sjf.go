package sched

import "time"

// sjf is AGIOS's SJF: requests are kept per stream (server, file,
// operation) in offset order; the stream with the fewest queued bytes is
// served first, its lowest-offset request aggregated with the contiguous
// ones that follow (up to MaxBatch requests and MaxAggregate bytes). Ties go
// to the older stream. It can starve a large stream while smaller ones keep
// arriving (as the reference does).
type sjf struct {
	core
	ss streamSet
	h  streamHeap
}

var _ Scheduler = (*sjf)(nil)
var _ Tunable = (*sjf)(nil)

func newSJF(cfg Config) *sjf {
	t := &sjf{}
	t.init("sjf", cfg)
	return t
}

func (t *sjf) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	s, _ := t.ss.get(skey{r.Queue, r.File, r.Op})
	s.insert(item{r: r, seq: seq})
	s.k1, s.k2 = s.bytes, s.id
	if s.hidx < 0 {
		t.h.push(s)
	} else {
		t.h.fix(s)
	}
	return nil
}

func (t *sjf) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.h.len() == 0 {
		return Batch{}, false, 0
	}
	s := t.h.s[0]
	lo, hi := s.run(0, runLimits{t.cfg.MaxBatch, t.cfg.MaxAggregate}, nil)
	slot, buf := t.open()
	buf = s.take(lo, hi, buf)
	if len(s.reqs) == 0 {
		t.h.remove(s)
		t.ss.release(s)
	} else {
		s.k1 = s.bytes
		t.h.fix(s)
	}
	return t.emit(now, slot, buf), true, 0
}

func (t *sjf) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *sjf) drain(dst []item) []item {
	t.h.clear()
	return t.ss.drainAll(dst)
}
