package fwd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
	"github.com/adaptio/adaptio/rw"
)

var errSplit = fmt.Errorf("%w: backend split does not cover the range", backend.ErrBadArgument)

// outFrame is a response queued for the connection's writer.
type outFrame struct {
	fixed   []byte
	data    []byte
	release func()
	wake    bool // a wake-up (OpWake): holds no flow-control token
}

// conn is one client connection: a reader goroutine decoding requests, a
// writer goroutine sending responses in completion order.
type conn struct {
	d        *Daemon
	nc       net.Conn
	out      chan outFrame
	clientID uint32
	hello    bool
	fdr      *fdReader // Unix connections: descriptors received (OpShm)
	shm      []byte    // the client's shared region, mapped (nil: none)
	ring     *srvRing  // rings in the region (OpRing; nil: none)
	// wakeQueued: a wake frame is queued and not yet written (at most one
	// is, so out, sized for the tokens plus one, never fills).
	wakeQueued atomic.Bool

	ops sync.WaitGroup // requests received and not yet answered

	mu      sync.Mutex
	handles map[uint64]int // open handles -> open count
	paths   map[uint64]string
	// tokens bounds the responses a connection may have pending: the reader
	// takes one per frame before handling it, the writer returns it once the
	// response is written. So out never fills (a worker answering never
	// blocks) and a client that stops reading stops being read.
	tokens   chan struct{}
	stopping atomic.Bool

	auth session  // the session's authentication (auth.go)
	jobs connJobs // the jobs of the session's processes (jobs.go)
}

// maxPending is the most requests one connection may have unanswered.
const maxPending = 256

// writeTimeout drops a client that accepts no data for this long.
const writeTimeout = 30 * time.Second

func newConn(d *Daemon, nc net.Conn) *conn {
	return &conn{d: d, nc: nc, out: make(chan outFrame, maxPending+1), tokens: make(chan struct{}, maxPending),
		handles: map[uint64]int{}, paths: map[uint64]string{}, auth: session{done: len(d.opts.Token) == 0}}
}

// stop makes the reader return; requests already received still complete.
func (c *conn) stop() {
	c.stopping.Store(true)
	_ = c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second)) // a client not reading does not hold up Shutdown
	if tc, ok := c.nc.(interface{ CloseRead() error }); ok {
		if tc.CloseRead() == nil {
			return
		}
	}
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
}

func (c *conn) serve() {
	defer c.d.dropConn(c)
	if !c.handshake() {
		_ = c.nc.Close()
		return
	}
	done := make(chan struct{})
	go c.writer(done)
	protocolErr := c.reader()
	c.d.locks.dropSession(c) // ends its lock waits, which c.ops counts
	if c.ring != nil {
		c.d.rings.remove(c.ring) // no more entries are taken
	}
	c.ops.Wait()
	// No request uses the shared region any more.
	if c.shm != nil {
		_ = unix.Munmap(c.shm)
		c.shm = nil
	}
	if c.fdr != nil {
		c.fdr.closeAll()
	}
	// Handles the client did not close are released with the connection.
	c.mu.Lock()
	for h, n := range c.handles {
		c.d.release(c.paths[h], n)
	}
	clear(c.handles)
	clear(c.paths)
	c.mu.Unlock()
	close(c.out)
	<-done
	if protocolErr {
		// Closing with unread input makes the kernel reset the connection,
		// which may destroy the error reply before the client reads it:
		// half-close, then discard what the client still sends, briefly.
		if hc, ok := c.nc.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
			_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 4<<20))
		}
	}
	_ = c.nc.Close()
}

