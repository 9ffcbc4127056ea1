package fwd

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
)

// The daemon's side of the submission and completion rings in a client's
// shared region (docs/protocol.md, "Rings"; their layout: fwd/internal/shm).

// DefaultRingPolls is Options.RingPolls' default: how many sweeps finding
// nothing the ring poller makes, yielding the processor between them,
// before it sleeps.
const DefaultRingPolls = shm.DefaultPolls

// DefaultRingSpin is Options.RingSpin's default: how long the ring poller
// keeps sweeping once its empty sweeps have run out, before it sleeps
// (why 50 us: shm.DefaultSpin).
const DefaultRingSpin = shm.DefaultSpin

// srvRing is the daemon's side of a connection's rings.
type srvRing struct {
	c *conn
	r shm.Rings

	// closed and sqHead belong to the poller's sweep (ringPoller.mu).
	closed bool
	sqHead uint32 // entries taken (the daemon's copy is authoritative)

	cqMu     sync.Mutex    // serialises posting completions
	cqTail   atomic.Uint32 // completions posted (the daemon's copy is authoritative)
	inflight atomic.Int32  // taken and not yet completed through the ring
}

// take admits the submission entries the ring holds, as many as the
// connection's flow control and the completion ring's room allow, and
// returns how many it took. It runs on the poller, under ringPoller.mu.
func (s *srvRing) take() int {
	if s.closed {
		return 0
	}
	tail := s.r.Counter(shm.OffSQTail).Load()
	avail := tail - s.sqHead
	if avail == 0 {
		return 0
	}
	if avail > s.r.Entries() {
		s.fail(fmt.Errorf("%w: submission ring tail %d is %d entries past its head %d (ring of %d)", fwdproto.ErrMalformed, tail, avail, s.sqHead, s.r.Entries()))
		return 0
	}
	var entry [shm.SQESize]byte
	took := 0
	for ; avail > 0; avail-- {
		// The head first: an honest client's head never passes the tail
		// read after it (the daemon's copy moves before the shared one).
		head := s.r.Counter(shm.OffCQHead).Load()
		used := s.cqTail.Load() - head
		if used > s.r.Entries() {
			s.fail(fmt.Errorf("%w: completion ring head is %d entries behind its tail (ring of %d)", fwdproto.ErrMalformed, used, s.r.Entries()))
			return took
		}
		if int64(used)+int64(s.inflight.Load()) >= int64(s.r.Entries()) {
			break // the client has not taken its completions yet
		}
		select {
		case s.c.tokens <- struct{}{}: // the request's response, as for a frame
		default:
			return took // flow control: too many requests unanswered
		}
		copy(entry[:], s.r.SQE(s.sqHead))
		s.sqHead++
		s.r.Counter(shm.OffSQHead).Store(s.sqHead)
		var m fwdproto.Msg
		if err := shm.DecodeSQE(entry[:], &m); err != nil {
			<-s.c.tokens
			s.fail(err)
			return took
		}
		s.inflight.Add(1)
		s.c.d.m.viaRing.Inc()
		s.c.ops.Add(1)
		s.c.io(&m, nil, true)
		took++
	}
	return took
}

// fail ends the connection on a ring protocol error (on the poller): the
// reader stops, requests already taken complete, and the client learns
// why from an error frame when flow control leaves room for it.
func (s *srvRing) fail(err error) {
	s.closed = true
	c := s.c
	c.d.m.badFrames.Inc()
	c.d.log.Warn("malformed ring entry; closing connection", "remote", c.nc.RemoteAddr(), "err", err)
	select {
	case c.tokens <- struct{}{}:
		c.send(&fwdproto.Msg{Op: fwdproto.OpRing, Response: true, Code: fwdproto.CodeBadFrame, Err: err.Error()}, nil)
	default:
	}
	c.stop()
}

// complete posts a successful request's completion and wakes the client
// if a caller sleeps. It releases the request's flow-control token.
func (s *srvRing) complete(id uint64, n int64) {
	s.cqMu.Lock()
	t := s.cqTail.Load()
	shm.PutCQE(s.r.CQE(t), id, n)
	s.cqTail.Store(t + 1)
	s.r.Counter(shm.OffCQTail).Store(t + 1)
	s.cqMu.Unlock()
	s.inflight.Add(-1)
	<-s.c.tokens
	if s.r.Counter(shm.OffWaiters).Load() != 0 {
		s.c.wake()
	}
}

// failed accounts for a request taken from the ring that is answered with
// an error frame instead of a completion.
func (s *srvRing) failed() { s.inflight.Add(-1) }

// setIdle tells clients whether the poller sleeps (under ringPoller.mu).
func (s *srvRing) setIdle(v uint32) {
	if !s.closed {
		s.r.Counter(shm.OffIdle).Store(v)
	}
}

