package client

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds (the gate's waiters block on channels:
// they are seen only once they have queued).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The gate lets requests go in their order of arrival (one out, the next
// in), never more than the
// limit at once; lowering the limit leaves requests in flight alone and
// raising it releases waiters at once.
func TestGateOrderAndLimitChanges(t *testing.T) {
	var g gate
	g.setLimit(2)
	g.acquire(1)
	g.acquire(1)
	order := make(chan int, 4)
	for i := range 4 {
		go func() {
			g.acquire(int64(10 + i))
			order <- i
		}()
		waitFor(t, "a waiter to queue", func() bool { _, _, w, _ := g.state(); return w == i+1 })
	}
	if _, in, w, b := g.state(); in != 2 || w != 4 || b != 10+11+12+13 {
		t.Fatalf("state: %d in flight, %d waiting (%d bytes), want 2, 4 (46)", in, w, b)
	}
	g.setLimit(1) // two in flight stay in flight
	g.release()
	select {
	case i := <-order:
		t.Fatalf("waiter %d let through with 1 in flight under a limit of 1", i)
	case <-time.After(10 * time.Millisecond):
	}
	g.release()
	if i := <-order; i != 0 {
		t.Fatalf("first let through: waiter %d, want 0", i)
	}
	for want := 1; want < 3; want++ { // one out, the next in
		g.release()
		if i := <-order; i != want {
			t.Fatalf("let through: waiter %d, want %d", i, want)
		}
	}
	g.setLimit(0) // no limit: the last waiter goes
	if i := <-order; i != 3 {
		t.Fatalf("let through: waiter %d, want 3", i)
	}
	if l, in, w, b := g.state(); l != 0 || in != 2 || w != 0 || b != 0 {
		t.Fatalf("state: limit %d, %d in flight, %d waiting (%d bytes), want 0, 2, 0 (0)", l, in, w, b)
	}
}