// writer sends responses, gathering those already queued into one writev
// (read data goes from its buffer to the socket without a copy).
func (c *conn) writer(done chan struct{}) {
	defer close(done)
	var (
		werr     error
		bufs     net.Buffers
		releases []func()
		tokens   int
	)
	add := func(f outFrame) {
		if f.wake {
			c.wakeQueued.Store(false) // completions after this point queue another
		} else {
			tokens++
		}
		bufs = append(bufs, f.fixed)
		if len(f.data) > 0 {
			bufs = append(bufs, f.data)
		}
		if f.release != nil {
			releases = append(releases, f.release)
		}
	}
	for f := range c.out {
		bufs, releases, tokens = bufs[:0], releases[:0], 0
		add(f)
		size := len(f.fixed) + len(f.data)
	gather:
		for len(bufs) < 64 && size < 4<<20 {
			select {
			case g, ok := <-c.out:
				if !ok {
					break gather
				}
				add(g)
				size += len(g.fixed) + len(g.data)
			default:
				break gather
			}
		}
		if werr == nil {
			dl := time.Now().Add(writeTimeout)
			if c.stopping.Load() {
				dl = time.Now().Add(2 * time.Second)
			}
			_ = c.nc.SetWriteDeadline(dl)
			if _, werr = bufs.WriteTo(c.nc); werr != nil {
				c.d.log.Debug("connection write", "remote", c.nc.RemoteAddr(), "err", werr)
				_ = c.nc.Close()
			}
		}
		for _, r := range releases {
			r()
		}
		for ; tokens > 0; tokens-- {
			<-c.tokens
		}
		clear(releases)
	}
}

// wake queues a wake frame for the client (its callers sleep on the
// completion ring), unless one is queued already.
func (c *conn) wake() {
	if c.wakeQueued.CompareAndSwap(false, true) {
		c.d.m.wakes.Inc()
		c.out <- outFrame{fixed: shm.WakeRespFrame, wake: true}
	}
}

// send queues a response.
func (c *conn) send(m *fwdproto.Msg, release func()) {
	fixed := fwdproto.AppendFixed(make([]byte, 0, 64), m)
	var data []byte
	if m.Response && m.Op == fwdproto.OpRead && m.Code == fwdproto.CodeOK {
		data = m.Data
	}
	c.out <- outFrame{fixed: fixed, data: data, release: release}
}

func (c *conn) sendErr(op fwdproto.Op, id uint64, err error) {
	cd := code(err)
	c.send(&fwdproto.Msg{Op: op, ID: id, Response: true, Code: cd, Err: err.Error()}, nil)
}

// reader reads and dispatches requests until the connection ends; it
// reports whether it ended on a protocol error (bad or oversized frame).
func (c *conn) reader() bool {
	var src io.Reader = c.nc
	if uc, ok := c.nc.(*net.UnixConn); ok {
		c.fdr = newFDReader(uc)
		src = c.fdr
	}
	r := fwdproto.NewReader(src, c.d.opts.MaxFrame)
	r.Alloc = getBuf
	for {
		h, p, err := r.ReadFrame()
		if err == nil && h.Op() == fwdproto.OpWake && !h.IsResponse() && len(p) == 0 {
			// A doorbell: the client submitted while the ring poller slept.
			putBuf(p)
			c.d.m.doorbells.Inc()
			c.d.rings.kick()
			continue
		}
		if err == nil {
			c.d.m.viaFrame.Inc()
		}
		c.tokens <- struct{}{} // for the response (or error reply) to this frame
		if err != nil {
			if errors.Is(err, fwdproto.ErrTooLarge) || errors.Is(err, fwdproto.ErrBadMagic) || errors.Is(err, fwdproto.ErrBadVersion) ||
				errors.Is(err, fwdproto.ErrShort) || errors.Is(err, fwdproto.ErrBadOp) {
				cd := fwdproto.CodeBadFrame
				if errors.Is(err, fwdproto.ErrTooLarge) {
					cd = fwdproto.CodeTooLarge
				}
				op := h.Op()
				if !op.Valid() {
					op = fwdproto.OpHello
				}
				c.d.m.badFrames.Inc()
				c.d.log.Warn("bad frame; closing connection", "remote", c.nc.RemoteAddr(), "err", err)
				c.send(&fwdproto.Msg{Op: op, ID: h.ID, Response: true, Code: cd, Err: err.Error()}, nil)
				return true
			}
			if !errors.Is(err, io.EOF) && !isClosed(err) {
				c.d.log.Debug("connection read", "remote", c.nc.RemoteAddr(), "err", err)
			}
			return false
		}
		var m fwdproto.Msg
		if err := fwdproto.Decode(h, p, &m); err != nil {
			putBuf(p)
			c.d.m.badFrames.Inc()
			c.d.log.Warn("malformed request; closing connection", "remote", c.nc.RemoteAddr(), "err", err)
			c.send(&fwdproto.Msg{Op: m.Op, ID: h.ID, Response: true, Code: fwdproto.CodeBadFrame, Err: err.Error()}, nil)
			return true
		}
		if m.Response {
			putBuf(p)
			c.send(&fwdproto.Msg{Op: m.Op, ID: h.ID, Response: true, Code: fwdproto.CodeBadFrame, Err: "fwd: response frame sent to the daemon"}, nil)
			return true
		}
		if !c.auth.done {
			putBuf(p)
			if !c.authenticate(&m) {
				return true
			}
			continue
		}
		if m.Op == fwdproto.OpWrite {
			m.Data = m.Data[:len(m.Data):len(m.Data)]
			c.handle(&m, p) // the write's data lives in p until the write completes
			continue
		}
		// Other messages hold no reference to p after Decode (strings are copied).
		putBuf(p)
		c.handle(&m, nil)
	}
}

