package fwd

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/adaptio/adaptio/fwd/wire"
)

// Submission and completion rings in the shared region (docs/protocol.md,
// "Rings"). Over the shared-memory transport alone every request still
// costs a socket round trip: a sendmsg and a recvmsg on each side, and a
// wake-up of the peer's thread for each. With rings the client writes a
// read-shm or write-shm as a 64-byte entry into a submission ring, the
// daemon's ring poller picks it up, and the daemon posts a 16-byte
// completion into a completion ring that one goroutine of the client
// process polls for all its connections. Each side keeps polling while
// entries come (yielding the processor between sweeps) and for a few
// sweeps after, then sleeps and says so in the shared control block; the
// other side then sends one wake-up frame (OpWake) on the socket. Busy,
// neither side makes a system call per request; idle, both sleep in the
// kernel as before.
//
// Control block (offsets in bytes from the ring's start; each counter on
// its own cache line, host byte order, 32-bit counters that wrap):
//
//	  0 sq_tail  written by the client: entries submitted
//	 64 sq_head  written by the daemon: entries taken
//	128 cq_tail  written by the daemon: completions posted
//	192 cq_head  written by the client: completions taken
//	256 idle     written by the daemon: 1 while its poller sleeps
//	320 waiters  written by the client: non-zero while its reaper sleeps (callers wait on it)
//	512 submission entries (entries x 64 bytes), then completion entries (entries x 16 bytes)
//
// Every value the daemon reads from the region is checked: a counter out
// of range or a malformed entry ends the connection, as a malformed frame does.

const (
	ringOffSQTail  = 0
	ringOffSQHead  = 64
	ringOffCQTail  = 128
	ringOffCQHead  = 192
	ringOffIdle    = 256
	ringOffWaiters = 320
	ringHeader     = 512
	sqeSize        = 64
	cqeSize        = 16

	// DefaultRingEntries is the number of entries of each ring a client
	// asks for; it bounds the requests outstanding through the rings.
	DefaultRingEntries = 256
	minRingEntries     = 8
	maxRingEntries     = 4096

	// DefaultRingPolls is how many sweeps finding nothing a poller makes
	// (yielding the processor between them) before it sleeps.
	DefaultRingPolls = 50
)

// DefaultRingSpin is how long a poller keeps sweeping, once its empty
// sweeps (RingPolls) have run out, before it sleeps: on an idle machine 50
// sweeps pass in a few microseconds, less than a synchronous client takes
// to send its next request, and every request then paid a wake-up frame
// each way (measured through the FUSE mount on 2 cores, one fio job of
// 32 KiB reads: 253 us median latency sleeping at once, 31 us polling).
// As Linux's busy polling of sockets, it trades CPU time for latency while
// requests come, and none once they stop. (With 16 busy clients in one
// process on 2 cores, 200 us took CPU from the workers: 50 us.)
const DefaultRingSpin = 50 * time.Microsecond

// ringBytes is the size of rings of n entries, control block included.
func ringBytes(n int) int { return ringHeader + n*(sqeSize+cqeSize) }

// validRingEntries reports whether n is a power of two within the limits.
func validRingEntries(n int64) bool {
	return n >= minRingEntries && n <= maxRingEntries && n&(n-1) == 0
}

// rings is a view of the control block and entries in a mapped region.
type rings struct {
	mem  []byte // exactly ringBytes(entries), 64-byte aligned
	n    uint32 // entries (power of two)
	mask uint32
}

func newRings(mem []byte, n int) rings {
	return rings{mem: mem[:ringBytes(n):ringBytes(n)], n: uint32(n), mask: uint32(n - 1)}
}

// counter returns the shared 32-bit counter at off.
func (r rings) counter(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&r.mem[off]))
}

func (r rings) sqe(i uint32) []byte {
	o := ringHeader + int(i&r.mask)*sqeSize
	return r.mem[o : o+sqeSize]
}

func (r rings) cqe(i uint32) []byte {
	o := ringHeader + int(r.n)*sqeSize + int(i&r.mask)*cqeSize
	return r.mem[o : o+cqeSize]
}

// Submission entry layout (64 bytes): u8 op (read-shm or write-shm), 3
// bytes zero, u32 process, u64 id, u64 handle, i64 offset, i64 length,
// u64 shm_off, 16 bytes zero.

// putSQE encodes a read-shm or write-shm request into b.
func putSQE(b []byte, m *wire.Msg) {
	ne := binary.NativeEndian
	clear(b)
	b[0] = byte(m.Op)
	ne.PutUint32(b[4:], m.Process)
	ne.PutUint64(b[8:], m.ID)
	ne.PutUint64(b[16:], m.Handle)
	ne.PutUint64(b[24:], uint64(m.Offset))
	ne.PutUint64(b[32:], uint64(m.Length))
	ne.PutUint64(b[40:], m.ShmOff)
}

