package sched

import "time"

// sw is AGIOS's SW (static windows): time is cut into consecutive windows of
// SWWindow; queued requests are served one per batch ordered by the window
// their arrival falls in, then by application (Request.App, AGIOS's
// queue_id for SW), then by arrival. A request is served as soon as it is
// the first in that order; windows only order, they never delay. Changing
// SWWindow re-sorts the queue.
type sw struct {
	core
	h []swEntry // binary min-heap
}

type swEntry struct {
	win int64
	it  item
}

func (a *swEntry) less(b *swEntry) bool {
	if a.win != b.win {
		return a.win < b.win
	}
	if a.it.r.App != b.it.r.App {
		return a.it.r.App < b.it.r.App
	}
	return a.it.seq < b.it.seq
}

var _ Scheduler = (*sw)(nil)
var _ Tunable = (*sw)(nil)

func newSW(cfg Config) *sw {
	t := &sw{}
	t.init("sw", cfg)
	return t
}

func (t *sw) window(r *Request) int64 { return int64(r.Arrival / t.cfg.SWWindow) }

func (t *sw) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	t.h = append(t.h, swEntry{win: t.window(&r), it: item{r: r, seq: seq}})
	t.up(len(t.h) - 1)
	return nil
}

func (t *sw) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.h[i].less(&t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *sw) down(i int) {
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.h[r].less(&t.h[l]) {
			m = r
		}
		if !t.h[m].less(&t.h[i]) {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

func (t *sw) Next(now time.Duration) (Batch, bool, time.Duration) {
	if len(t.h) == 0 {
		return Batch{}, false, 0
	}
	r := t.h[0].it.r
	last := len(t.h) - 1
	t.h[0] = t.h[last]
	t.h[last] = swEntry{}
	t.h = t.h[:last]
	t.down(0)
	s, buf := t.open()
	return t.emit(now, s, append(buf, r)), true, 0
}

func (t *sw) SetParams(_ time.Duration, p Params) error {
	old := t.cfg.SWWindow
	if err := t.setParams(p); err != nil {
		return err
	}
	if t.cfg.SWWindow != old {
		for i := range t.h {
			t.h[i].win = t.window(&t.h[i].it.r)
		}
		for i := len(t.h)/2 - 1; i >= 0; i-- {
			t.down(i)
		}
	}
	return nil
}

func (t *sw) drain(dst []item) []item {
	for i := range t.h {
		dst = append(dst, t.h[i].it)
	}
	clear(t.h)
	t.h = t.h[:0]
	return dst
}
