package fwd

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/wire"
	"github.com/adaptio/adaptio/sched"
)

// ioOp is one client read or write, split into pieces (one per data-server
// range). It is answered when its last piece finishes.
type ioOp struct {
	c      *conn
	id     uint64
	wop    wire.Op // the request's operation, echoed in the response
	write  bool
	shm    bool // buf is in the client's shared region
	ring   bool // came through the submission ring: completes through the completion ring
	path   string
	file   uint64
	off    int64
	buf    []byte // write data or read destination
	frame  []byte // pooled buffer holding buf, returned when the op is answered
	start  time.Time
	pieces []piece
	left   atomic.Int32

	// Room for the pieces and the backend's split of a request of few
	// pieces, so that they are not allocated apart from the op.
	pieceRoom [2]piece
	splitRoom [2]backend.Piece
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
	op := sched.Read
	if p.op.write {
		op = sched.Write
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

// job is one batch handed to a worker.
type job struct {
	batch  sched.Batch // Requests cleared; pieces carries them
	pieces []*piece
	// parts are the scheduler's batches a span job executes as one access
	// (nil: batch alone); batch then covers them all.
	parts []sched.Batch
	one   [1]*piece // room for the pieces of a batch of one
}

// maxSpan bounds the batches joined into one span job.
const maxSpan = 64

// dispatcher owns the scheduler. There is no scheduling goroutine: the
// goroutines that add requests (connection readers, the ring poller) and
// the workers call it under its lock. A worker finishing a batch records
// the completion and takes the next dispatchable batch in the same call,
// so a request's pieces flow from submitter to worker with one wake-up
// at most, and a busy worker goes from batch to batch with none (an
// earlier design with a scheduling goroutine between them paid two
// goroutine wake-ups per piece, which dominated small requests on few
// cores).
//
// Files in flight: a batch of a file that already has a batch executing is
// held back (up to Workers of them) while the scheduler offers batches of
// other files, and goes first once its file is idle or the scheduler has
// nothing else. Concurrent writes to one file serialise in the file system
// (on a local file system the writers of an inode contend for its lock,
// and on two cores that contention cost the daemon twice the CPU of the
// writes themselves); batches of other files keep the workers busy instead.
// The policy is work-conserving: a worker never idles while a batch is
// dispatchable, so one client's large request still spreads over every
// data server at once.
type dispatcher struct {
	mu       sync.Mutex
	work     sync.Cond // workers wait here for a dispatchable batch
	pending  map[uint64]*piece
	depth    []int // pending pieces per data server (exported as adaptio_fwd_queue_depth)
	sp       *spread
	inflight int
	idle     int  // workers waiting on work
	closed   bool // Shutdown: no more adds; workers end once drained

	timer   *time.Timer // wakes a worker at the scheduler's retryAt
	timerAt time.Duration
}

func (d *Daemon) initDispatcher(servers int) {
	q := &d.q
	q.work.L = &q.mu
	q.pending = map[uint64]*piece{}
	q.depth = make([]int, servers)
	q.sp = newSpread(d.opts.Workers)
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
		if err := d.sw.Add(now, p.request(now)); err != nil {
			p.err = err
			failed = append(failed, p)
			continue
		}
		q.pending[p.id] = p
		q.depth[p.server]++
	}
	d.rings.setQueued(len(q.pending))
	for n := min(len(ps)-len(failed), q.idle); n > 0; n-- {
		q.work.Signal()
	}
	q.mu.Unlock()
	for _, p := range failed {
		p.finish()
	}
}

// next records the batch a worker finished (done, if not nil) and returns
// the next batch to execute, waiting for one; nil once the daemon is shut
// down and everything queued has been executed.
func (d *Daemon) next(done *completion) *job {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	now := d.now() // one reading serves the completion and the dispatch
	if done != nil {
		q.inflight--
		if d.rings.running.Add(-1) == 0 && d.rings.count.Load() > 0 {
			d.rings.kick() // the poller stood down while batches ran
		}
		q.sp.done(done.file)
		if done.parts == nil {
			d.completeLocked(now, done.batch, done.bytes, done.took)
		}
		for _, b := range done.parts { // a span: each batch completes on its own
			d.completeLocked(now, b.ID, int64(clampN(int(done.bytes), b.Offset-done.off, int(b.Length))), done.took)
		}
	}
	for {
		if j := d.dispatchLocked(now); j != nil {
			q.sp.started(j.batch.File)
			q.inflight++
			d.rings.running.Add(1)
			if q.idle > 0 && (len(q.pending) > 0 || len(q.sp.held) > 0) {
				q.work.Signal() // more may be dispatchable: let another worker look
			}
			return j
		}
		if q.closed && len(q.pending) == 0 && q.inflight == 0 && len(q.sp.held) == 0 {
			q.work.Broadcast()
			return nil
		}
		q.idle++
		q.work.Wait()
		q.idle--
		now = d.now()
	}
}

func (d *Daemon) completeLocked(now time.Duration, batch uint64, bytes int64, took time.Duration) {
	if err := d.sw.Complete(now, batch, bytes, took); err != nil {
		d.log.Error("scheduler completion", "err", err)
	}
}

// dispatchLocked returns a batch to execute now, or nil (arming the timer
// for the scheduler's retryAt).
func (d *Daemon) dispatchLocked(now time.Duration) *job {
	j := d.pickLocked(now)
	switch {
	case j == nil:
	case d.span != nil:
		d.spanLocked(j, now)
	case d.obj != nil:
		d.mergeLocked(j, now)
	}
	return j
}

func (d *Daemon) pickLocked(now time.Duration) *job {
	q := &d.q
	if j := q.sp.ready(); j != nil {
		return j
	}
	for {
		b, ok, retry := d.sw.Next(now)
		if !ok {
			if retry > 0 && (q.timerAt == 0 || retry < q.timerAt) {
				q.timerAt = retry
				q.timer.Reset(max(retry-now, 0))
			}
			return q.sp.oldest() // nothing else to do: work-conserving
		}
		if j := q.sp.offer(d.jobLocked(b)); j != nil {
			return j
		}
	}
}

// jobLocked takes a batch's pieces out of the pending ones.
func (d *Daemon) jobLocked(b sched.Batch) *job {
	j := &job{batch: b}
	if len(b.Requests) == 1 {
		j.pieces = j.one[:]
	} else {
		j.pieces = make([]*piece, len(b.Requests))
	}
	for i, r := range b.Requests {
		j.pieces[i] = d.q.pending[r.ID]
		delete(d.q.pending, r.ID)
	}
	d.rings.setQueued(len(d.q.pending))
	if len(d.q.pending) == 0 && d.rings.count.Load() > 0 {
		d.rings.kick() // the poller stood down while requests were queued
	}
	j.batch.Requests = nil
	d.q.depth[b.Queue] -= len(b.Requests)
	return j
}

// spanLocked joins to j, on a backend that keeps files whole
// (backend.Spanner), the batches of the same request that continue it and
// that the scheduler releases now: held ones, then the scheduler's next
// ones while they continue it (the first that does not is held for the
// next worker). The scheduler's decisions stand (each batch was released
// by it, in its order, and is completed to it on its own); only the number
// of backend calls changes. Under FIFO a 1 MiB request over 64 KiB stripes
// is one pwrite instead of sixteen; under TWINS a window releases one data
// server's pieces, which do not continue each other: two join only when a
// window ends between them.
func (d *Daemon) spanLocked(j *job, now time.Duration) {
	q := &d.q
	op := j.pieces[0].op
	if !oneRequest(j, op) {
		return
	}
	for len(j.parts) < maxSpan {
		end := j.batch.Offset + j.batch.Length
		continues := func(h *job) bool {
			return h.batch.File == j.batch.File && h.batch.Op == j.batch.Op && h.batch.Offset == end && oneRequest(h, op)
		}
		if h := q.sp.takeIf(continues); h != nil {
			joinJob(j, h, len(op.pieces))
			continue
		}
		if len(q.sp.held) >= q.sp.max {
			return
		}
		b, ok, _ := d.sw.Next(now)
		if !ok {
			return
		}
		h := d.jobLocked(b)
		if !continues(h) {
			q.sp.held = append(q.sp.held, h) // the next worker's
			return
		}
		joinJob(j, h, len(op.pieces))
	}
}

// MaxMerge is the most requests one access to a data server carries when
// the forwarder merges released batches on an ObjectStore backend: IOFSL's
// aggregation limit (seed 000 V-A), the simulator's Config.Aggregate.
const MaxMerge = 16

// mergeLocked joins to j, on a backend that keeps per-server objects
// (backend.ObjectStore), the batches released right after it that continue
// it on the same data server (same file and operation, contiguous in the
// server's local offsets, after or before it), up to MaxMerge requests: held ones first, then
// the scheduler's next ones; the first that does not continue j is held
// for the next worker. The rule is sched.Access, the simulator's dispatch
// aggregation too (sim.Config.Aggregate), on the same offsets, so that both
// send a data server the same accesses. Each batch is still completed to
// the scheduler on its own.
func (d *Daemon) mergeLocked(j *job, now time.Duration) {
	q := &d.q
	acc := sched.AccessOf(j.batch, len(j.pieces))
	continues := func(h *job) bool { return acc.Continues(h.batch, len(h.pieces), MaxMerge) }
	for acc.Requests < MaxMerge {
		h := q.sp.takeIf(continues)
		if h == nil {
			if len(q.sp.held) >= q.sp.max {
				return
			}
			b, ok, _ := d.sw.Next(now)
			if !ok {
				return
			}
			if h = d.jobLocked(b); !continues(h) {
				q.sp.held = append(q.sp.held, h) // the next worker's
				return
			}
		}
		acc.Join(h.batch, len(h.pieces), MaxMerge)
		joinJob(j, h, MaxMerge)
		j.batch.Offset = acc.Offset // h may precede j
	}
}

// oneRequest reports whether every piece of j belongs to op.
func oneRequest(j *job, op *ioOp) bool {
	for _, p := range j.pieces {
		if p.op != op {
			return false
		}
	}
	return true
}

// joinJob appends h to the span job j, a part of a request of room pieces
// (the capacity its slices are made with).
func joinJob(j, h *job, room int) {
	if j.parts == nil {
		j.parts = make([]sched.Batch, 1, room)
		j.parts[0] = j.batch
		j.pieces = append(make([]*piece, 0, room), j.pieces...)
	}
	j.parts = append(j.parts, h.batch)
	j.pieces = append(j.pieces, h.pieces...)
	j.batch.Length += h.batch.Length
}

// closeQueue lets the workers end once everything queued has executed.
func (d *Daemon) closeQueue() {
	d.q.mu.Lock()
	d.q.closed = true
	d.q.timer.Stop()
	d.q.work.Broadcast()
	d.q.mu.Unlock()
}

type completion struct {
	batch uint64
	file  uint64
	bytes int64
	took  time.Duration
	parts []sched.Batch // a span job's batches (nil: batch alone)
	off   int64         // a span job's offset
}

// spread holds back batches of files that have a batch executing (see
// loop); it is the loop's, not safe for concurrent use.
type spread struct {
	busy map[uint64]int // file -> batches executing
	held []*job         // taken from the scheduler while their file was busy, oldest first
	max  int            // most batches held
}

func newSpread(max int) *spread { return &spread{busy: map[uint64]int{}, max: max} }

// offer takes a batch the scheduler gave out and returns the batch to
// dispatch now: j if its file is idle, else nil (j is held), or the oldest
// held batch if holding j exceeds the bound.
func (s *spread) offer(j *job) *job {
	if s.busy[j.batch.File] == 0 {
		return j
	}
	s.held = append(s.held, j)
	if len(s.held) > s.max {
		return s.take(0)
	}
	return nil
}

// ready returns the oldest held batch whose file is idle, or nil.
func (s *spread) ready() *job {
	for i, j := range s.held {
		if s.busy[j.batch.File] == 0 {
			return s.take(i)
		}
	}
	return nil
}

// takeIf removes and returns the oldest held batch that ok accepts, or nil.
func (s *spread) takeIf(ok func(*job) bool) *job {
	for i, j := range s.held {
		if ok(j) {
			return s.take(i)
		}
	}
	return nil
}

// oldest returns the oldest held batch, or nil: for when the scheduler has
// nothing else to dispatch.
func (s *spread) oldest() *job {
	if len(s.held) == 0 {
		return nil
	}
	return s.take(0)
}

func (s *spread) take(i int) *job {
	j := s.held[i]
	s.held = append(s.held[:i], s.held[i+1:]...)
	return j
}

// started and done count the batches of a file executing.
func (s *spread) started(file uint64) { s.busy[file]++ }

func (s *spread) done(file uint64) {
	if s.busy[file]--; s.busy[file] <= 0 {
		delete(s.busy, file)
	}
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
	case j.parts != nil:
		n, err = d.runSpan(j, path)
	case len(j.pieces) == 1:
		p := j.pieces[0]
		if b.Op == sched.Write {
			n, err = d.be.WriteAt(d.ctx, path, b.Queue, p.buf, p.off)
		} else {
			n, err = d.be.ReadAt(d.ctx, path, b.Queue, p.buf, p.off)
		}
		p.n = n
	default:
		buf := getBuf(int(b.Length))
		if b.Op == sched.Write {
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
	return completion{batch: b.ID, file: b.File, bytes: int64(n), took: took, parts: j.parts, off: b.Offset}
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
	if b.Op == sched.Write {
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
	if b.Op == sched.Write {
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
