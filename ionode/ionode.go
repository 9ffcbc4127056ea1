// Package ionode is the I/O node's dispatch core, the one code that both the
// forwarding daemon (package fwd) runs on real requests and the simulator
// (package sim) runs in virtual time.
//
// The pieces of client requests (one per data-server range, see
// backend.Layout) enter a scheduler (a sched.Switcher). A dispatcher thread
// that is free asks the Node for an access: the batch the scheduler releases,
// joined with the batches released right after it that continue it on the
// same data server (seed 000 V-A: IOFSL aggregates up to 16 requests in
// dispatch). A released batch that does not continue the access in hand is
// held and goes first to the next free thread, so the scheduler's order
// stands. Optionally (Config.Hold), batches of a file that has an access in
// flight are held back while other files' batches go, for backends whose
// file system serialises writers of one file.
//
// A Node is a pure state machine: the caller passes the time to every call;
// it never blocks, starts goroutines or reads a clock. It is not safe for
// concurrent use: the daemon calls it under its dispatcher's lock.
package ionode

import (
	"time"

	"github.com/adaptio/adaptio/sched"
)

// Config configures a Node's dispatch.
type Config struct {
	// Aggregate is the most requests one access carries (0 or 1: an access
	// is one batch). The daemon and the simulator use sched's IOFSL limit
	// of 16 on backends of per-server objects.
	Aggregate int
	// Hold is the most batches held back because their file has an access
	// in flight (0: none are; a batch waits only when it did not continue
	// the access before it). The daemon holds up to its worker count on
	// local file systems, where the writers of one file contend for its
	// lock.
	Hold int
	// Continues, if set, replaces the rule that joins a released batch b to
	// the access a in hand (its batches so far are a.Batches; the default
	// rule is sched.Access.Continues: the same data server,
	// file and operation, contiguous in the scheduler's offsets just before
	// or after a, within Aggregate requests). It is only asked while a
	// holds fewer than Aggregate requests.
	Continues func(a Access, b sched.Batch) bool
	// PerServer is the most accesses in flight to one data server (0: no
	// limit). A stalled data server then holds at most PerServer of the
	// caller's dispatcher threads, and the others keep serving the other
	// servers' queues; its batches wait, held, until one of its accesses
	// ends. PerServerLimit gives the daemon's and the simulator's value.
	PerServer int
}

// PerServerLimit is the per-server limit of an I/O node with threads
// dispatcher threads in front of servers data servers: every server but
// one may use all threads except threads/servers (at least one), which
// stay for the others. With one server there is no limit.
func PerServerLimit(threads, servers int) int {
	if servers <= 1 || threads <= 1 {
		return 0
	}
	return threads - max(1, threads/servers)
}

// Access is what one dispatcher thread executes: the scheduler's batches
// it joins, in release order, spanning Access.
type Access struct {
	sched.Access
	Batches []sched.Batch
}

// Node is one I/O node's dispatch state.
type Node struct {
	sw   *sched.Switcher
	cfg  Config
	held []sched.Batch  // released by the scheduler, not yet dispatched, oldest first
	busy map[uint64]int // Hold: file -> accesses in flight
	srv  []int          // PerServer: data server -> accesses in flight
	hsrv []int          // PerServer: data server -> batches held
}

// New returns a Node dispatching from sw.
func New(sw *sched.Switcher, cfg Config) *Node {
	cfg.Aggregate = max(cfg.Aggregate, 1)
	cfg.Hold = max(cfg.Hold, 0)
	cfg.PerServer = max(cfg.PerServer, 0)
	n := &Node{sw: sw, cfg: cfg}
	if cfg.Hold > 0 {
		n.busy = map[uint64]int{}
	}
	return n
}

// Scheduler is the Node's scheduler, for its parameters, statistics and
// switches of algorithm.
func (n *Node) Scheduler() *sched.Switcher { return n.sw }

// Add queues one piece of a client request at time now (see sched.Scheduler.Add).
func (n *Node) Add(now time.Duration, r sched.Request) error { return n.sw.Add(now, r) }

// Held is the number of batches released by the scheduler that wait for a
// dispatcher thread.
func (n *Node) Held() int { return len(n.held) }

// Pending reports whether anything waits to be dispatched: queued in the
// scheduler or held.
func (n *Node) Pending() bool { return len(n.held) > 0 || n.sw.Len() > 0 }

// Next returns the access a free dispatcher thread executes now, its
// batches appended to dst. If none is dispatchable it returns ok=false.
// retry, when positive, is the earliest time worth asking again (the
// scheduler's retryAt, see sched.Scheduler.Next); the caller arms a timer
// for it whether or not an access was returned.
func (n *Node) Next(now time.Duration, dst []sched.Batch) (a Access, ok bool, retry time.Duration) {
	b, ok, retry := n.pick(now)
	if !ok {
		return Access{}, false, retry
	}
	a.Access = sched.AccessOf(b, len(b.Requests))
	a.Batches = append(dst, b)
	for a.Requests < n.cfg.Aggregate {
		h, found := n.takeIf(a)
		if !found {
			if n.heldOpen() >= max(n.cfg.Hold, 1) {
				break
			}
			var more bool
			var r time.Duration
			if h, more, r = n.sw.Next(now); !more {
				retry = earliest(retry, r)
				break
			}
			if !n.continues(a, h) {
				n.hold(h) // the next thread's
				break
			}
		}
		a.Offset = min(a.Offset, h.Offset)
		a.Length += h.Length
		a.Requests += len(h.Requests)
		a.Batches = append(a.Batches, h)
	}
	if n.busy != nil {
		n.busy[a.File]++
	}
	if n.cfg.PerServer > 0 {
		n.srv = grow(n.srv, a.Queue)
		n.srv[a.Queue]++
	}
	return a, true, retry
}

