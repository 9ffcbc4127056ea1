package client

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
)

// The client's side of the submission and completion rings in its shared
// region (docs/protocol.md, "Rings"; their layout: fwd/internal/shm).

// DefaultRingEntries is the number of entries of each ring a client asks
// for; it bounds the requests outstanding through the rings.
const DefaultRingEntries = 256

// DefaultRingPolls is how many sweeps finding nothing the process's
// completion reaper makes, yielding the processor between them, before
// its RingSpin starts.
const DefaultRingPolls = shm.DefaultPolls

// DefaultRingSpin is Options.RingSpin's default: how long the completion
// reaper keeps polling once its empty sweeps have run out, before it
// sleeps (why 50 us: docs/protocol.md, "Rings").
const DefaultRingSpin = shm.DefaultSpin

// clientRing is the client's side of a connection's rings.
type clientRing struct {
	r     shm.Rings
	off   int           // where the rings are in the region (a held allocation)
	slots chan struct{} // bounds requests outstanding through the rings

	outstanding atomic.Int32 // requests submitted whose callers have not returned
	watched     bool         // in the reaper's active rings (reaper.mu)

	sqTail uint32 // under clientConn.wmu

	reapMu sync.Mutex
	cqHead uint32 // under reapMu
}

// submit writes m's entry and publishes it (wmu held); it reports whether
// the daemon's poller sleeps (the caller then rings the doorbell).
func (cr *clientRing) submit(m *fwdproto.Msg) (doorbell bool) {
	shm.PutSQE(cr.r.SQE(cr.sqTail), m)
	cr.sqTail++
	cr.r.Counter(shm.OffSQTail).Store(cr.sqTail)
	return cr.r.Counter(shm.OffIdle).Load() != 0
}

// reap takes the completions posted and finishes their calls; it returns
// how many it took. With wait false it gives up if another goroutine is
// reaping.
func (cr *clientRing) reap(cc *clientConn, wait bool) int {
	if !wait && cr.r.Counter(shm.OffCQTail).Load() == cr.r.Counter(shm.OffCQHead).Load() {
		return 0 // nothing posted: the common case of a polling sweep
	}
	if wait {
		cr.reapMu.Lock()
	} else if !cr.reapMu.TryLock() {
		return 0
	}
	defer cr.reapMu.Unlock()
	tail := cr.r.Counter(shm.OffCQTail).Load()
	n := tail - cr.cqHead
	if n > cr.r.Entries() {
		cc.fail(fmt.Errorf("%w: completion ring tail %d is %d entries past its head (ring of %d)", ErrClosed, tail, n, cr.r.Entries()))
		_ = cc.nc.Close()
		return 0
	}
	for ; cr.cqHead != tail; cr.cqHead++ {
		id, k := shm.DecodeCQE(cr.r.CQE(cr.cqHead))
		cc.mu.Lock()
		cl := cc.pending[id]
		delete(cc.pending, id)
		cc.mu.Unlock()
		if cl != nil {
			cl.resp = fwdproto.Msg{Op: cl.op, ID: id, Response: true, N: k}
			close(cl.done)
		}
	}
	cr.r.Counter(shm.OffCQHead).Store(cr.cqHead)
	return int(n)
}

// reaper takes the completions of every connection of this process that
// has requests outstanding through rings: callers sleep on their calls
// and this one goroutine polls for them (16 callers each polling would
// take the CPU from the work they wait for). It polls while completions
// come and, after them, for DefaultRingPolls empty sweeps and then its
// spin (Options.RingSpin); then it marks the rings' callers
// as sleeping, so the daemon sends wake frames, and sleeps until one (the
// connection's reader reaps and kicks it) or a new request.
type reaper struct {
	mu      sync.Mutex // held for each sweep and to change active
	active  []watched  // rings with requests outstanding (a slice: swept in order, no map iteration)
	kick    chan struct{}
	polls   int
	spin    time.Duration // see DefaultRingSpin: the longest Options.RingSpin dialled
	started bool
}

// procReaper is the process's reaper, started with the first ring.
var procReaper = &reaper{kick: make(chan struct{}, 1), polls: DefaultRingPolls}

// watched is a ring the reaper polls, with its connection.
type watched struct {
	cr *clientRing
	cc *clientConn
}

// setPolls changes how many empty sweeps the reaper makes before it
// sleeps and returns the previous value (for tests).
func (rp *reaper) setPolls(n int) int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	old := rp.polls
	rp.polls = n
	return old
}

// spinAtLeast makes the reaper spin at least d after its last completion
// (a client's Options.RingSpin; the process's clients share it).
func (rp *reaper) spinAtLeast(d time.Duration) {
	rp.mu.Lock()
	rp.spin = max(rp.spin, d)
	rp.mu.Unlock()
}

// watch makes the reaper poll cr (it has a request outstanding).
func (rp *reaper) watch(cr *clientRing, cc *clientConn) {
	rp.mu.Lock()
	if !cr.watched {
		cr.watched = true
		rp.active = append(rp.active, watched{cr, cc})
	}
	if !rp.started {
		rp.started = true
		go rp.run()
	}
	rp.mu.Unlock()
	rp.wake()
}

// forget stops the reaper from touching cr; after it returns the ring may
// be unmapped.
func (rp *reaper) forget(cr *clientRing) {
	rp.mu.Lock()
	rp.drop(cr)
	rp.mu.Unlock()
}

func (rp *reaper) wake() {
	select {
	case rp.kick <- struct{}{}:
	default:
	}
}

// sweep reaps every active ring and drops those with nothing outstanding;
// it reports the completions taken and whether any ring is still active.
func (rp *reaper) sweep() (took int, active bool, polls int, spin time.Duration) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	polls, spin = rp.polls, rp.spin
	kept := rp.active[:0]
	for _, w := range rp.active {
		took += w.cr.reap(w.cc, false)
		if w.cr.outstanding.Load() == 0 {
			w.cr.watched = false
			continue
		}
		kept = append(kept, w)
	}
	clear(rp.active[len(kept):])
	rp.active = kept
	return took, len(rp.active) > 0, polls, spin
}

// drop removes cr from the active rings (mu held).
func (rp *reaper) drop(cr *clientRing) {
	rp.active = slices.DeleteFunc(rp.active, func(w watched) bool { return w.cr == cr })
	cr.watched = false
}

// sleeping marks the callers of every active ring as sleeping (or not).
func (rp *reaper) sleeping(v uint32) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, w := range rp.active {
		w.cr.r.Counter(shm.OffWaiters).Store(v)
	}
}

func (rp *reaper) run() {
	var spun shm.Spinner
	for {
		took, active, polls, spin := rp.sweep()
		if took > 0 {
			spun.Reset()
			continue
		}
		if active && spun.More(polls, spin) {
			runtime.Gosched()
			continue
		}
		if active {
			rp.sleeping(1)
			if took, _, _, _ = rp.sweep(); took == 0 { // a completion posted before the daemon saw the flag
				<-rp.kick
			}
			rp.sleeping(0)
		} else {
			<-rp.kick
		}
		spun.Reset()
	}
}
