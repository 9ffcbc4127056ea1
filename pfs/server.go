package pfs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/pfs/pfsproto"
	"github.com/adaptio/adaptio/rw"
)

// Errors.
var (
	ErrBadOptions = errors.New("pfs: invalid options")
	ErrStarted    = errors.New("pfs: server already started")
)

// Clock is the time source of the disk delays: Now and Sleep. Tests inject
// a fake whose Sleep advances Now; nil means the wall clock.
type Clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

type wallClock struct{}

func (wallClock) Now() time.Time        { return time.Now() }
func (wallClock) Sleep(d time.Duration) { time.Sleep(d) }

// Options configure one data server.
type Options struct {
	ID   int    // server index, for logs and metric labels
	Addr string // TCP listen address; "" means 127.0.0.1:0 (a free port)
	Dir  string // directory holding this server's files; created if absent

	// Disk is the modelled device: "hdd" (default), "ssd", "array" or
	// "none". Device, if set, replaces the model Disk names (tests). With
	// "none" and no Device the server applies no model at all: accesses
	// run at the speed of its directory, concurrently.
	Disk      string
	Device    disk.Device
	Placement disk.Placement // zero: disk.DefaultPlacement of the device's capacity
	Seed      uint64         // seed of the device model's jitter
	Clock     Clock          // nil: wall clock
	// Model is the data-server model applied around the device (package
	// dataserver, the simulator's): page cache, CPU time per access, the
	// cost of interleaving I/O nodes, service order. Zero fields take the
	// simulator's defaults.
	Model dataserver.Config

	MaxInFlight int // concurrent requests per connection; 0: 64
	MaxOpen     int // open files cached; 0: rootfs.DefaultMaxOpen

	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // nil: no metrics
}

// Stats are a server's counters since New.
type Stats struct {
	Requests   int64
	ReadBytes  int64
	WriteBytes int64
	Busy       time.Duration // modelled device time (sum of service times)
	// Model holds the data-server model's counters (accesses, switches
	// between I/O nodes, page-cache chunks, device); zero without a model.
	Model dataserver.Stats
}

// Server is one data server: it stores its share of every file in local
// files under Options.Dir and serves the wire protocol on TCP, delaying
// each read and write by the modelled service time of its device, one
// access at a time. Lifecycle: New, Start, Ready, Shutdown.
type Server struct {
	opts  Options
	log   *slog.Logger
	fs    *rootfs.FS
	clock Clock

	dev   disk.Device // nil: no model, no delays, no serialisation
	place disk.Placement

	devMu    sync.Mutex         // guards model, waiters, nextTag, modelEnd
	model    *dataserver.Server // nil when dev is nil
	waiters  map[int64]waiter   // queued accesses by tag
	nextTag  int64
	modelEnd time.Duration // end of the last access in model time
	start    time.Time     // model time 0

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	ready  chan struct{}
	wg     sync.WaitGroup

	requests, readBytes, writeBytes, busy atomic.Int64
	metrics                               *serverMetrics
}

// New validates opts, fills defaults and opens the storage directory.
func New(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: no storage directory", ErrBadOptions)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	s := &Server{opts: opts, log: opts.Logger, clock: opts.Clock, conns: make(map[net.Conn]struct{}), ready: make(chan struct{}),
		waiters: map[int64]waiter{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("pfs_server", opts.ID)
	if s.clock == nil {
		s.clock = wallClock{}
	}
	s.dev = opts.Device
	capacity := int64(0)
	if s.dev == nil {
		kind := opts.Disk
		if kind == "" {
			kind = disk.KindHDD
		}
		cfg, err := disk.DefaultConfig(kind)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
		capacity = cfg.CapacityBytes
		if kind != disk.KindNone {
			if s.dev, err = disk.New(cfg); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
			}
		}
	}
	s.place = opts.Placement
	if s.place == (disk.Placement{}) {
		if capacity == 0 {
			capacity = 600e9
		}
		s.place = disk.DefaultPlacement(capacity)
	}
	if s.dev != nil {
		m, err := dataserver.New(opts.Model, s.dev, s.place, rand.New(rand.NewPCG(opts.Seed, uint64(opts.ID))))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
		s.model = m
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("pfs: server %d: %w", opts.ID, err)
	}
	fsys, err := rootfs.Open(opts.Dir, opts.MaxOpen)
	if err != nil {
		return nil, fmt.Errorf("pfs: server %d: %w", opts.ID, err)
	}
	s.fs = fsys
	if opts.Registerer != nil {
		s.metrics = newServerMetrics(opts.Registerer, opts.ID, s)
	}
	return s, nil
}