// decodeSQE decodes a submission entry; the daemon copies the entry out of
// the region first, so the client cannot change it while it is checked.
func decodeSQE(b []byte, m *wire.Msg) error {
	if len(b) != sqeSize {
		return fmt.Errorf("%w: submission entry of %d bytes", wire.ErrMalformed, len(b))
	}
	ne := binary.NativeEndian
	*m = wire.Msg{Op: wire.Op(b[0]), Process: ne.Uint32(b[4:]), ID: ne.Uint64(b[8:]), Handle: ne.Uint64(b[16:]),
		Offset: int64(ne.Uint64(b[24:])), Length: int64(ne.Uint64(b[32:])), ShmOff: ne.Uint64(b[40:])}
	if m.Op != wire.OpReadShm && m.Op != wire.OpWriteShm {
		return fmt.Errorf("%w: submission entry with operation %s (read-shm or write-shm only)", wire.ErrMalformed, m.Op)
	}
	if m.Offset < 0 || m.Length < 0 {
		return fmt.Errorf("%w: submission entry with negative offset or length", wire.ErrMalformed)
	}
	return nil
}

// Completion entry layout (16 bytes): u64 id, i64 bytes moved. Only
// successes complete through the ring; an error response is a frame on the
// socket (it carries a message).

func putCQE(b []byte, id uint64, n int64) {
	binary.NativeEndian.PutUint64(b[0:], id)
	binary.NativeEndian.PutUint64(b[8:], uint64(n))
}

func decodeCQE(b []byte) (id uint64, n int64) {
	return binary.NativeEndian.Uint64(b[0:]), int64(binary.NativeEndian.Uint64(b[8:]))
}

// wakeFrame and wakeRespFrame are the encoded OpWake frames.
var (
	wakeFrame     = wire.Append(nil, &wire.Msg{Op: wire.OpWake})
	wakeRespFrame = wire.Append(nil, &wire.Msg{Op: wire.OpWake, Response: true})
)

// ---- daemon side ----