// full reports whether data server q has PerServer accesses in flight.
func (n *Node) full(q int) bool {
	return n.cfg.PerServer > 0 && q < len(n.srv) && n.srv[q] >= n.cfg.PerServer
}

// Done records that access a (returned by Next) finished at time now,
// having moved moved bytes from its start in took: each of its batches is
// completed to the scheduler with the bytes that fall in it. The batches'
// Requests are not valid afterwards.
func (n *Node) Done(now time.Duration, a Access, moved int64, took time.Duration) error {
	if n.busy != nil {
		if n.busy[a.File]--; n.busy[a.File] <= 0 {
			delete(n.busy, a.File)
		}
	}
	if n.cfg.PerServer > 0 && a.Queue < len(n.srv) && n.srv[a.Queue] > 0 {
		n.srv[a.Queue]--
	}
	var first error
	for _, b := range a.Batches {
		if err := n.sw.Complete(now, b.ID, Moved(moved, b.Offset-a.Offset, b.Length), took); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Moved is how many of the length bytes that start rel bytes into an
// access that moved moved bytes were moved.
func Moved(moved, rel, length int64) int64 {
	return min(max(moved-rel, 0), length)
}

// pick returns the batch that starts the next access: the oldest held
// batch whose file is idle, else the scheduler's next one (held instead
// while its file is busy, up to Hold), else, when the scheduler has
// nothing to release, the oldest held batch: dispatch is work-conserving.
// Batches of a data server with PerServer accesses in flight are never
// picked: they stay held until one of its accesses ends.
func (n *Node) pick(now time.Duration) (sched.Batch, bool, time.Duration) {
	for i := range n.held {
		if n.busy[n.held[i].File] == 0 && !n.full(n.held[i].Queue) {
			return n.take(i), true, 0
		}
	}
	for {
		b, ok, retry := n.sw.Next(now)
		if !ok {
			if i := n.oldestOpen(); i >= 0 {
				return n.take(i), true, retry
			}
			return sched.Batch{}, false, retry
		}
		if n.busy[b.File] == 0 && !n.full(b.Queue) {
			return b, true, 0
		}
		n.hold(b)
		if n.full(b.Queue) {
			continue
		}
		if n.heldOpen() > n.cfg.Hold {
			return n.take(n.oldestOpen()), true, 0
		}
	}
}

// oldestOpen is the index of the oldest held batch whose data server is
// not full, or -1.
func (n *Node) oldestOpen() int {
	for i := range n.held {
		if !n.full(n.held[i].Queue) {
			return i
		}
	}
	return -1
}

// heldOpen counts the held batches whose data server is not full (those
// Hold bounds).
func (n *Node) heldOpen() int {
	k := len(n.held)
	if n.cfg.PerServer > 0 {
		for q, h := range n.hsrv {
			if h > 0 && n.full(q) {
				k -= h
			}
		}
	}
	return k
}

// takeIf removes and returns the oldest held batch that continues a.
func (n *Node) takeIf(a Access) (sched.Batch, bool) {
	for i := range n.held {
		if n.continues(a, n.held[i]) {
			return n.take(i), true
		}
	}
	return sched.Batch{}, false
}

func (n *Node) continues(a Access, b sched.Batch) bool {
	if a.Requests+len(b.Requests) > n.cfg.Aggregate {
		return false
	}
	if n.cfg.Continues != nil {
		return n.cfg.Continues(a, b)
	}
	return a.Continues(b, len(b.Requests), n.cfg.Aggregate)
}

// hold appends b to the held batches.
func (n *Node) hold(b sched.Batch) {
	n.held = append(n.held, b)
	if n.cfg.PerServer > 0 {
		n.hsrv = grow(n.hsrv, b.Queue)
		n.hsrv[b.Queue]++
	}
}

// grow returns s long enough to index i.
func grow(s []int, i int) []int {
	for len(s) <= i {
		s = append(s, 0)
	}
	return s
}

func (n *Node) take(i int) sched.Batch {
	b := n.held[i]
	if n.cfg.PerServer > 0 {
		n.hsrv[b.Queue]--
	}
	k := len(n.held) - 1
	copy(n.held[i:], n.held[i+1:])
	n.held[k] = sched.Batch{} // drop the reference to its requests
	n.held = n.held[:k]
	return b
}

// earliest is the earlier of two retry times, ignoring non-positive ones.
func earliest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
