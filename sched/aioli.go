package sched

import "time"

// aioli is aIOLi as adapted in AGIOS. Streams (server, file, operation) hold
// requests in offset order; a stream's lowest-offset request may go when its
// quantum covers its size (see quantumAt). Among streams whose head may go,
// the one whose head arrived first is selected (FCFS between files), and it
// keeps being served, in offset order with contiguous requests aggregated,
// for a time quantum; the next quantum it gets depends on how much of this
// one it used (x2 above 175 %, x1.5 above 125 %, kept above 75 %, halved
// below; bounded to [Timeslice/16, 16 Timeslice]; a stream's first turn
// serves one batch and earns Timeslice). aIOLi is synchronous: while a batch
// is in flight Next returns nothing (retryAt 0: ask again after Complete).
// AGIOS's waits for suspected shifts and better aggregations are not kept.
type aioli struct {
	core
	ss        streamSet
	h         streamHeap // streams with requests, by head arrival
	cur       *stream    // stream in its turn (may be empty), not in h
	turnStart time.Duration
	scratch   []*stream
}

var _ Scheduler = (*aioli)(nil)
var _ Tunable = (*aioli)(nil)

func newAIOLi(cfg Config) *aioli {
	t := &aioli{}
	t.init("aioli", cfg)
	return t
}

func (t *aioli) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	s, _ := t.ss.get(skey{r.Queue, r.File, r.Op})
	i := s.insert(item{r: r, seq: seq})
	switch {
	case s == t.cur:
	case s.hidx < 0:
		setHeadKey(s)
		t.h.push(s)
	case i == 0:
		setHeadKey(s)
		t.h.fix(s)
	}
	return nil
}

// setHeadKey keys s in the heap by its head's arrival.
func setHeadKey(s *stream) {
	h := s.head()
	s.k1, s.k2 = int64(h.r.Arrival), h.seq
}

func (t *aioli) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.inflight > 0 || t.n == 0 {
		return Batch{}, false, 0
	}
	if s := t.cur; s != nil {
		used := now - t.turnStart
		if len(s.reqs) > 0 && s.quantum > 0 && used < s.quantum {
			return t.dispatch(now, s, nil), true, 0
		}
		t.endTurn(used)
	}
	q, ts := t.cfg.Quantum, t.cfg.Timeslice
	var retry time.Duration
	var sel *stream
	for t.h.len() > 0 {
		s := t.h.s[0]
		t.h.remove(s)
		if at := eligibleAt(s.head(), q, ts); at > now {
			if retry == 0 || at < retry {
				retry = at
			}
			t.scratch = append(t.scratch, s)
			continue
		}
		sel = s
		break
	}
	for _, s := range t.scratch {
		t.h.push(s)
	}
	clear(t.scratch)
	t.scratch = t.scratch[:0]
	if sel == nil {
		return Batch{}, false, retry
	}
	t.cur, t.turnStart = sel, now
	return t.dispatch(now, sel, func(reqs []item) bool { return quantaCover(reqs, now, q, ts) }), true, 0
}

func (t *aioli) dispatch(now time.Duration, s *stream, fits func([]item) bool) Batch {
	lo, hi := s.run(0, runLimits{t.cfg.MaxBatch, t.cfg.MaxAggregate}, fits)
	slot, buf := t.open()
	buf = s.take(lo, hi, buf)
	return t.emit(now, slot, buf)
}

// endTurn adapts the current stream's next quantum and puts it back.
func (t *aioli) endTurn(used time.Duration) {
	s := t.cur
	t.cur = nil
	ts := t.cfg.Timeslice
	q := s.quantum
	switch {
	case q == 0:
		q = ts
	case used*100 >= q*175:
		q *= 2
	case used*100 >= q*125:
		q = q * 3 / 2
	case used*100 >= q*75:
	default:
		q /= 2
	}
	s.quantum = min(max(q, ts/16, 1), 16*ts)
	if len(s.reqs) == 0 {
		t.ss.release(s)
		return
	}
	setHeadKey(s)
	t.h.push(s)
}

func (t *aioli) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *aioli) drain(dst []item) []item {
	t.h.clear()
	t.cur = nil
	return t.ss.drainAll(dst)
}
