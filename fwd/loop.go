package fwd

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// ioOp is one client read or write, split into pieces (one per data-server
// range). It is answered when its last piece finishes.
type ioOp struct {
	c      *conn
	id     uint64
	wop    fwdproto.Op // the request's operation, echoed in the response
	write  bool
	shm    bool // buf is in the client's shared region
	ring   bool // came through the submission ring: completes through the completion ring
	path   string
	file   uint64
	off    int64
	buf    []byte // write data or read destination
	frame  []byte // pooled buffer holding buf, returned when the op is answered
	start  time.Time
	job    string // the job of the calling process ("": none)
	pieces []piece
	left   atomic.Int32

	// Room for the pieces and the backend's split of a request of few
	// pieces, so that they are not allocated apart from the op.
	pieceRoom [2]piece
	splitRoom [2]layout.Piece
}

// piece is the part of an ioOp on one data server.
type piece struct {
	op     *ioOp
	id     uint64
	server int
	off    int64 // file offset
	soff   int64 // offset the scheduler sees: off, or the server-local offset on an ObjectStore
	buf    []byte
	n      int
	err    error
}

func (p *piece) request(now time.Duration) sched.Request {
	op := rw.Read
	if p.op.write {
		op = rw.Write
	}
	return sched.Request{
		ID: p.id, Queue: p.server, File: p.op.file, Offset: p.soff, Length: int64(len(p.buf)),
		Op: op, Arrival: now, App: p.op.c.clientID,
	}
}

// finish records the piece's outcome; the last piece answers the client.
func (p *piece) finish() {
	if p.op.left.Add(-1) == 0 {
		p.op.c.d.complete(p.op)
	}
}

// job is one access handed to a worker: the scheduler's batches it joins
// (acc.Batches) and their pieces.
type job struct {
	acc    ionode.Access
	batch  sched.Batch // spans the access (Requests unset)
	pieces []*piece
	one    [1]*piece      // room for the pieces of a batch of one
	room   [1]sched.Batch // room for an access of one batch
}

// maxSpan bounds the requests joined into one span job.
const maxSpan = 64

// dispatcher owns the I/O node's dispatch core (package ionode, the
// simulator's too). There is no scheduling goroutine: the goroutines that
// add requests (connection readers, the ring poller) and the workers call
// it under its lock. A worker finishing an access records the completion
// and takes the next dispatchable access in the same call, so a request's
// pieces flow from submitter to worker with one wake-up at most, and a busy
// worker goes from access to access with none (an earlier design with a
// scheduling goroutine between them paid two goroutine wake-ups per piece,
// which dominated small requests on few cores).
//
// On backends that keep files whole (local file systems), batches of a file
// that has an access executing are held back (up to Workers of them) while
// the scheduler offers batches of other files (ionode.Config.Hold): the
// writers of one inode contend for its lock, and on two cores that
// contention cost the daemon twice the CPU of the writes themselves. On
// backends of per-server objects nothing is held back, as in the simulator.
// Dispatch is work-conserving: a worker never idles while a batch is
// dispatchable, so one client's large request still spreads over every
// data server at once.
type dispatcher struct {
	mu       sync.Mutex
	work     sync.Cond // workers wait here for a dispatchable batch
	node     *ionode.Node
	spare    *job              // a job allocated for a dispatch that found nothing
	pending  map[uint64]*piece // queued pieces by request id (in the scheduler or held)
	depth    []int             // pending pieces per data server (exported as adaptio_fwd_queue_depth)
	inflight int
	idle     int // workers waiting on work
	// For tuners (Daemon.Sample): bytes of pieces queued, and accesses
	// dispatched, since the start.
	entered    int64
	dispatched int64
	closed     bool // Shutdown: no more adds; workers end once drained

	timer   *time.Timer // wakes a worker at the scheduler's retryAt
	timerAt time.Duration

	// Wake-up latency of idle workers (Daemon.Wakes): when add signalled
	// one (waking), and the latencies measured so far.
	waking     bool
	signalled  time.Duration
	wakes      WakeStats
	wakeMetric prometheus.Observer // adaptio_fwd_worker_wake_seconds, if registered
}

