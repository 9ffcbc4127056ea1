package client

import "sync"

// gate bounds the reads and writes a client has in flight: a counting
// semaphore whose limit may change at any time, granting waiters in their
// order of arrival. Lowering the limit never touches requests in flight;
// raising it lets waiters go at once.
type gate struct {
	mu       sync.Mutex
	limit    int // 0: none
	inflight int
	waiters  []*waiter // oldest first
	waitB    int64     // bytes of the waiters' requests
}

type waiter struct {
	ch chan struct{}
	n  int64
}

// acquire returns once a request of n bytes may be sent.
func (g *gate) acquire(n int64) {
	g.mu.Lock()
	if len(g.waiters) == 0 && (g.limit == 0 || g.inflight < g.limit) {
		g.inflight++
		g.mu.Unlock()
		return
	}
	w := &waiter{ch: make(chan struct{}), n: n}
	g.waiters = append(g.waiters, w)
	g.waitB += n
	g.mu.Unlock()
	<-w.ch
}

// release ends a request acquire let through.
func (g *gate) release() {
	g.mu.Lock()
	g.inflight--
	g.grant()
	g.mu.Unlock()
}

// setLimit changes the limit (0: none).
func (g *gate) setLimit(n int) {
	g.mu.Lock()
	g.limit = n
	g.grant()
	g.mu.Unlock()
}

// grant lets the oldest waiters go while the limit allows (mu held).
func (g *gate) grant() {
	k := 0
	for k < len(g.waiters) && (g.limit == 0 || g.inflight < g.limit) {
		w := g.waiters[k]
		g.inflight++
		g.waitB -= w.n
		close(w.ch)
		k++
	}
	if k > 0 {
		n := copy(g.waiters, g.waiters[k:])
		clear(g.waiters[n:])
		g.waiters = g.waiters[:n]
	}
}

// state returns the limit, the requests in flight, and the requests
// waiting and their bytes.
func (g *gate) state() (limit, inflight, waiting int, waitBytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit, g.inflight, len(g.waiters), g.waitB
}