func isClosed(err error) bool {
	var ne net.Error
	return errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout())
}

// handle dispatches one request. Reads and writes go to the scheduler;
// metadata operations run in their own goroutine. Either way the response
// may overtake earlier ones.
func (c *conn) handle(m *fwdproto.Msg, frame []byte) {
	if m.Op == fwdproto.OpAuth {
		c.authAgain(m)
		return
	}
	if m.Op == fwdproto.OpHello {
		c.clientID, c.hello = m.ClientID, true
		c.send(&fwdproto.Msg{Op: fwdproto.OpHello, ID: m.ID, Response: true,
			MaxFrame: uint32(c.d.opts.MaxFrame), Servers: uint32(c.d.be.Servers())}, nil)
		return
	}
	if !c.hello {
		putBuf(frame)
		c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true, Code: fwdproto.CodeNoHello, Err: "fwd: send hello first"}, nil)
		return
	}
	if m.Op == fwdproto.OpShm {
		c.mapShm(m)
		return
	}
	if m.Op == fwdproto.OpJob {
		c.setJob(m)
		return
	}
	if m.Op == fwdproto.OpRing {
		c.mapRing(m)
		return
	}
	c.ops.Add(1)
	switch m.Op {
	case fwdproto.OpRead, fwdproto.OpWrite, fwdproto.OpReadShm, fwdproto.OpWriteShm:
		c.io(m, frame, false)
	default:
		mm := *m
		go func() {
			defer c.ops.Done()
			t0 := time.Now()
			resp, err := c.meta(&mm)
			c.d.m.observe(mm.Op, t0, time.Now(), err)
			if err != nil {
				c.sendErr(mm.Op, mm.ID, err)
				return
			}
			resp.Op, resp.ID, resp.Response = mm.Op, mm.ID, true
			c.send(resp, nil)
		}()
	}
}

// mapShm maps the region offered with OpShm; it runs on the reader, so
// requests after it see the region.
func (c *conn) mapShm(m *fwdproto.Msg) {
	fd := -1
	if c.fdr != nil {
		fd = c.fdr.take()
	}
	var err error
	switch {
	case c.shm != nil:
		err = fmt.Errorf("%w: the connection already has a region", ErrShm)
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	case fd < 0:
		err = fmt.Errorf("%w: no descriptor came with the request (Unix sockets only)", ErrShm)
	default:
		c.shm, err = mapShared(fd, m.Length)
	}
	if err != nil {
		c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true, Code: fwdproto.CodeBadArgument, Err: err.Error()}, nil)
		return
	}
	c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true}, nil)
}