// WakeStats measures how late the daemon's idle workers start after
// requests are queued for them. On a loaded host a signalled goroutine
// runs some time after the signal, and the requests that arrive meanwhile
// are found queued together: the scheduler releases them at once and the
// dispatch core merges those that continue each other, so a node's burst
// reaches a data server as one run (the simulator's sim.Config.DispatchDelay
// models that). adaptio demo --rank prints it per setting and phase: on a
// loaded 2-core host it was 11 to 20 µs on average, in write and read phases
// alike (docs/performance.md, "Do the real stack and the simulator rank
// the windows alike?").
type WakeStats struct {
	Wakes int64         // wake-ups measured: the first worker to start after a signal
	Total time.Duration // their latencies, summed
}

// Mean is the mean wake-up latency (0 without wake-ups).
func (w WakeStats) Mean() time.Duration {
	if w.Wakes == 0 {
		return 0
	}
	return w.Total / time.Duration(w.Wakes)
}

// Plus is w and o together.
func (w WakeStats) Plus(o WakeStats) WakeStats {
	return WakeStats{Wakes: w.Wakes + o.Wakes, Total: w.Total + o.Total}
}

// Minus is what w counted since o (an earlier reading).
func (w WakeStats) Minus(o WakeStats) WakeStats {
	return WakeStats{Wakes: w.Wakes - o.Wakes, Total: w.Total - o.Total}
}

// Wakes returns the wake-up latencies of idle workers measured since the
// daemon started.
func (d *Daemon) Wakes() WakeStats {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	return d.q.wakes
}

func (d *Daemon) initDispatcher(servers int) {
	q := &d.q
	q.work.L = &q.mu
	q.pending = map[uint64]*piece{}
	q.depth = make([]int, servers)
	cfg := ionode.Config{Hold: d.opts.Workers}
	switch {
	case d.obj != nil:
		// A stalled data server holds at most this many workers; the
		// others keep serving the other servers' queues. (On a local file
		// system the "servers" are stripe directories of one device.)
		cfg = ionode.Config{Aggregate: MaxMerge, PerServer: ionode.PerServerLimit(d.opts.Workers, servers)}
	case d.span != nil:
		cfg.Aggregate = maxSpan
		cfg.Continues = d.spanContinues
	}
	q.node = ionode.New(d.sw, cfg)
	q.timer = time.AfterFunc(time.Hour, func() {
		q.mu.Lock()
		q.timerAt = 0
		q.work.Signal()
		q.mu.Unlock()
	})
	q.timer.Stop()
}

// queueDepth is the number of pieces queued in the scheduler for a data
// server (metrics read it when scraped: counting under the dispatcher's
// lock, which adding and dispatching hold anyway, costs the request path
// nothing, where a gauge's atomic update per piece bounced a cache line
// between the processors that add and dispatch).
func (d *Daemon) queueDepth(server int) float64 {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	return float64(d.q.depth[server])
}

// add queues pieces in the scheduler and wakes idle workers.
func (d *Daemon) add(ps []piece) {
	q := &d.q
	var failed []*piece
	q.mu.Lock()
	now := d.now()
	for i := range ps {
		p := &ps[i]
		if err := q.node.AddJob(now, p.op.job, p.request(now)); err != nil {
			p.err = err
			failed = append(failed, p)
			continue
		}
		q.pending[p.id] = p
		q.depth[p.server]++
		q.entered += int64(len(p.buf))
	}
	if w, ok := q.node.Switched(); ok {
		d.windowApplied(w) // the requests turned: the plan's window for their direction
	}
	d.rings.setQueued(len(q.pending))
	n := min(len(ps)-len(failed), q.idle)
	if n > 0 && !q.waking {
		q.waking, q.signalled = true, now
	}
	for ; n > 0; n-- {
		q.work.Signal()
	}
	q.mu.Unlock()
	for _, p := range failed {
		p.finish()
	}
}