// ringPoller takes submission entries from every connection's rings: it
// polls while there is work and, after it, for Options.RingPolls empty
// sweeps and then for Options.RingSpin of time (unless requests wait in
// the scheduler); then it marks every ring idle and sleeps until a
// doorbell. It counts sweeps as well as time: on a busy machine a
// yielding poller may not run again for longer than any sensible spin
// time, and would sleep while entries come.
type ringPoller struct {
	// mu is held for each sweep over the rings and to change them: a ring
	// removed is never touched again once remove returns.
	mu    sync.Mutex
	rings []*srvRing
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	polls int
	spin  time.Duration // least time to keep sweeping after the last entry
	count atomic.Int32  // rings registered (the poller spins only if some are)
	// running counts the batches executing, and queued is 1 while
	// requests wait in the dispatcher (setQueued). While both are
	// non-zero the workers have batches to take and sweep the rings
	// between them, and the poller stands down: it sweeps every
	// ringStandDown, or at once when either falls to zero. Its spinning
	// beside busy workers found nothing most times and took their
	// processor. With nothing queued (say one long batch on the backend)
	// it polls as usual: no worker will sweep soon.
	running atomic.Int32
	queued  atomic.Int32
}

// ringStandDown is how long the poller waits between sweeps while it
// stands down (measured at 32 KiB on 2 cores: 3 to 5% more throughput
// than spinning). The runtime's timers are coarser than this in a process
// with idle processors (about a millisecond), which is why standing down
// needs queued requests: their workers sweep long before.
const ringStandDown = 100 * time.Microsecond

func newRingPoller(polls int, spin time.Duration) *ringPoller {
	return &ringPoller{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), polls: polls, spin: spin}
}

// add registers a ring; it starts idle, so its client rings the doorbell
// until the poller has seen it.
func (p *ringPoller) add(s *srvRing) {
	s.r.Counter(shm.OffIdle).Store(1)
	p.mu.Lock()
	p.rings = append(p.rings, s)
	p.count.Store(int32(len(p.rings)))
	p.mu.Unlock()
	p.kick()
}

// remove unregisters a ring and stops the poller from touching it.
func (p *ringPoller) remove(s *srvRing) {
	p.mu.Lock()
	s.closed = true
	for i, r := range p.rings {
		if r == s {
			p.rings = append(p.rings[:i], p.rings[i+1:]...)
			break
		}
	}
	p.count.Store(int32(len(p.rings)))
	p.mu.Unlock()
}

// help is a worker's sweep between batches; it gives way to a sweep
// already under way.
func (p *ringPoller) help() {
	if p.count.Load() == 0 || !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	for _, s := range p.rings {
		s.take()
	}
}

// sweep takes the entries of every ring.
func (p *ringPoller) sweep() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := 0
	for _, s := range p.rings {
		took += s.take()
	}
	return took
}

// setIdle marks every ring idle or busy.
func (p *ringPoller) setIdle(v uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.rings {
		s.setIdle(v)
	}
}

// setQueued records whether requests wait in the dispatcher, given how
// many do; the dispatcher calls it under its lock. It stores only a change:
// the poller reads the flag on every sweep, and a store per request
// bounced its cache line between the processors that add and dispatch
// pieces and the one polling.
func (p *ringPoller) setQueued(n int) {
	if v := int32(min(n, 1)); p.queued.Load() != v {
		p.queued.Store(v)
	}
}

// kick wakes the poller (a doorbell).
func (p *ringPoller) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *ringPoller) run() {
	defer close(p.done)
	standDown := time.NewTimer(time.Hour)
	standDown.Stop()
	var spun shm.Spinner
	for {
		if p.sweep() > 0 {
			spun.Reset()
			continue
		}
		if p.running.Load() > 0 && p.queued.Load() > 0 {
			standDown.Reset(ringStandDown)
			select {
			case <-p.wake:
			case <-standDown.C:
			case <-p.stop:
				return
			}
			standDown.Stop()
			spun.Reset()
			continue
		}
		spin := p.spin
		if p.queued.Load() > 0 {
			// Requests wait in the scheduler (for a TWINS window, or
			// for workers): a new one would wait as well, so keeping
			// watch for it gains nothing (TWINS, 32 KiB in one
			// process: 0.061/0.069 of direct with this, 0.053/0.060
			// without).
			spin = 0
		}
		if p.count.Load() > 0 && spun.More(p.polls, spin) {
			runtime.Gosched()
			continue
		}
		// Sleep: say so, look once more (a client that submitted before
		// seeing idle is found here), then wait for a doorbell.
		p.setIdle(1)
		if p.sweep() == 0 {
			select {
			case <-p.wake:
			case <-p.stop:
				return
			}
		}
		p.setIdle(0)
		spun.Reset()
	}
}

// shutdown stops the poller (no ring is registered any more).
func (p *ringPoller) shutdown() {
	close(p.stop)
	<-p.done
}