// mapRing sets up the rings the client placed in its region (OpRing); it
// runs on the reader, after the region is mapped.
func (c *conn) mapRing(m *fwdproto.Msg) {
	var err error
	size := int64(shm.RingBytes(int(m.Length)))
	switch {
	case c.shm == nil:
		err = fmt.Errorf("%w: rings need a shared region first", ErrShm)
	case c.ring != nil:
		err = fmt.Errorf("%w: the connection already has rings", ErrShm)
	case !shm.ValidRingEntries(m.Length):
		err = fmt.Errorf("%w: %d ring entries (a power of two, %d to %d)", ErrShm, m.Length, shm.MinRingEntries, shm.MaxRingEntries)
	case m.ShmOff%64 != 0:
		err = fmt.Errorf("%w: rings at offset %d (want a multiple of 64)", ErrShm, m.ShmOff)
	default:
		mem, in := shmSlice(c.shm, m.ShmOff, size)
		if !in {
			err = fmt.Errorf("%w: rings [%d, +%d) outside the shared region of %d bytes", ErrShm, m.ShmOff, size, len(c.shm))
			break
		}
		r := shm.NewRings(mem, int(m.Length))
		for _, off := range []int{shm.OffSQTail, shm.OffSQHead, shm.OffCQTail, shm.OffCQHead} {
			if r.Counter(off).Load() != 0 {
				err = fmt.Errorf("%w: ring counters must start at zero", ErrShm)
			}
		}
		if err == nil {
			c.ring = &srvRing{c: c, r: r}
			c.d.rings.add(c.ring)
		}
	}
	if err != nil {
		c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true, Code: fwdproto.CodeBadArgument, Err: err.Error()}, nil)
		return
	}
	c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true}, nil)
}

func (c *conn) handlePath(h uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.paths[h]
	return p, ok && c.handles[h] > 0
}

// io starts a read or write; viaRing says it came from the submission
// ring (it completes there on success).
func (c *conn) io(m *fwdproto.Msg, frame []byte, viaRing bool) {
	d := c.d
	p, ok := c.handlePath(m.Handle)
	shm := m.Op == fwdproto.OpReadShm || m.Op == fwdproto.OpWriteShm
	var region []byte
	var err error
	switch {
	case !ok:
		err = &fwdproto.Error{Code: fwdproto.CodeBadHandle, Msg: fmt.Sprintf("handle %d is not open", m.Handle)}
	case m.Offset < 0 || m.Length < 0:
		err = fmt.Errorf("%w: negative offset or length", backend.ErrBadArgument)
	case shm && c.shm == nil:
		err = fmt.Errorf("%w: no shared region on this connection", backend.ErrBadArgument)
	case shm:
		// Every (offset, length) must lie inside the region.
		var in bool
		if region, in = shmSlice(c.shm, m.ShmOff, m.Length); !in {
			err = fmt.Errorf("%w: [%d, +%d) is outside the shared region of %d bytes", backend.ErrBadArgument, m.ShmOff, m.Length, len(c.shm))
		}
	case m.Op == fwdproto.OpRead && m.Length > int64(d.opts.MaxFrame-fwdproto.HeaderSize-2):
		err = &fwdproto.Error{Code: fwdproto.CodeTooLarge, Msg: fmt.Sprintf("read of %d bytes exceeds the frame limit", m.Length)}
	}
	if err != nil {
		putBuf(frame)
		if viaRing {
			c.ring.failed()
		}
		c.replyErr(m.Op, m.ID, err)
		c.ops.Done()
		return
	}
	op := &ioOp{c: c, id: m.ID, wop: m.Op, write: m.Op == fwdproto.OpWrite || m.Op == fwdproto.OpWriteShm, ring: viaRing,
		path: p, file: m.Handle, off: m.Offset, start: time.Now(), job: c.jobs.jobOf(m.Process)}
	if shm {
		op.buf, op.shm = region, true
	} else if op.write {
		op.buf = m.Data
		op.frame = frame
	} else {
		op.frame = getBuf(int(m.Length))
		op.buf = op.frame
	}
	sop := rw.Read
	if op.write {
		sop = rw.Write
	}
	if d.observe.Load() {
		d.accMu.Lock()
		d.acc.Request(c.clientID, uint64(c.clientID)<<32|uint64(m.Process), op.file, op.off, int64(len(op.buf)), sop)
		if ja := d.jobAccumulator(op.job); ja != nil {
			ja.Request(c.clientID, uint64(c.clientID)<<32|uint64(m.Process), op.file, op.off, int64(len(op.buf)), sop)
		}
		d.accMu.Unlock()
	}
	if f := d.opts.OnRequest; f != nil {
		f(op.file, op.off, int64(len(op.buf)), sop)
	}
	if len(op.buf) == 0 {
		d.complete(op)
		return
	}
	if err := d.submit(op); err != nil {
		putBuf(op.frame)
		if viaRing {
			c.ring.failed()
		}
		c.replyErr(m.Op, m.ID, err)
		c.ops.Done()
	}
}