// next records the access a worker finished (done, if not nil) and returns
// the next one to execute, waiting for one; nil once the daemon is shut
// down and everything queued has been executed.
func (d *Daemon) next(done *completion) *job {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	now := d.now() // one reading serves the completion and the dispatch
	if done != nil {
		d.finishLocked(now, done)
	}
	for {
		if j := d.dispatchLocked(now); j != nil {
			if q.idle > 0 && q.node.Pending() {
				q.work.Signal() // more may be dispatchable: let another worker look
			}
			return j
		}
		if q.closed && len(q.pending) == 0 && q.inflight == 0 {
			q.work.Broadcast()
			return nil
		}
		q.idle++
		q.work.Wait()
		q.idle--
		now = d.now()
		if q.waking {
			q.waking = false
			lat := max(now-q.signalled, 0)
			q.wakes.Wakes++
			q.wakes.Total += lat
			if q.wakeMetric != nil {
				q.wakeMetric.Observe(lat.Seconds())
			}
		}
	}
}

// finishLocked records that a worker finished an access.
func (d *Daemon) finishLocked(now time.Duration, done *completion) {
	d.q.inflight--
	if d.rings.running.Add(-1) == 0 && d.rings.count.Load() > 0 {
		d.rings.kick() // the poller stood down while batches ran
	}
	if err := d.q.node.Done(now, done.acc, done.bytes, done.took); err != nil {
		d.log.Error("scheduler completion", "err", err)
	}
}

// dispatchLocked returns an access to execute now, counted in flight, or
// nil (arming the timer for the scheduler's retryAt).
func (d *Daemon) dispatchLocked(now time.Duration) *job {
	q := &d.q
	j := q.spare // a call that dispatches nothing allocates nothing
	if j == nil {
		j = &job{}
		q.spare = j
	}
	a, ok, retry := q.node.Next(now, j.room[:0])
	if retry > 0 && (q.timerAt == 0 || retry < q.timerAt) {
		q.timerAt = retry
		q.timer.Reset(max(retry-now, 0))
	}
	if !ok {
		return nil
	}
	q.spare = nil
	j.acc = a
	j.batch = sched.Batch{ID: a.Batches[0].ID, Queue: a.Queue, File: a.File, Op: a.Op, Offset: a.Offset, Length: a.Length}
	if a.Requests == 1 {
		j.pieces = j.one[:]
	} else {
		j.pieces = make([]*piece, 0, a.Requests)
	}
	j.pieces = j.pieces[:0]
	for _, b := range a.Batches {
		for _, r := range b.Requests {
			j.pieces = append(j.pieces, q.pending[r.ID])
			delete(q.pending, r.ID)
		}
		q.depth[b.Queue] -= len(b.Requests)
	}
	d.rings.setQueued(len(q.pending))
	if len(q.pending) == 0 && d.rings.count.Load() > 0 {
		d.rings.kick() // the poller stood down while requests were queued
	}
	q.inflight++
	q.dispatched++
	d.rings.running.Add(1)
	return j
}

// spanContinues is the join rule on a backend that keeps files whole
// (backend.Spanner): batch b continues access a if it is of the same
// request and continues it in the file, so that the access is one backend
// call on one buffer. The scheduler's decisions stand (each batch was
// released by it, in its order, and is completed to it on its own); only
// the number of backend calls changes. Under FIFO a 1 MiB request over
// 64 KiB stripes is one pwrite instead of sixteen; under TWINS a window
// releases one data server's pieces, which do not continue each other: two
// join only when a window ends between them. Called under the dispatcher's
// lock (the pieces of a and b are pending).
func (d *Daemon) spanContinues(a ionode.Access, b sched.Batch) bool {
	if b.File != a.File || b.Op != a.Op || b.Offset != a.Offset+a.Length {
		return false
	}
	op := d.batchOp(a.Batches[0])
	if op == nil {
		return false
	}
	for _, x := range a.Batches[1:] {
		if d.batchOp(x) != op {
			return false
		}
	}
	return d.batchOp(b) == op
}

