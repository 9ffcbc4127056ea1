package sched

import "github.com/adaptio/adaptio/internal/ring"

import "time"

// toAgg is AGIOS's TO-agg: time order, with the oldest queued request
// aggregated with the contiguous requests of its stream (same server, file
// and operation) on both sides, up to MaxBatch requests and MaxAggregate
// bytes. AGIOS merges a request into an existing virtual request when it is
// added; we merge when the oldest request is dispatched, which yields the
// same batches when arrivals precede dispatch and larger ones otherwise.
type toAgg struct {
	core
	ss    streamSet
	order ring.Ring[toRef] // arrival order; entries of dispatched requests are skipped
}

type toRef struct {
	seq uint64
	s   *stream
}

var _ Scheduler = (*toAgg)(nil)
var _ Tunable = (*toAgg)(nil)

func newTOAgg(cfg Config) *toAgg {
	t := &toAgg{}
	t.init("to-agg", cfg)
	return t
}

func (t *toAgg) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	s, _ := t.ss.get(skey{r.Queue, r.File, r.Op})
	s.insert(item{r: r, seq: seq})
	t.order.Push(toRef{seq, s})
	return nil
}

func (t *toAgg) Next(now time.Duration) (Batch, bool, time.Duration) {
	for t.order.Len() > 0 {
		ref := t.order.Pop()
		s, i := ref.s, -1
		for j := range s.reqs {
			if s.reqs[j].seq == ref.seq {
				i = j
				break
			}
		}
		if i < 0 {
			continue // already dispatched in an earlier batch
		}
		lo, hi := s.run(i, runLimits{t.cfg.MaxBatch, t.cfg.MaxAggregate}, nil)
		slot, buf := t.open()
		buf = s.take(lo, hi, buf)
		if len(s.reqs) == 0 {
			t.ss.release(s)
		}
		return t.emit(now, slot, buf), true, 0
	}
	return Batch{}, false, 0
}

func (t *toAgg) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *toAgg) drain(dst []item) []item {
	t.order.Clear()
	return t.ss.drainAll(dst)
}