func (c *conn) replyErr(op fwdproto.Op, id uint64, err error) {
	var we *fwdproto.Error
	if errors.As(err, &we) {
		c.send(&fwdproto.Msg{Op: op, ID: id, Response: true, Code: we.Code, Err: we.Msg}, nil)
		return
	}
	c.sendErr(op, id, err)
}

// complete answers a finished read or write.
func (d *Daemon) complete(op *ioOp) {
	c := op.c
	defer c.ops.Done()
	var err error
	n := 0
	for i := range op.pieces {
		p := &op.pieces[i]
		if p.err != nil && err == nil {
			err = p.err
		}
	}
	// Bytes moved: the prefix of fully moved pieces (a read may stop at EOF).
	for i := range op.pieces {
		p := &op.pieces[i]
		n += p.n
		if p.n < len(p.buf) {
			break
		}
	}
	wop := op.wop
	mop := fwdproto.OpRead // metrics count shared-memory requests as reads and writes
	if op.write {
		mop = fwdproto.OpWrite
	}
	end := time.Now() // one clock reading for the latency and the interval's span
	d.m.observe(mop, op.start, end, err)
	if err == nil {
		d.jobm.observe(d.jobm.of(op.job), op.write, n, end.Sub(op.start))
	}
	if op.write || err != nil {
		// The write's data is on the backend (or failed); a failed read's
		// buffer is not sent.
		putBuf(op.frame)
		op.frame = nil
	}
	if err == nil && op.write && n < len(op.buf) {
		err = fmt.Errorf("%w: short write %d of %d bytes", backend.ErrBadArgument, n, len(op.buf))
	}
	if err != nil {
		d.log.Debug("request failed", "op", wop, "path", op.path, "off", op.off, "err", err)
		if op.ring {
			c.ring.failed()
		}
		c.sendErr(wop, op.id, err)
		return
	}
	d.m.bytes(op.write, n) // the Announcer's intervals take their bytes from these counters
	if d.observe.Load() {
		d.served(op, n, end)
	}
	if op.ring {
		c.ring.complete(op.id, int64(n))
		return
	}
	if op.write || op.shm {
		c.send(&fwdproto.Msg{Op: wop, ID: op.id, Response: true, N: int64(n)}, nil)
		return
	}
	frame := op.frame
	c.send(&fwdproto.Msg{Op: wop, ID: op.id, Response: true, Data: op.buf[:n]}, func() { putBuf(frame) })
}

// served records a request's service for the interval's OpBytes and
// OpSpan (access.Accumulator.Served), on the clock of CloseInterval.
func (d *Daemon) served(op *ioOp, n int, end time.Time) {
	o := rw.Read
	if op.write {
		o = rw.Write
	}
	d.accMu.Lock()
	d.acc.Served(o, op.start.Sub(d.t0), end.Sub(d.t0), int64(n))
	if ja := d.jobAcc[op.job]; ja != nil && op.job != "" {
		ja.Done(int64(n))
		ja.Served(o, op.start.Sub(d.t0), end.Sub(d.t0), int64(n))
	}
	d.accMu.Unlock()
}

