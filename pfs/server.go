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
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/pfs/wire"
	"github.com/adaptio/adaptio/sched"
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

	// Disk is the modelled device: "hdd" (default), "ssd" or "none". Device,
	// if set, replaces the model Disk names (tests).
	Disk      string
	Device    disk.Device
	Placement disk.Placement // zero: disk.DefaultPlacement of the device's capacity
	Seed      uint64         // seed of the device model's jitter
	Clock     Clock          // nil: wall clock

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

	dev      disk.Device // nil: no delays, no serialisation
	place    disk.Placement
	devSem   chan struct{} // capacity 1: serialises device accesses in arrival order; guards rng, start, modelEnd
	rng      *rand.Rand
	modelEnd time.Duration // end of the last access in device time
	start    time.Time

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
	s := &Server{opts: opts, log: opts.Logger, clock: opts.Clock, conns: make(map[net.Conn]struct{}), ready: make(chan struct{}), devSem: make(chan struct{}, 1)}
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
	s.rng = rand.New(rand.NewPCG(opts.Seed, uint64(opts.ID)))
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
	s.devSem <- struct{}{}
	s.start = s.clock.Now()
	<-s.devSem
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
	return Stats{
		Requests:   s.requests.Load(),
		ReadBytes:  s.readBytes.Load(),
		WriteBytes: s.writeBytes.Load(),
		Busy:       time.Duration(s.busy.Load()),
	}
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
	r := wire.NewReader(c, 0)
	for {
		body, err := readBody(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
		req, err := wire.DecodeRequest(body)
		if err != nil {
			s.log.Warn("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		sem <- struct{}{}
		inflight.Add(1)
		go func() {
			defer func() { <-sem; inflight.Done() }()
			s.requests.Add(1)
			st, a, data, recycle := s.handle(&req)
			putBuf(body) // req.Data is no longer used
			hdr := wire.AppendResponseHeader(make([]byte, 0, wire.LenBytes+wire.ResponseFixed), req.ID, st, a, len(data))
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
		}()
	}
}

// readBody reads one frame body into a pooled buffer.
func readBody(r *wire.Reader) ([]byte, error) {
	n, err := r.Len()
	if err != nil {
		return nil, err
	}
	body := getBuf(n)
	if _, err := io.ReadFull(r.R, body); err != nil {
		putBuf(body)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: truncated frame", wire.ErrMalformed)
		}
		return nil, err
	}
	return body, nil
}

// handle executes one request and returns the response's status, a and
// data, and a pooled buffer to recycle once the response is sent.
func (s *Server) handle(r *wire.Request) (st wire.Status, a int64, data, recycle []byte) {
	st, a, data = s.exec(r, &recycle)
	return st, a, data, recycle
}

func (s *Server) exec(r *wire.Request, recycle *[]byte) (wire.Status, int64, []byte) {
	fail := func(err error) (wire.Status, int64, []byte) {
		return wire.StatusOf(err), 0, []byte(fmt.Sprintf("server %d: %s %q: %v", s.opts.ID, r.Op, r.Path, err))
	}
	switch r.Op {
	case wire.OpPing:
		return wire.StatusOK, 0, nil
	case wire.OpRead:
		if r.B < 0 || r.B > wire.MaxData {
			return fail(fmt.Errorf("%w: read of %d bytes", backend.ErrBadArgument, r.B))
		}
		buf := getBuf(int(r.B))
		*recycle = buf
		n, err := s.access(sched.Read, r.Path, r.A, len(buf), func() (int, error) { return s.fs.ReadAt(r.Path, buf, r.A) })
		if err != nil {
			return fail(err)
		}
		s.readBytes.Add(int64(n))
		return wire.StatusOK, int64(n), buf[:n]
	case wire.OpWrite:
		n, err := s.access(sched.Write, r.Path, r.A, len(r.Data), func() (int, error) { return s.fs.WriteAt(r.Path, r.Data, r.A) })
		if err != nil {
			return fail(err)
		}
		s.writeBytes.Add(int64(n))
		return wire.StatusOK, int64(n), nil
	case wire.OpCreate:
		if err := s.fs.Create(r.Path, modeOf(r.A)); err != nil {
			return fail(err)
		}
	case wire.OpMkdir:
		if err := s.fs.Mkdir(r.Path, modeOf(r.A)); err != nil {
			return fail(err)
		}
	case wire.OpStat:
		fi, err := s.fs.Stat(r.Path)
		if err != nil {
			return fail(err)
		}
		return wire.StatusOK, 0, wire.AppendFileInfo(nil, fi)
	case wire.OpTruncate:
		if err := s.fs.Truncate(r.Path, r.A); err != nil {
			return fail(err)
		}
	case wire.OpUnlink:
		if err := s.fs.Unlink(r.Path); err != nil {
			return fail(err)
		}
	case wire.OpReadDir:
		ents, err := s.fs.ReadDir(r.Path)
		if err != nil {
			return fail(err)
		}
		return wire.StatusOK, 0, wire.AppendDir(nil, ents)
	case wire.OpFsync:
		if err := s.fs.Fsync(r.Path); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("%w: operation %v", backend.ErrBadArgument, r.Op))
	}
	return wire.StatusOK, 0, nil
}

func modeOf(a int64) os.FileMode {
	m := os.FileMode(a).Perm()
	if m == 0 {
		m = 0o644
	}
	return m
}

// access performs one read or write on the device. Accesses are served one
// at a time in arrival order. In device time an access starts when it
// arrives or, if the device is busy then, when the previous access ends
// (back to back, as from a disk's command queue); it returns once the wall
// clock reaches its modelled end. Time spent in the real I/O counts towards
// the delay, and oversleeping is paid back by later accesses, so the
// long-run pace follows the model.
func (s *Server) access(op sched.Op, path string, local int64, n int, do func() (int, error)) (int, error) {
	if s.dev == nil {
		return do()
	}
	arrived := s.clock.Now()
	s.devSem <- struct{}{} // blocked senders queue in order: FIFO service
	defer func() { <-s.devSem }()
	now := max(arrived.Sub(s.start), s.modelEnd)
	svc := s.dev.Service(now, op, s.place.Addr(fileHandle(path), local), int64(n), s.rng)
	s.modelEnd = now + svc
	got, err := do()
	s.busy.Add(int64(svc))
	if d := s.start.Add(s.modelEnd).Sub(s.clock.Now()); d > 0 {
		s.clock.Sleep(d)
	}
	return got, err
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
