// Package ionode is the I/O node's dispatch core, the one code that both the
// forwarding daemon (package fwd) runs on real requests and the simulator
// (package sim) runs in virtual time.
//
// The pieces of client requests (one per data-server range, see
// layout.Layout) enter a scheduler (a sched.Switcher). A dispatcher thread
// that is free asks the Node for an access: the batch the scheduler releases,
// joined with the batches released right after it that continue it on the
// same data server (Bez et al., FGCS 2020, V-A: IOFSL aggregates up to 16 requests in
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
	held heldSet        // released by the scheduler, not yet dispatched
	busy map[uint64]int // Hold: file -> accesses in flight
	// Accesses in flight per data server, counted whatever PerServer is,
	// so that SetPerServer may turn the limit on at any time.
	srv []int
	// When each data server's last access ended (for the QoS gate's
	// service times).
	lastDone []time.Duration
	// Requests added and not yet dispatched (in the scheduler or held),
	// and their bytes.
	queued      int
	queuedBytes int64
	fol         follower // the Council's plan, if any (Follow)
	gate        gate     // the QoS gate in front of sw, if any (SetGate)
}

// New returns a Node dispatching from sw.
func New(sw *sched.Switcher, cfg Config) *Node {
	cfg.Aggregate = max(cfg.Aggregate, 1)
	cfg.Hold = max(cfg.Hold, 0)
	cfg.PerServer = max(cfg.PerServer, 0)
	n := &Node{sw: sw, cfg: cfg, held: newHeldSet(cfg.Continues == nil)}
	if cfg.Hold > 0 {
		n.busy = map[uint64]int{}
	}
	return n
}

// Aggregate is the most requests one access carries (Config.Aggregate, at
// least 1).
func (n *Node) Aggregate() int { return n.cfg.Aggregate }

// SetAggregate changes Config.Aggregate from the next access on (k < 1
// counts as 1). Accesses already returned by Next keep their requests, and
// held batches keep their order.
func (n *Node) SetAggregate(k int) { n.cfg.Aggregate = max(k, 1) }

// PerServer is the most accesses in flight to one data server
// (Config.PerServer; 0: no limit).
func (n *Node) PerServer() int { return n.cfg.PerServer }

// SetPerServer changes Config.PerServer from now on (k <= 0: no limit).
// Accesses in flight are not affected: lowering the limit below them holds
// the server's batches until enough of them end; raising it makes held
// batches dispatchable at the next call to Next, in their order.
func (n *Node) SetPerServer(k int) { n.cfg.PerServer = max(k, 0) }

// Scheduler is the Node's scheduler, for its parameters, statistics and
// switches of algorithm.
func (n *Node) Scheduler() *sched.Switcher { return n.sw }

// Add queues one piece of a client request at time now (see sched.Scheduler.Add).
// With a QoS gate (SetGate) it is AddJob with job "".
func (n *Node) Add(now time.Duration, r sched.Request) error {
	if n.gate.g != nil {
		return n.AddJob(now, "", r)
	}
	if err := n.sw.Add(now, r); err != nil {
		return err
	}
	n.follow(now, r)
	n.queued++
	n.queuedBytes += r.Length
	return nil
}

// Queued is the number of requests added and not yet dispatched (queued in
// the QoS gate, the scheduler or held) and their bytes: what waits at the
// I/O node.
func (n *Node) Queued() (requests int, bytes int64) {
	gr, gb := n.gateLen()
	return n.queued + gr, n.queuedBytes + gb
}

// Held is the number of batches released by the scheduler that wait for a
// dispatcher thread.
func (n *Node) Held() int { return n.held.len() }

// Pending reports whether anything waits to be dispatched: queued in the
// scheduler or held, or in the QoS gate (where it may wait for its job's
// bucket: Next then gives the time to ask again).
func (n *Node) Pending() bool {
	gr, _ := n.gateLen()
	return n.held.len() > 0 || n.sw.Len() > 0 || gr > 0
}

// Next returns the access a free dispatcher thread executes now, its
// batches appended to dst. If none is dispatchable it returns ok=false.
// retry, when positive, is the earliest time worth asking again (the
// scheduler's retryAt, see sched.Scheduler.Next); the caller arms a timer
// for it whether or not an access was returned.
func (n *Node) Next(now time.Duration, dst []sched.Batch) (a Access, ok bool, retry time.Duration) {
	gretry := n.pump(now)
	b, ok, retry := n.pick(now)
	retry = earliest(retry, gretry)
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
	for _, b := range a.Batches {
		n.queued -= len(b.Requests)
		for _, r := range b.Requests {
			n.queuedBytes -= r.Length
		}
	}
	n.srv = grow(n.srv, a.Queue)
	n.srv[a.Queue]++
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
	if a.Queue < len(n.srv) && n.srv[a.Queue] > 0 {
		n.srv[a.Queue]--
	}
	n.charge(now, a, took)
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
	if s, ok := n.oldestOpen(true); ok {
		return n.held.take(s), true, 0
	}
	for {
		b, ok, retry := n.sw.Next(now)
		if !ok {
			if s, ok := n.oldestOpen(false); ok {
				return n.held.take(s), true, retry
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
			s, _ := n.oldestOpen(false) // there is one: b's server is open
			return n.held.take(s), true, 0
		}
	}
}

// heldOpen counts the held batches whose data server is not full (those
// Hold bounds).
func (n *Node) heldOpen() int {
	k := n.held.len()
	if n.cfg.PerServer > 0 {
		for q := range n.held.perQ {
			if n.full(q) {
				k -= n.held.onServer(q)
			}
		}
	}
	return k
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
func (n *Node) hold(b sched.Batch) { n.held.add(b) }

// grow returns s long enough to index i.
func grow(s []int, i int) []int {
	for len(s) <= i {
		s = append(s, 0)
	}
	return s
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
