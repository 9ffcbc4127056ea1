package sched

import "github.com/adaptio/adaptio/internal/ring"

import "time"

// twins is TWINS (Bez et al.): one arrival-ordered queue per data server;
// during a time window only the current server's queue is served; when the
// window ends the next server (round robin) becomes current.
//
// Translation rule: I/O node k starts at server k mod Servers and then visits
// k+1, k+2, ... (mod Servers), so at any instant nodes started together serve
// different servers.
//
// Window timing follows AGIOS: the first window starts at the first Next that
// finds a request queued; a window [start, start+Window) ends at the first
// Next at or after start+Window, which advances exactly one server and starts
// the new window at that instant. Windows do not advance while nothing is
// queued (Next then returns retryAt = 0).
//
// Empty current queue: by default (the reference behaviour) TWINS waits for
// the window's end even if other queues hold requests, and Next returns
// retryAt = the window's end. With SkipEmpty (ours) it moves at once to the
// next server in round-robin order that has requests and starts a new window
// there.
//
// Idle node: by default a request arriving while nothing is queued waits,
// like any other, for its server's window (the next Next advances one
// server if the window has ended). With IdleStart (ours) a request that
// finds the I/O node idle, nothing queued and nothing in flight, moves the
// window to its own server, starting now: a lone synchronous request (one
// process at queue depth 1) is served at once, as FIFO would, instead of
// waiting up to Servers-1 windows for a server nobody else is using. As
// soon as two requests overlap the round robin is the reference's.
//
// Aligned windows (ours): window k is the clock's slot [k*Window,
// (k+1)*Window) and node n serves server (k + n) mod Servers in it, whenever
// Next is called and whether or not anything was queued before; nodes whose
// clocks agree (the simulator's virtual time; daemons taking the wall clock
// modulo an hour) then never serve one server together, where the
// reference's windows, each starting at the first Next after the last
// ended, drift apart node by node. IdleStart does not apply; SkipEmpty
// serves the next non-empty queue within the slot.
//
// Changing Window mid-window (Switcher.SetWindow, SetParams): the current window keeps its start
// and its end is recomputed as start + new Window; if that is already past,
// the window ends at the next Next.
type twins struct {
	core
	queues  []ring.Ring[item]
	started bool
	cur     int
	start   time.Duration
	end     time.Duration
}

var _ Scheduler = (*twins)(nil)
var _ Tunable = (*twins)(nil)

func newTWINS(cfg Config) *twins {
	t := &twins{queues: make([]ring.Ring[item], cfg.Servers)}
	t.init("twins", cfg)
	return t
}

func (t *twins) Add(now time.Duration, r Request) error {
	idle := t.n == 0 && t.inflight == 0 && !t.moving
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	t.queues[r.Queue].Push(item{r: r, seq: seq})
	if idle && t.cfg.IdleStart && !t.cfg.Aligned {
		t.started, t.cur = true, r.Queue
		t.start, t.end = now, now+t.cfg.Window
	}
	return nil
}

// firstServer is the translation rule.
func (t *twins) firstServer() int { return t.cfg.Node % t.cfg.Servers }

func (t *twins) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.n == 0 {
		return Batch{}, false, 0
	}
	switch {
	case t.cfg.Aligned:
		w := t.cfg.Window
		k := max(now, 0) / w
		t.started = true
		t.cur = int((int64(k) + int64(t.firstServer())) % int64(t.cfg.Servers))
		t.start, t.end = k*w, (k+1)*w
	case !t.started:
		t.started = true
		t.cur = t.firstServer()
		t.start, t.end = now, now+t.cfg.Window
	case now >= t.end:
		t.cur++
		if t.cur == t.cfg.Servers {
			t.cur = 0
		}
		t.start, t.end = now, now+t.cfg.Window
	}
	q := &t.queues[t.cur]
	if q.Len() == 0 {
		if !t.cfg.SkipEmpty {
			return Batch{}, false, t.end
		}
		for q.Len() == 0 { // t.n > 0, so some queue is not empty
			t.cur++
			if t.cur == t.cfg.Servers {
				t.cur = 0
			}
			q = &t.queues[t.cur]
		}
		if !t.cfg.Aligned {
			t.start, t.end = now, now+t.cfg.Window
		}
	}
	it := q.Pop()
	s, buf := t.open()
	return t.emit(now, s, append(buf, it.r)), true, 0
}

func (t *twins) SetParams(_ time.Duration, p Config) error {
	if err := t.setParams(p); err != nil {
		return err
	}
	if t.started && !t.cfg.Aligned { // aligned slots follow the new window at the next Next
		t.end = t.start + t.cfg.Window
	}
	return nil
}

// window returns the current server and window (ok=false before the first).
func (t *twins) window() (server int, start, end time.Duration, ok bool) {
	return t.cur, t.start, t.end, t.started
}

func (t *twins) drain(dst []item) []item {
	for i := range t.queues {
		for t.queues[i].Len() > 0 {
			dst = append(dst, t.queues[i].Pop())
		}
	}
	return dst
}
