package sched

import "time"

// staticWindows is AGIOS's SW (static windows; registered as "sw"): time is
// cut into consecutive windows of SWWindow; queued requests are served one
// per batch ordered by the window their arrival falls in, then by
// application (Request.App, AGIOS's queue_id for SW), then by arrival. A
// request is served as soon as it is the first in that order; windows only
// order, they never delay. Changing SWWindow re-sorts the queue.
//
// The heap holds small keys; the requests sit in a slab indexed by them.
type staticWindows struct {
	core
	h    []staticKey // binary min-heap
	slab []item
	free []uint32
}

type staticKey struct {
	win int64
	seq uint64
	app uint32
	idx uint32 // position in slab
}

func (a *staticKey) less(b *staticKey) bool {
	if a.win != b.win {
		return a.win < b.win
	}
	if a.app != b.app {
		return a.app < b.app
	}
	return a.seq < b.seq
}

var _ Scheduler = (*staticWindows)(nil)
var _ Tunable = (*staticWindows)(nil)

func newStaticWindows(cfg Config) *staticWindows {
	t := &staticWindows{}
	t.init("sw", cfg)
	return t
}

func (t *staticWindows) window(r *Request) int64 { return int64(r.Arrival / t.cfg.SWWindow) }

func (t *staticWindows) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	var idx uint32
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
		t.slab[idx] = item{r: r, seq: seq}
	} else {
		idx = uint32(len(t.slab))
		t.slab = append(t.slab, item{r: r, seq: seq})
	}
	t.h = append(t.h, staticKey{win: t.window(&r), seq: seq, app: r.App, idx: idx})
	t.up(len(t.h) - 1)
	return nil
}

func (t *staticWindows) up(i int) {
	h := t.h
	k := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !k.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = k
}

func (t *staticWindows) down(i int) {
	h := t.h
	n := len(h)
	k := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&k) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = k
}

func (t *staticWindows) Next(now time.Duration) (Batch, bool, time.Duration) {
	if len(t.h) == 0 {
		return Batch{}, false, 0
	}
	idx := t.h[0].idx
	r := t.slab[idx].r
	t.slab[idx] = item{}
	t.free = append(t.free, idx)
	last := len(t.h) - 1
	t.h[0] = t.h[last]
	t.h = t.h[:last]
	if last > 0 {
		t.down(0)
	}
	s, buf := t.open()
	return t.emit(now, s, append(buf, r)), true, 0
}

func (t *staticWindows) SetParams(_ time.Duration, p Config) error {
	old := t.cfg.SWWindow
	if err := t.setParams(p); err != nil {
		return err
	}
	if t.cfg.SWWindow != old {
		for i := range t.h {
			t.h[i].win = t.window(&t.slab[t.h[i].idx].r)
		}
		for i := len(t.h)/2 - 1; i >= 0; i-- {
			t.down(i)
		}
	}
	return nil
}

func (t *staticWindows) drain(dst []item) []item {
	for i := range t.h {
		dst = append(dst, t.slab[t.h[i].idx])
	}
	t.h = t.h[:0]
	clear(t.slab)
	t.slab = t.slab[:0]
	t.free = t.free[:0]
	return dst
}
