package sched

import "github.com/adaptio/adaptio/internal/ring"

import "time"

// mlf is AGIOS's MLF: aIOLi's quanta without its synchronisation. Streams
// (server, file, operation) hold requests in offset order and are visited
// round robin, one batch per visit: the stream's lowest-offset request goes
// when its quantum covers its size (see quantumAt), aggregated with the
// contiguous requests that follow while their quanta cover them (up to
// MaxBatch requests and MaxAggregate bytes). AGIOS prefers a file's reads to
// its writes within a visit; here reads and writes are separate streams in
// the same round.
type mlf struct {
	core
	ss streamSet
	rr ring.Ring[*stream]
}

var _ Scheduler = (*mlf)(nil)
var _ Tunable = (*mlf)(nil)

func newMLF(cfg Config) *mlf {
	t := &mlf{}
	t.init("mlf", cfg)
	return t
}

func (t *mlf) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	s, _ := t.ss.get(skey{r.Queue, r.File, r.Op})
	s.insert(item{r: r, seq: seq})
	if !s.inRing {
		s.inRing = true
		t.rr.Push(s)
	}
	return nil
}

func (t *mlf) Next(now time.Duration) (Batch, bool, time.Duration) {
	q, ts := t.cfg.Quantum, t.cfg.Timeslice
	var retry time.Duration
	for k := t.rr.Len(); k > 0; k-- {
		s := t.rr.Pop()
		h := s.head()
		if at := eligibleAt(h, q, ts); at > now {
			if retry == 0 || at < retry {
				retry = at
			}
			t.rr.Push(s)
			continue
		}
		lo, hi := s.run(0, runLimits{t.cfg.MaxBatch, t.cfg.MaxAggregate}, func(reqs []item) bool {
			return quantaCover(reqs, now, q, ts)
		})
		slot, buf := t.open()
		buf = s.take(lo, hi, buf)
		if len(s.reqs) == 0 {
			s.inRing = false
			t.ss.release(s)
		} else {
			t.rr.Push(s)
		}
		return t.emit(now, slot, buf), true, 0
	}
	return Batch{}, false, retry
}

func (t *mlf) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *mlf) drain(dst []item) []item {
	t.rr.Clear()
	return t.ss.drainAll(dst)
}