// Start listens and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("pfs: server %d: %w", s.opts.ID, net.ErrClosed)
	}
	if s.ln != nil {
		return ErrStarted
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("pfs: server %d: listen: %w", s.opts.ID, err)
	}
	s.ln = ln
	s.devMu.Lock()
	s.start = s.clock.Now()
	s.devMu.Unlock()
	s.wg.Add(1)
	go s.accept(ln)
	close(s.ready)
	s.log.Info("pfs data server listening", "addr", ln.Addr().String(), "dir", s.opts.Dir)
	return nil
}

// Ready reports whether the server accepts connections, waiting up to
// timeout.
func (s *Server) Ready(timeout time.Duration) bool {
	select {
	case <-s.ready:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Addr is the listening address ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:   s.requests.Load(),
		ReadBytes:  s.readBytes.Load(),
		WriteBytes: s.writeBytes.Load(),
		Busy:       time.Duration(s.busy.Load()),
	}
	s.devMu.Lock()
	if s.model != nil {
		st.Model = s.model.Stats()
	}
	s.devMu.Unlock()
	return st
}

// Shutdown stops listening, closes every connection, waits for requests in
// progress and closes the files. Safe to call more than once.
func (s *Server) Shutdown() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.fs.Close()
	if s.metrics != nil {
		s.metrics.unregister()
	}
	s.log.Info("pfs data server stopped")
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("accept", "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve reads requests from one connection and answers each from its own
// goroutine (at most MaxInFlight at a time), in completion order.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	var wmu sync.Mutex
	var inflight sync.WaitGroup
	sem := make(chan struct{}, s.opts.MaxInFlight)
	defer func() {
		inflight.Wait()
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	r := pfsproto.NewReader(c, 0)
	node := -1          // the I/O node behind the connection (OpHello)
	version := int64(0) // the client's protocol version (OpHello)
	for {
		body, err := readBody(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
		req, err := pfsproto.DecodeRequest(body)
		if err != nil {
			s.log.Warn("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		if req.Op == pfsproto.OpHello {
			// Applies to the requests read after it: answered in order.
			st, msg := pfsproto.StatusOK, []byte(nil)
			if req.A < 0 || req.A > maxNode {
				st, msg = pfsproto.StatusBadArgument, []byte(fmt.Sprintf("server %d: hello: I/O node %d out of [0, %d]", s.opts.ID, req.A, maxNode))
			} else {
				node, version = int(req.A), req.B
			}
			putBuf(body)
			hdr := pfsproto.AppendResponseHeader(make([]byte, 0, pfsproto.LenBytes+pfsproto.ResponseFixed), req.ID, st, 0, len(msg))
			wmu.Lock()
			_, err := (&net.Buffers{hdr, msg}).WriteTo(c)
			wmu.Unlock()
			if err != nil {
				return
			}
			continue
		}
		sem <- struct{}{}
		inflight.Add(1)
		// A read or write joins the model's queue here, in the order the
		// requests came on the wire, as at a real server's device queue;
		// its goroutine then waits for its turn.
		t := s.arrive(node, &req)
		if t != nil {
			// Let the other connections' readers queue what came on them
			// meanwhile: the model's queue then follows the order the
			// requests arrived across connections, as a device queue
			// does, not one connection's buffered frames before another's.
			runtime.Gosched()
		}
		go func(node int) {
			defer func() { <-sem; inflight.Done() }()
			s.requests.Add(1)
			st, a, data, recycle := s.handle(node, &req, t)
			st = pfsproto.StatusFor(st, version)
			putBuf(body) // req.Data is no longer used
			hdr := pfsproto.AppendResponseHeader(make([]byte, 0, pfsproto.LenBytes+pfsproto.ResponseFixed), req.ID, st, a, len(data))
			bufs := net.Buffers{hdr, data}
			wmu.Lock()
			_, err := bufs.WriteTo(c)
			wmu.Unlock()
			if recycle != nil {
				putBuf(recycle)
			}
			if err != nil {
				c.Close() // the reader sees it and ends the connection
			}
		}(node)
	}
}

// readBody reads one frame body into a pooled buffer.
func readBody(r *pfsproto.Reader) ([]byte, error) {
	n, err := r.Len()
	if err != nil {
		return nil, err
	}
	body := getBuf(n)
	if _, err := io.ReadFull(r.R, body); err != nil {
		putBuf(body)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: truncated frame", pfsproto.ErrMalformed)
		}
		return nil, err
	}
	return body, nil
}

// handle executes one request and returns the response's status, a and
// data, and a pooled buffer to recycle once the response is sent.
// turn is the access's place in the model's queue (nil: none).
func (s *Server) handle(node int, r *pfsproto.Request, turn *turn) (st pfsproto.Status, a int64, data, recycle []byte) {
	st, a, data = s.exec(node, r, turn, &recycle)
	if turn != nil && !turn.served {
		// Refused before its I/O: its place in the model's queue is
		// served empty, so the accesses behind it go on.
		s.serve1(turn, func() (int, error) { return 0, nil })
	}
	return st, a, data, recycle
}

func (s *Server) exec(node int, r *pfsproto.Request, turn *turn, recycle *[]byte) (pfsproto.Status, int64, []byte) {
	fail := func(err error) (pfsproto.Status, int64, []byte) {
		return pfsproto.StatusOf(err), 0, []byte(fmt.Sprintf("server %d: %s %q: %v", s.opts.ID, r.Op, r.Path, err))
	}
	switch r.Op {
	case pfsproto.OpPing:
		return pfsproto.StatusOK, 0, nil
	case pfsproto.OpRead:
		if r.B < 0 || r.B > pfsproto.MaxData {
			return fail(fmt.Errorf("%w: read of %d bytes", backend.ErrBadArgument, r.B))
		}
		buf := getBuf(int(r.B))
		*recycle = buf
		n, err := s.serve1(turn, func() (int, error) { return s.fs.ReadAt(r.Path, buf, r.A) })
		if err != nil {
			return fail(err)
		}
		s.readBytes.Add(int64(n))
		return pfsproto.StatusOK, int64(n), buf[:n]
	case pfsproto.OpWrite:
		n, err := s.serve1(turn, func() (int, error) { return s.fs.WriteAt(r.Path, r.Data, r.A) })
		if err != nil {
			return fail(err)
		}
		s.writeBytes.Add(int64(n))
		return pfsproto.StatusOK, int64(n), nil
	case pfsproto.OpCreate:
		if err := s.fs.Create(r.Path, modeOf(r.A)); err != nil {
			return fail(err)
		}
	case pfsproto.OpMkdir:
		if err := s.fs.Mkdir(r.Path, modeOf(r.A)); err != nil {
			return fail(err)
		}
	case pfsproto.OpStat:
		fi, err := s.fs.Stat(r.Path)
		if err != nil {
			return fail(err)
		}
		return pfsproto.StatusOK, 0, pfsproto.AppendFileInfo(nil, fi)
	case pfsproto.OpTruncate:
		if err := s.fs.Truncate(r.Path, r.A); err != nil {
			return fail(err)
		}
	case pfsproto.OpUnlink:
		if err := s.fs.Unlink(r.Path); err != nil {
			return fail(err)
		}
	case pfsproto.OpReadDir:
		ents, err := s.fs.ReadDir(r.Path)
		if err != nil {
			return fail(err)
		}
		return pfsproto.StatusOK, 0, pfsproto.AppendDir(nil, ents)
	case pfsproto.OpFsync:
		if err := s.fs.Fsync(r.Path); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("%w: operation %v", backend.ErrBadArgument, r.Op))
	}
	return pfsproto.StatusOK, 0, nil
}

func modeOf(a int64) os.FileMode {
	m := os.FileMode(a).Perm()
	if m == 0 {
		m = 0o644
	}
	return m
}

// maxNode is the largest I/O node index a connection may name.
const maxNode = 1 << 20

// waiter is an access queued in the model: its arrival (model time) and
// where its grant goes.
type waiter struct {
	arrived time.Duration
	grant   chan grant
}

// grant lets a queued access run: it ends at end (model time) after svc of
// service.
type grant struct{ end, svc time.Duration }

// arrive queues a read or write in the data-server model (package
// dataserver, the simulator's) and returns its place in the queue (turn);
// nil for other requests, for a read larger than a request may carry, and
// without a model. Called in the order requests come on a connection.
func (s *Server) arrive(node int, r *pfsproto.Request) *turn {
	var op rw.Op
	n := int64(len(r.Data))
	switch r.Op {
	case pfsproto.OpRead:
		op, n = rw.Read, r.B
		if n < 0 || n > pfsproto.MaxData {
			return nil
		}
	case pfsproto.OpWrite:
		op = rw.Write
	default:
		return nil
	}
	if s.model == nil {
		return nil
	}
	ch := make(chan grant, 1)
	s.devMu.Lock()
	s.nextTag++
	s.waiters[s.nextTag] = waiter{arrived: s.clock.Now().Sub(s.start), grant: ch}
	s.model.Arrive(dataserver.Access{Node: node, File: fileHandle(r.Path), Op: op, Offset: r.A, Length: n, Tag: s.nextTag})
	s.startLocked()
	s.devMu.Unlock()
	return &turn{grant: ch}
}

// turn is an access's place in the model's queue; served once its
// service has been through serve1.
type turn struct {
	grant  chan grant
	served bool
}

// serve1 performs an access queued by arrive (turn; nil: at once, without
// a model): when the model starts it (one at a time, in the model's
// order) it gets its service time, does the real I/O and returns once the
// wall clock reaches its modelled end. An access queued behind another
// starts, in model time, when that one ends (back to back, as from a
// disk's command queue), so oversleeping is paid back by later accesses
// and the long-run pace follows the model; time spent in the real I/O
// counts towards the delay.
func (s *Server) serve1(t *turn, do func() (int, error)) (int, error) {
	if t == nil || t.served {
		return do()
	}
	t.served = true
	g := <-t.grant
	got, err := do()
	s.busy.Add(int64(g.svc))
	if d := s.start.Add(g.end).Sub(s.clock.Now()); d > 0 {
		s.clock.Sleep(d)
	}
	s.devMu.Lock()
	s.model.Done()
	s.startLocked()
	s.devMu.Unlock()
	return got, err
}

// startLocked starts the model's next access if the device is idle.
func (s *Server) startLocked() {
	if s.model.Busy() || s.model.Len() == 0 {
		return
	}
	h, _ := s.model.Head()
	now := max(s.waiters[h.Tag].arrived, s.modelEnd)
	if s.model.Config().Elevator {
		now = max(s.clock.Now().Sub(s.start), s.modelEnd)
	}
	a, svc, _ := s.model.Start(now)
	s.modelEnd = now + svc
	w := s.waiters[a.Tag]
	delete(s.waiters, a.Tag)
	w.grant <- grant{end: s.modelEnd, svc: svc}
}

// fileHandle names a file for the disk placement.
func fileHandle(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return h.Sum64()
}

// ping checks a server is answering (used by Cluster.Ready).
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