// batchOp is the request all of b's pieces belong to, or nil if they are
// of several (or not pending).
func (d *Daemon) batchOp(b sched.Batch) *ioOp {
	var op *ioOp
	for _, r := range b.Requests {
		p := d.q.pending[r.ID]
		if p == nil || (op != nil && p.op != op) {
			return nil
		}
		op = p.op
	}
	return op
}

// MaxMerge is the most requests one access to a data server carries when
// the forwarder merges released batches on an ObjectStore backend: IOFSL's
// aggregation limit (Bez et al., FGCS 2020, V-A), the simulator's Config.Aggregate.
const MaxMerge = 16

// closeQueue lets the workers end once everything queued has executed.
func (d *Daemon) closeQueue() {
	d.q.mu.Lock()
	d.q.closed = true
	d.q.timer.Stop()
	d.q.work.Broadcast()
	d.q.mu.Unlock()
}

type completion struct {
	acc   ionode.Access
	bytes int64
	took  time.Duration
}

// worker executes batches on the backend.
func (d *Daemon) worker() {
	defer d.workerWG.Done()
	var c completion
	var done *completion
	for {
		j := d.next(done)
		if j == nil {
			return
		}
		c = d.run(j)
		done = &c
		d.rings.help() // the poller stands down while batches run
		// With rings, yield between batches. Workers this one woke wait
		// in its processor's run queue, and the ring pollers spinning on
		// the others keep those from stealing them: without the yield one
		// worker ran batch after batch while the rest waited, so one
		// batch executed at a time with a dozen queued (measured at
		// 32 KiB on 2 cores: one core's worth of pwrite, 0.35 of direct;
		// with it 0.45-0.51). Without rings nothing spins, the runtime
		// spreads the workers, and the yield only cost (region-only
		// 32 KiB write/read: 0.18/0.21 without it, 0.16/0.18 with).
		if d.rings.count.Load() > 0 {
			runtime.Gosched()
		}
	}
}

// run executes a batch and finishes its pieces (the last piece of a
// request answers it).
func (d *Daemon) run(j *job) completion {
	b := j.batch
	path := j.pieces[0].op.path
	t0 := time.Now()
	var err error
	var n int
	switch {
	case d.obj != nil:
		n, err = d.runLocal(j, path)
	case len(j.acc.Batches) > 1: // a span (only span backends join batches here)
		n, err = d.runSpan(j, path)
	case len(j.pieces) == 1:
		p := j.pieces[0]
		if b.Op == rw.Write {
			n, err = d.be.WriteAt(d.ctx, path, b.Queue, p.buf, p.off)
		} else {
			n, err = d.be.ReadAt(d.ctx, path, b.Queue, p.buf, p.off)
		}
		p.n = n
	default:
		buf := getBuf(int(b.Length))
		if b.Op == rw.Write {
			for _, p := range j.pieces {
				copy(buf[p.off-b.Offset:], p.buf)
			}
			n, err = d.be.WriteAt(d.ctx, path, b.Queue, buf, b.Offset)
			for _, p := range j.pieces {
				p.n = clampN(n, p.off-b.Offset, len(p.buf))
			}
		} else {
			n, err = d.be.ReadAt(d.ctx, path, b.Queue, buf, b.Offset)
			for _, p := range j.pieces {
				p.n = clampN(n, p.off-b.Offset, len(p.buf))
				copy(p.buf, buf[p.off-b.Offset:][:p.n])
			}
		}
		putBuf(buf)
	}
	took := time.Since(t0)
	d.m.batches.Inc()
	for _, p := range j.pieces {
		if err != nil {
			p.err = err
		}
		p.finish()
	}
	return completion{acc: j.acc, bytes: int64(n), took: took}
}