// meta runs a metadata operation.
func (c *conn) meta(m *fwdproto.Msg) (*fwdproto.Msg, error) {
	d := c.d
	ctx := d.ctx
	if resp, err, ok := c.lockOp(m); ok {
		return resp, err
	}
	switch m.Op {
	case fwdproto.OpClose:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.handles[m.Handle] <= 0 {
			return nil, &fwdproto.Error{Code: fwdproto.CodeBadHandle, Msg: fmt.Sprintf("handle %d is not open", m.Handle)}
		}
		c.handles[m.Handle]--
		d.release(c.paths[m.Handle], 1)
		if c.handles[m.Handle] == 0 {
			delete(c.handles, m.Handle)
			delete(c.paths, m.Handle)
			defer d.locks.closed(c, m.Handle) // under c.mu: c.mu before the lock table's mutex
		}
		return &fwdproto.Msg{}, nil
	case fwdproto.OpFsync:
		p, ok := c.handlePath(m.Handle)
		if !ok {
			return nil, &fwdproto.Error{Code: fwdproto.CodeBadHandle, Msg: fmt.Sprintf("handle %d is not open", m.Handle)}
		}
		return &fwdproto.Msg{}, d.be.Fsync(ctx, p)
	}
	p, err := cleanPath(m.Path)
	if err != nil {
		return nil, err
	}
	switch m.Op {
	case fwdproto.OpOpen:
		if p == "." {
			return nil, fmt.Errorf("%w: open of the root", syscall.EISDIR)
		}
		if m.Flags&fwdproto.OpenCreate != 0 {
			if m.Flags&fwdproto.OpenExcl != 0 {
				if _, err := d.be.Stat(ctx, p); err == nil {
					return nil, fmt.Errorf("%s: %w", p, fs.ErrExist)
				}
			}
			mode := fs.FileMode(m.Mode) & fs.ModePerm
			if mode == 0 && m.Flags&fwdproto.OpenMode == 0 {
				mode = 0o644
			}
			if err := d.be.Create(ctx, p, mode); err != nil {
				return nil, err
			}
		}
		if m.Flags&fwdproto.OpenTruncate != 0 {
			if err := d.be.Truncate(ctx, p, 0); err != nil {
				return nil, err
			}
		}
		fi, err := d.be.Stat(ctx, p)
		if err != nil {
			return nil, err
		}
		if fi.IsDir {
			return nil, fmt.Errorf("%s: %w", p, syscall.EISDIR)
		}
		if ns, ok := d.be.(backend.Namespace); ok && fi.Mode&fs.ModeSymlink != 0 {
			// Stat describes a link without reading it; an open follows
			// it, refused where following is (a link leaving the export).
			if _, err := ns.Readlink(ctx, p); err != nil {
				return nil, err
			}
		}
		h := d.acquire(p)
		c.mu.Lock()
		c.handles[h]++
		c.paths[h] = p
		c.mu.Unlock()
		return &fwdproto.Msg{Handle: h, Info: wireInfo(fi)}, nil
	case fwdproto.OpStat:
		fi, err := d.be.Stat(ctx, p)
		return &fwdproto.Msg{Info: wireInfo(fi)}, err
	case fwdproto.OpUnlink:
		return &fwdproto.Msg{}, d.be.Unlink(ctx, p)
	case fwdproto.OpTruncate:
		if m.Length < 0 {
			return nil, fmt.Errorf("%w: negative size", backend.ErrBadArgument)
		}
		return &fwdproto.Msg{}, d.be.Truncate(ctx, p, m.Length)
	case fwdproto.OpMkdir:
		mode := fs.FileMode(m.Mode) & fs.ModePerm
		if mode == 0 {
			mode = 0o755
		}
		return &fwdproto.Msg{}, d.be.Mkdir(ctx, p, mode)
	case fwdproto.OpReadDir:
		fis, err := d.be.ReadDir(ctx, p)
		if err != nil {
			return nil, err
		}
		if len(fis) > fwdproto.MaxEntries {
			fis = fis[:fwdproto.MaxEntries]
		}
		out := &fwdproto.Msg{Entries: make([]fwdproto.FileInfo, len(fis))}
		for i, fi := range fis {
			out.Entries[i] = wireInfo(fi)
		}
		return out, nil
	case fwdproto.OpRename, fwdproto.OpLink, fwdproto.OpSymlink, fwdproto.OpReadlink, fwdproto.OpSetattr, fwdproto.OpStatfs,
		fwdproto.OpMknod:
		return d.namespace(ctx, m, p)
	}
	return nil, fmt.Errorf("%w: %s", fwdproto.ErrBadOp, m.Op)
}

