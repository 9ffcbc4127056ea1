package sched

import "github.com/adaptio/adaptio/internal/ring"

import "time"

// timeOrder serves requests one at a time in arrival order across all
// queues. It is "noop", "fifo" and "to": AGIOS's NOOP hands requests back as
// they come, IOFSL's FIFO and AGIOS's TO (time order) keep one arrival-ordered
// queue. In a pull-based scheduler the three coincide; they are kept as
// separate names so configurations of either reference carry over.
type timeOrder struct {
	core
	q ring.Ring[item]
}

var _ Scheduler = (*timeOrder)(nil)
var _ Tunable = (*timeOrder)(nil)

func newTimeOrder(name string, cfg Config) *timeOrder {
	t := &timeOrder{}
	t.init(name, cfg)
	return t
}

func (t *timeOrder) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	t.q.Push(item{r: r, seq: seq})
	return nil
}

func (t *timeOrder) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.q.Len() == 0 {
		return Batch{}, false, 0
	}
	it := t.q.Pop()
	s, buf := t.open()
	return t.emit(now, s, append(buf, it.r)), true, 0
}

func (t *timeOrder) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *timeOrder) drain(dst []item) []item {
	for t.q.Len() > 0 {
		dst = append(dst, t.q.Pop())
	}
	return dst
}