// srvRing is the daemon's side of a connection's rings.
type srvRing struct {
	c *conn
	r rings

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
	tail := s.r.counter(ringOffSQTail).Load()
	avail := tail - s.sqHead
	if avail == 0 {
		return 0
	}
	if avail > s.r.n {
		s.fail(fmt.Errorf("%w: submission ring tail %d is %d entries past its head %d (ring of %d)", wire.ErrMalformed, tail, avail, s.sqHead, s.r.n))
		return 0
	}
	var entry [sqeSize]byte
	took := 0
	for ; avail > 0; avail-- {
		// The head first: an honest client's head never passes the tail
		// read after it (the daemon's copy moves before the shared one).
		head := s.r.counter(ringOffCQHead).Load()
		used := s.cqTail.Load() - head
		if used > s.r.n {
			s.fail(fmt.Errorf("%w: completion ring head is %d entries behind its tail (ring of %d)", wire.ErrMalformed, used, s.r.n))
			return took
		}
		if int64(used)+int64(s.inflight.Load()) >= int64(s.r.n) {
			break // the client has not taken its completions yet
		}
		select {
		case s.c.tokens <- struct{}{}: // the request's response, as for a frame
		default:
			return took // flow control: too many requests unanswered
		}
		copy(entry[:], s.r.sqe(s.sqHead))
		s.sqHead++
		s.r.counter(ringOffSQHead).Store(s.sqHead)
		var m wire.Msg
		if err := decodeSQE(entry[:], &m); err != nil {
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
		c.send(&wire.Msg{Op: wire.OpRing, Response: true, Code: wire.CodeBadFrame, Err: err.Error()}, nil)
	default:
	}
	c.stop()
}

// complete posts a successful request's completion and wakes the client
// if a caller sleeps. It releases the request's flow-control token.
func (s *srvRing) complete(id uint64, n int64) {
	s.cqMu.Lock()
	t := s.cqTail.Load()
	putCQE(s.r.cqe(t), id, n)
	s.cqTail.Store(t + 1)
	s.r.counter(ringOffCQTail).Store(t + 1)
	s.cqMu.Unlock()
	s.inflight.Add(-1)
	<-s.c.tokens
	if s.r.counter(ringOffWaiters).Load() != 0 {
		s.c.wake()
	}
}

// failed accounts for a request taken from the ring that is answered with
// an error frame instead of a completion.
func (s *srvRing) failed() { s.inflight.Add(-1) }

// setIdle tells clients whether the poller sleeps (under ringPoller.mu).
func (s *srvRing) setIdle(v uint32) {
	if !s.closed {
		s.r.counter(ringOffIdle).Store(v)
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
	s.r.counter(ringOffIdle).Store(1)
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
	var spun spinner
	for {
		if p.sweep() > 0 {
			spun.reset()
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
			spun.reset()
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
		if p.count.Load() > 0 && spun.more(p.polls, spin) {
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
		spun.reset()
	}
}

// spinner counts a poller's sweeps that found nothing since its last work
// and decides when it may sleep: after polls of them, and then spin of
// time. The clock is read once when the sweeps run out and then every 8
// sweeps, not on every sweep (nor at each entry: a busy poller goes from
// entry to entry without reading it).
type spinner struct {
	empty int
	since time.Time // when the polls ran out (zero: not yet)
}

func (s *spinner) reset() { s.empty, s.since = 0, time.Time{} }

// more records one empty sweep and reports whether to keep sweeping
// (never with negative polls: sleep at once).
func (s *spinner) more(polls int, spin time.Duration) bool {
	s.empty++
	if polls < 0 {
		return false
	}
	if s.empty <= polls {
		return true
	}
	if spin <= 0 {
		return false
	}
	if s.since.IsZero() {
		s.since = time.Now()
		return true
	}
	return s.empty&7 != 0 || time.Since(s.since) < spin
}

// shutdown stops the poller (no ring is registered any more).
func (p *ringPoller) shutdown() {
	close(p.stop)
	<-p.done
}

// ---- client side ----

// clientRing is the client's side of a connection's rings.
type clientRing struct {
	r     rings
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
func (cr *clientRing) submit(m *wire.Msg) (doorbell bool) {
	putSQE(cr.r.sqe(cr.sqTail), m)
	cr.sqTail++
	cr.r.counter(ringOffSQTail).Store(cr.sqTail)
	return cr.r.counter(ringOffIdle).Load() != 0
}

// reap takes the completions posted and finishes their calls; it returns
// how many it took. With wait false it gives up if another goroutine is
// reaping.
func (cr *clientRing) reap(cc *clientConn, wait bool) int {
	if !wait && cr.r.counter(ringOffCQTail).Load() == cr.r.counter(ringOffCQHead).Load() {
		return 0 // nothing posted: the common case of a polling sweep
	}
	if wait {
		cr.reapMu.Lock()
	} else if !cr.reapMu.TryLock() {
		return 0
	}
	defer cr.reapMu.Unlock()
	tail := cr.r.counter(ringOffCQTail).Load()
	n := tail - cr.cqHead
	if n > cr.r.n {
		cc.fail(fmt.Errorf("%w: completion ring tail %d is %d entries past its head (ring of %d)", ErrClientClosed, tail, n, cr.r.n))
		_ = cc.nc.Close()
		return 0
	}
	for ; cr.cqHead != tail; cr.cqHead++ {
		id, k := decodeCQE(cr.r.cqe(cr.cqHead))
		cc.mu.Lock()
		cl := cc.pending[id]
		delete(cc.pending, id)
		cc.mu.Unlock()
		if cl != nil {
			cl.resp = wire.Msg{Op: cl.op, ID: id, Response: true, N: k}
			close(cl.done)
		}
	}
	cr.r.counter(ringOffCQHead).Store(cr.cqHead)
	return int(n)
}

// reaper takes the completions of every connection of this process that
// has requests outstanding through rings: callers sleep on their calls
// and this one goroutine polls for them (16 callers each polling would
// take the CPU from the work they wait for). It polls while completions
// come and, after them, for DefaultRingPolls empty sweeps and then its
// spin (ClientOptions.RingSpin); then it marks the rings' callers
// as sleeping, so the daemon sends wake frames, and sleeps until one (the
// connection's reader reaps and kicks it) or a new request.
type reaper struct {
	mu      sync.Mutex // held for each sweep and to change active
	active  []watched  // rings with requests outstanding (a slice: swept in order, no map iteration)
	kick    chan struct{}
	polls   int
	spin    time.Duration // see DefaultRingSpin: the longest ClientOptions.RingSpin dialled
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
// (a client's ClientOptions.RingSpin; the process's clients share it).
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
		w.cr.r.counter(ringOffWaiters).Store(v)
	}
}

func (rp *reaper) run() {
	var spun spinner
	for {
		took, active, polls, spin := rp.sweep()
		if took > 0 {
			spun.reset()
			continue
		}
		if active && spun.more(polls, spin) {
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
		spun.reset()
	}
}