// namespace runs the namespace and attribute operations (rename, links,
// chmod/chown/utimes, statfs, mknod) on a backend that has them.
func (d *Daemon) namespace(ctx context.Context, m *fwdproto.Msg, p string) (*fwdproto.Msg, error) {
	ns, ok := d.be.(backend.Namespace)
	if !ok {
		return nil, fmt.Errorf("%w: %s on this backend", backend.ErrUnsupported, m.Op)
	}
	switch m.Op {
	case fwdproto.OpRename, fwdproto.OpLink:
		to, err := cleanPath(m.Path2)
		if err != nil {
			return nil, err
		}
		if m.Op == fwdproto.OpLink {
			return &fwdproto.Msg{}, ns.Link(ctx, p, to)
		}
		if err := ns.Rename(ctx, p, to); err != nil {
			return nil, err
		}
		d.renamed(p, to)
		return &fwdproto.Msg{}, nil
	case fwdproto.OpSymlink:
		return &fwdproto.Msg{}, ns.Symlink(ctx, m.Path2, p)
	case fwdproto.OpReadlink:
		t, err := ns.Readlink(ctx, p)
		return &fwdproto.Msg{Path2: t}, err
	case fwdproto.OpSetattr:
		var a backend.Attr
		if m.Flags&fwdproto.SetMode != 0 {
			mode := fwdproto.FileMode(m.Mode)
			a.Mode = &mode
		}
		if m.Flags&fwdproto.SetUID != 0 {
			a.UID = &m.UID
		}
		if m.Flags&fwdproto.SetGID != 0 {
			a.GID = &m.GID
		}
		if m.Flags&fwdproto.SetAtime != 0 {
			t := time.Unix(0, m.Atime)
			a.Atime = &t
		}
		if m.Flags&fwdproto.SetMtime != 0 {
			t := time.Unix(0, m.Mtime)
			a.Mtime = &t
		}
		return &fwdproto.Msg{}, ns.Setattr(ctx, p, a)
	case fwdproto.OpMknod:
		if p == "." {
			return nil, fmt.Errorf("%w: mknod of the root", fs.ErrExist)
		}
		switch m.Mode & fwdproto.ModeTypeMask {
		case fwdproto.TypeRegular, fwdproto.TypeFIFO, fwdproto.TypeSocket, fwdproto.TypeBlock, fwdproto.TypeChar:
		default:
			return nil, fmt.Errorf("%w: mknod of type %#o", backend.ErrBadArgument, m.Mode&fwdproto.ModeTypeMask)
		}
		return &fwdproto.Msg{}, ns.Mknod(ctx, p, fwdproto.FileType(m.Mode)|fwdproto.FileMode(m.Mode), m.Rdev)
	case fwdproto.OpStatfs:
		st, err := ns.Statfs(ctx)
		return &fwdproto.Msg{FS: fwdproto.FS{BlockSize: st.BlockSize, Blocks: st.Blocks, Free: st.Free, Avail: st.Avail,
			Files: st.Files, FreeFiles: st.FreeFiles, NameLen: st.NameLen}}, err
	}
	return nil, fmt.Errorf("%w: %s", fwdproto.ErrBadOp, m.Op)
}

// renamed points the handles open on from, or on files below it, to their
// new names, on every connection.
func (d *Daemon) renamed(from, to string) {
	move := func(p string) (string, bool) {
		switch {
		case p == from:
			return to, true
		case strings.HasPrefix(p, from+"/"):
			return to + p[len(from):], true
		}
		return p, false
	}
	d.files.Lock()
	for p, r := range d.byPath {
		if q, ok := move(p); ok {
			delete(d.byPath, p)
			d.byPath[q] = r
		}
	}
	d.files.Unlock()
	d.mu.Lock()
	conns := make([]*conn, 0, len(d.conns))
	for c := range d.conns {
		conns = append(conns, c)
	}
	d.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		for h, p := range c.paths {
			if q, ok := move(p); ok {
				c.paths[h] = q
			}
		}
		c.mu.Unlock()
	}
}

func wireInfo(fi backend.FileInfo) fwdproto.FileInfo {
	return fwdproto.FileInfo{Name: fi.Name, Size: fi.Size, Mode: fi.Mode, ModTime: fi.ModTime, IsDir: fi.IsDir,
		Atime: fi.Atime, Ctime: fi.Ctime, Blocks: fi.Blocks, Ino: fi.Ino, Nlink: fi.Nlink, UID: fi.UID, GID: fi.GID,
		Rdev: fi.Rdev}
}