// runSpan executes a span job with one backend call: its pieces are of one
// request, so they lie back to back in the request's buffer.
func (d *Daemon) runSpan(j *job, path string) (n int, err error) {
	b := j.batch
	first := j.pieces[0]
	for _, p := range j.pieces {
		if p.off < first.off {
			first = p
		}
	}
	buf := first.buf
	if first.off != b.Offset || int64(cap(buf)) < b.Length {
		return 0, fmt.Errorf("%w: span of %d bytes at %d not in one buffer", backend.ErrBadArgument, b.Length, b.Offset)
	}
	buf = buf[:b.Length]
	if b.Op == rw.Write {
		n, err = d.span.WriteSpan(d.ctx, path, buf, b.Offset)
	} else {
		n, err = d.span.ReadSpan(d.ctx, path, buf, b.Offset)
	}
	for _, p := range j.pieces {
		p.n = clampN(n, p.off-b.Offset, len(p.buf))
	}
	return n, err
}

// runLocal executes a job on an ObjectStore backend as one access to its
// data server's object: the pieces are contiguous there (scheduler batches
// and merged ones alike). A piece a read leaves short (a hole, the end of
// the file) is read again on its own through ReadAt, which knows files.
func (d *Daemon) runLocal(j *job, path string) (n int, err error) {
	b := j.batch
	buf := j.pieces[0].buf
	if len(j.pieces) > 1 {
		buf = getBuf(int(b.Length))
		defer putBuf(buf)
	}
	if b.Op == rw.Write {
		if len(j.pieces) > 1 {
			for _, p := range j.pieces {
				copy(buf[p.soff-b.Offset:], p.buf)
			}
		}
		n, err = d.obj.WriteLocal(d.ctx, path, b.Queue, buf[:b.Length], b.Offset)
		for _, p := range j.pieces {
			p.n = clampN(n, p.soff-b.Offset, len(p.buf))
		}
		return n, err
	}
	n, err = d.obj.ReadLocal(d.ctx, path, b.Queue, buf[:b.Length], b.Offset)
	for _, p := range j.pieces {
		p.n = clampN(n, p.soff-b.Offset, len(p.buf))
		if len(j.pieces) > 1 {
			copy(p.buf, buf[p.soff-b.Offset:][:p.n])
		}
		if err == nil && p.n < len(p.buf) {
			p.n, err = d.be.ReadAt(d.ctx, path, b.Queue, p.buf, p.off)
		}
	}
	return n, err
}

// clampN is how many of a piece's length bytes, starting rel bytes into a
// batch that moved n bytes, were moved.
func clampN(n int, rel int64, length int) int {
	v := int64(n) - rel
	if v < 0 {
		return 0
	}
	if v > int64(length) {
		return length
	}
	return int(v)
}

// submit splits a client read or write and queues its pieces.
func (d *Daemon) submit(op *ioOp) error {
	ps, err := d.be.Split(op.splitRoom[:0], op.path, op.off, int64(len(op.buf)))
	if err != nil {
		return err
	}
	if len(ps) <= len(op.pieceRoom) {
		op.pieces = op.pieceRoom[:len(ps)]
	} else {
		op.pieces = make([]piece, len(ps))
	}
	var rel int64
	for i, bp := range ps {
		if bp.Offset != op.off+rel || bp.Length <= 0 || rel+bp.Length > int64(len(op.buf)) {
			return errSplit
		}
		op.pieces[i] = piece{op: op, id: d.reqID.Add(1), server: bp.Server, off: bp.Offset, soff: bp.Offset, buf: op.buf[rel : rel+bp.Length]}
		if d.obj != nil {
			if op.pieces[i].soff, err = d.obj.Local(op.path, bp.Server, bp.Offset); err != nil {
				return err
			}
		}
		rel += bp.Length
	}
	if rel != int64(len(op.buf)) {
		return errSplit
	}
	op.left.Store(int32(len(ps)))
	d.add(op.pieces)
	return nil
}
