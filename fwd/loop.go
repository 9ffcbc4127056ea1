package fwd

import (
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
	path   string
	file   uint64
	off    int64
	buf    []byte // write data or read destination
	frame  []byte // pooled buffer holding buf, returned when the op is answered
	start  time.Time
	pieces []piece
	left   atomic.Int32
}

// piece is the part of an ioOp on one data server.
type piece struct {
	op     *ioOp
	id     uint64
	server int
	off    int64
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
		ID: p.id, Queue: p.server, File: p.op.file, Offset: p.off, Length: int64(len(p.buf)),
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
}

type completion struct {
	batch uint64
	file  uint64
	bytes int64
	took  time.Duration
	queue int
}

// inbox collects what the loop has to take in: connection readers append
// pieces, workers append completions, and one wake-up of the loop takes
// all of them (hand-offs are batched; neither side ever blocks on the loop).
type inbox struct {
	mu     sync.Mutex
	adds   []*piece
	dones  []completion
	closed bool // Shutdown: no more adds
}

// post changes the inbox under its lock and wakes the loop.
func (d *Daemon) post(f func(in *inbox)) {
	d.in.mu.Lock()
	f(&d.in)
	d.in.mu.Unlock()
	select {
	case d.notify <- struct{}{}:
	default: // a wake-up is already pending; it will see this too
	}
}

// loop owns the scheduler: it adds pieces, hands dispatchable batches to
// idle workers, reports completions, and sleeps until the scheduler's
// retryAt with a timer. It ends once the inbox is closed and every piece is
// done.
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
func (d *Daemon) loop() {
	defer close(d.loopEnd)
	pending := map[uint64]*piece{}
	sp := newSpread(d.opts.Workers)
	inflight := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	timerSet := false
	addOpen := true
	var spareAdds []*piece
	var spareDones []completion
	dispatch := func(j *job) {
		sp.started(j.batch.File)
		inflight++
		d.jobCh <- j
	}
	for {
		// Hand out batches while workers are idle.
		for inflight < d.opts.Workers {
			if j := sp.ready(); j != nil {
				dispatch(j)
				continue
			}
			now := d.now()
			b, ok, retry := d.sw.Next(now)
			if !ok {
				if retry > 0 {
					if timerSet && !timer.Stop() {
						select {
						case <-timer.C:
						default:
						}
					}
					wait := retry - now
					if wait < 0 {
						wait = 0
					}
					timer.Reset(wait)
					timerSet = true
				}
				if j := sp.oldest(); j != nil { // nothing else to do: work-conserving
					dispatch(j)
					continue
				}
				break
			}
			j := &job{batch: b, pieces: make([]*piece, len(b.Requests))}
			for i, r := range b.Requests {
				j.pieces[i] = pending[r.ID]
				delete(pending, r.ID)
			}
			j.batch.Requests = nil
			d.m.depth[b.Queue].Sub(float64(len(b.Requests)))
			if j = sp.offer(j); j != nil {
				dispatch(j)
			}
		}
		if !addOpen && len(pending) == 0 && inflight == 0 && len(sp.held) == 0 {
			return
		}
		select {
		case <-d.notify:
			// Swap the inbox's slices with the drained ones: no allocation.
			d.in.mu.Lock()
			adds, dones, closed := d.in.adds, d.in.dones, d.in.closed
			d.in.adds, d.in.dones = spareAdds[:0], spareDones[:0]
			d.in.mu.Unlock()
			if len(dones) > 0 {
				now := d.now()
				for _, c := range dones {
					inflight--
					sp.done(c.file)
					if err := d.sw.Complete(now, c.batch, c.bytes, c.took); err != nil {
						d.log.Error("scheduler completion", "err", err)
					}
				}
			}
			if len(adds) > 0 {
				now := d.now()
				for _, p := range adds {
					if err := d.sw.Add(now, p.request(now)); err != nil {
						p.err = err
						p.finish()
						continue
					}
					pending[p.id] = p
					d.m.depth[p.server].Inc()
				}
			}
			clear(adds)
			spareAdds, spareDones = adds, dones
			addOpen = !closed
		case f := <-d.ctlCh:
			f(d.now())
		case <-timer.C:
			timerSet = false
		}
	}
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
	for j := range d.jobCh {
		d.run(j)
	}
}

func (d *Daemon) run(j *job) {
	b := j.batch
	path := j.pieces[0].op.path
	t0 := time.Now()
	var err error
	var n int
	switch {
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
	d.post(func(in *inbox) {
		in.dones = append(in.dones, completion{batch: b.ID, file: b.File, bytes: int64(n), took: took, queue: b.Queue})
	})
	for _, p := range j.pieces {
		if err != nil {
			p.err = err
		}
		p.finish()
	}
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
	var ps []backend.Piece
	ps, err := d.be.Split(ps, op.path, op.off, int64(len(op.buf)))
	if err != nil {
		return err
	}
	op.pieces = make([]piece, len(ps))
	var rel int64
	for i, bp := range ps {
		if bp.Offset != op.off+rel || bp.Length <= 0 || rel+bp.Length > int64(len(op.buf)) {
			return errSplit
		}
		op.pieces[i] = piece{op: op, id: d.reqID.Add(1), server: bp.Server, off: bp.Offset, buf: op.buf[rel : rel+bp.Length]}
		rel += bp.Length
	}
	if rel != int64(len(op.buf)) {
		return errSplit
	}
	op.left.Store(int32(len(ps)))
	d.post(func(in *inbox) {
		for i := range op.pieces {
			in.adds = append(in.adds, &op.pieces[i])
		}
	})
	return nil
}
