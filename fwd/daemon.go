package fwd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/internal/listen"
	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// Errors of the daemon.
var (
	ErrNoBackend   = errors.New("fwd: no backend")
	ErrBadOptions  = errors.New("fwd: invalid options")
	ErrShutdown    = errors.New("fwd: daemon shut down")
	ErrBadWindow   = errors.New("fwd: window must be positive")
	ErrNotTunable  = errors.New("fwd: scheduler has no window")
	ErrBadListener = errors.New("fwd: bad listen address")
)

// Defaults of Options.
const (
	DefaultWorkers         = 16
	DefaultScheduler       = "twins"
	DefaultShutdownTimeout = 10 * time.Second

	// LocalWorkersPerCPU is the default number of workers per CPU
	// (GOMAXPROCS) on a local backend (backend.Local), when that is fewer
	// than DefaultWorkers.
	LocalWorkersPerCPU = 4
)

// Options configure a Daemon. Zero fields take the defaults listed.
type Options struct {
	// Listen are the addresses to accept clients on: "host:port" or
	// "tcp:host:port" (port 0 picks a free one), "unix:/path/to/socket".
	// Default: "127.0.0.1:0".
	Listen []string
	// Backend is where requests land (required). The daemon does not close it.
	Backend backend.Backend
	// Scheduler is the algorithm's registry name (default "twins").
	Scheduler string
	// Sched configures the scheduler; Servers is taken from the backend.
	// Window, Node and Nodes matter for TWINS (default 1 ms, node 0 of 1).
	Sched sched.Config
	// Workers is the number of goroutines executing batches on the backend;
	// at most that many batches are in flight. Default: 16, as IOFSL's
	// dispatcher pool, which keeps a parallel file system over the network
	// busy while calls wait on it. On a local backend (backend.Local) the
	// calls rarely block, every worker with a batch competes for the CPUs,
	// and the default is LocalWorkersPerCPU per CPU if that is fewer (8 on
	// 2 CPUs; measured in docs/performance.md, "What does the forwarder
	// cost against direct I/O?").
	Workers int
	// MaxFrame is the largest frame accepted, header included (default
	// fwdproto.DefaultMaxFrame); larger frames get CodeTooLarge and the
	// connection is closed.
	MaxFrame int
	// Observe feeds every client request to the access.Accumulator behind
	// CloseInterval (the Announcer's Source). Off, CloseInterval returns
	// observations with no requests; set it when an Announcer is attached.
	Observe bool
	// OnRequest, if set, is called with every client request as it
	// arrives (file handle, offset, length, operation), from the
	// connections' goroutines: it must be safe for concurrent use and
	// quick. Dynamic selection's pattern matching builds each period's
	// access series from it.
	OnRequest func(file uint64, offset, length int64, op rw.Op)
	// MetricsAddr, if set, serves Prometheus /metrics over HTTP there
	// (from Gatherer, or from Registerer when it is a Gatherer).
	MetricsAddr string
	// RingPolls is how many sweeps over the clients' submission rings that
	// find nothing the ring poller makes, yielding the processor between
	// them, before it sleeps until a doorbell (default DefaultRingPolls;
	// negative: sleep at once).
	RingPolls int
	// RingSpin is how long the ring poller keeps sweeping once RingPolls
	// empty sweeps have run out, before it sleeps (default DefaultRingSpin;
	// negative: RingPolls alone decides).
	RingSpin time.Duration
	// ShutdownTimeout bounds how long Shutdown waits for queued requests
	// before cancelling backend calls (default 10 s).
	ShutdownTimeout time.Duration
	// Logger receives connection and error events (nil: discard).
	Logger *slog.Logger
	// Registerer receives the daemon's metrics (nil: a private registry).
	Registerer prometheus.Registerer
	// Gatherer serves /metrics when MetricsAddr is set (nil: Registerer if
	// it is a Gatherer).
	Gatherer prometheus.Gatherer

	// Token, if set, is the secret every client must prove it holds, on
	// every listener, before anything else (OpAuth; fwdproto.Auth): a
	// client without it is refused with CodeAuth and the connection
	// closed. Use fwdproto.ReadTokenFile.
	Token []byte
	// TLS, if set, serves the TCP listeners over TLS (Unix sockets stay
	// plain: the shared-memory path needs the socket itself). With
	// ClientAuth tls.RequireAndVerifyClientCert, a verified client
	// certificate authenticates the session in place of the token.
	TLS *tls.Config
	// Insecure lets a listener beyond loopback (internal/listen) start
	// with neither Token nor client certificates. Without it, New refuses.
	Insecure bool

	// QoS puts the per-job gate (package qos) in front of the scheduler:
	// jobs share a saturated node by weight, and QoSRules cap them
	// (jobs.go). SetQoSRules changes the rules at run time.
	QoS      bool
	QoSRules []qos.Rule
	// QoSDepth is the most requests the scheduler holds before the gate
	// holds the rest back by job (0: ionode.DefaultGateDepth).
	QoSDepth int
	// QoSFairness is the floor of Jain's index of the jobs' shares of the
	// data servers' time (qos.Config.Fairness; 0: qos.DefaultFairness, 1:
	// equal shares by weight).
	QoSFairness float64
	// JobLabels is the most job ids the per-job metrics name (0:
	// DefaultJobLabels); later jobs are counted as "other".
	JobLabels int
}

// authenticated reports whether every session must authenticate.
func (o Options) authenticated() bool {
	return len(o.Token) > 0 || (o.TLS != nil && o.TLS.ClientAuth == tls.RequireAndVerifyClientCert)
}

// Daemon is the forwarding daemon: it accepts clients, splits their reads
// and writes into per-data-server pieces, schedules the pieces and executes
// the batches on the backend with a pool of workers. It implements the
// Announcer's Source and Applier. Methods are safe for concurrent use.
type Daemon struct {
	opts Options
	log  *slog.Logger
	be   backend.Backend
	sw   *sched.Switcher
	t0   time.Time
	m    *metrics

	clock func() time.Duration // tests of this package: virtual time for the scheduler
	gath  prometheus.Gatherer

	ctx    context.Context // cancelled when Shutdown gives up waiting
	locks  lockMgr         // file locks of every session (locks.go)
	cancel context.CancelFunc

	q     dispatcher          // the scheduler and the workers' queue
	span  backend.Spanner     // the backend, if it keeps files whole (nil: pieces only)
	obj   backend.ObjectStore // the backend, if it keeps per-server objects (then span is nil)
	rings *ringPoller         // takes requests from clients' submission rings

	jobm       *jobMetrics // per-job metrics (jobs.go)
	qosReloads int         // SetQoSRules calls that changed the rules (under q.mu)

	mu        sync.Mutex
	started   bool
	stopping  bool
	listeners []net.Listener
	addrs     []string
	conns     map[*conn]struct{}
	httpSrv   *http.Server
	metricsLn net.Listener
	ready     chan struct{}

	connWG   sync.WaitGroup // connection goroutines
	workerWG sync.WaitGroup

	files   sync.Mutex
	byPath  map[string]*fileRef
	nextFID uint64

	reqID atomic.Uint64

	observe      atomic.Bool // Options.Observe, changed by SetObserve
	accBytes     int64       // metrics' bytes acknowledged at the last interval close or SetObserve (accMu)
	accMu        sync.Mutex
	acc          access.Accumulator
	jobAcc       map[string]*access.Accumulator // each declared job's requests of the interval (accMu; CloseIntervalJobs)
	accStart     time.Time
	window       atomic.Int64 // window in force, ns (0: not TWINS)
	shutdownOnce sync.Once
}

// defaultWorkers is Options.Workers' default for be.
func defaultWorkers(be backend.Backend) int {
	if l, ok := be.(backend.Local); ok && l.Local() {
		return min(DefaultWorkers, LocalWorkersPerCPU*runtime.GOMAXPROCS(0))
	}
	return DefaultWorkers
}

// New validates opts, fills defaults and builds a daemon; Start runs it.
func New(opts Options) (*Daemon, error) {
	if opts.Backend == nil {
		return nil, ErrNoBackend
	}
	if len(opts.Listen) == 0 {
		opts.Listen = []string{"127.0.0.1:0"}
	}
	if opts.Scheduler == "" {
		opts.Scheduler = DefaultScheduler
	}
	if opts.Workers == 0 {
		opts.Workers = defaultWorkers(opts.Backend)
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("%w: Workers = %d", ErrBadOptions, opts.Workers)
	}
	if opts.MaxFrame == 0 {
		opts.MaxFrame = fwdproto.DefaultMaxFrame
	}
	if opts.MaxFrame < 4096 {
		return nil, fmt.Errorf("%w: MaxFrame = %d, want >= 4096", ErrBadOptions, opts.MaxFrame)
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.RingPolls == 0 {
		opts.RingPolls = DefaultRingPolls
	}
	if opts.RingSpin == 0 {
		opts.RingSpin = DefaultRingSpin
	}
	for _, a := range opts.Listen {
		network, addr, ok := fwdproto.SplitAddr(a)
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrBadListener, a)
		}
		if network == "unix" {
			continue
		}
		if err := listen.Require("forward --listen", addr, opts.authenticated(), opts.Insecure); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	if len(opts.Token) > 0 && len(opts.Token) < fwdproto.MinToken {
		return nil, fmt.Errorf("%w: a token of %d bytes, want at least %d", ErrBadOptions, len(opts.Token), fwdproto.MinToken)
	}
	cfg := opts.Sched
	cfg.Servers = opts.Backend.Servers()
	sw, err := sched.NewSwitcher(opts.Scheduler, cfg)
	if err != nil {
		return nil, fmt.Errorf("fwd: scheduler: %w", err)
	}
	opts.Sched = cfg.WithDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := opts.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, opts.Registerer = r, r
	}
	gath := opts.Gatherer
	if gath == nil {
		gath, _ = reg.(prometheus.Gatherer)
	}
	if opts.MetricsAddr != "" && gath == nil {
		return nil, fmt.Errorf("%w: MetricsAddr set but no Gatherer", ErrBadOptions)
	}
	d := &Daemon{
		opts: opts, log: log, be: opts.Backend, sw: sw, gath: gath,
		rings:  newRingPoller(opts.RingPolls, opts.RingSpin),
		conns:  map[*conn]struct{}{},
		ready:  make(chan struct{}),
		byPath: map[string]*fileRef{},
	}
	d.span, _ = opts.Backend.(backend.Spanner)
	if d.obj, _ = opts.Backend.(backend.ObjectStore); d.obj != nil {
		d.span = nil // pieces are scheduled and merged by server-local offset
	}
	d.initDispatcher(cfg.Servers)
	m, err := newMetrics(reg, cfg.Servers, d.queueDepth)
	if err != nil {
		return nil, err
	}
	d.m = m
	d.q.wakeMetric = m.wake
	if d.jobm, err = newJobMetrics(reg, opts.JobLabels); err != nil {
		return nil, err
	}
	if err := d.initQoS(reg); err != nil {
		return nil, err
	}
	if err := d.registerKnobMetrics(reg); err != nil {
		return nil, err
	}
	d.observe.Store(opts.Observe)
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if opts.Scheduler == "twins" {
		d.window.Store(int64(sw.Params().Window))
		m.window.Set(sw.Params().Window.Seconds())
	}
	return d, nil
}

// Start opens the listeners and starts serving. It returns once every
// listener is open; Ready reports the same.
func (d *Daemon) Start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("fwd: already started")
	}
	for _, a := range d.opts.Listen {
		network, addr, _ := fwdproto.SplitAddr(a)
		if network == "unix" {
			if fi, err := os.Lstat(addr); err == nil && fi.Mode()&fs.ModeSocket != 0 {
				if c, err := net.DialTimeout("unix", addr, time.Second); err == nil {
					c.Close()
					d.closeListenersLocked()
					return fmt.Errorf("fwd: listen %s: another process serves this socket (a daemon already running?)", a)
				}
				_ = os.Remove(addr) // stale socket of an earlier run
			}
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			d.closeListenersLocked()
			return fmt.Errorf("fwd: listen %s: %w", a, err)
		}
		if network != "unix" && listen.Insecure(addr, d.opts.authenticated()) {
			d.log.Warn("clients are not authenticated on this address (insecure): anyone who reaches it can read and write the backend", "addr", ln.Addr().String())
		}
		if network != "unix" && d.opts.TLS != nil {
			ln = tls.NewListener(ln, d.opts.TLS)
		}
		d.listeners = append(d.listeners, ln)
		if network == "unix" {
			d.addrs = append(d.addrs, "unix:"+ln.Addr().String())
		} else {
			d.addrs = append(d.addrs, ln.Addr().String())
		}
	}
	if d.opts.MetricsAddr != "" {
		ln, err := net.Listen("tcp", d.opts.MetricsAddr)
		if err != nil {
			d.closeListenersLocked()
			return fmt.Errorf("fwd: metrics listen %s: %w", d.opts.MetricsAddr, err)
		}
		d.metricsLn = ln
		if !listen.Local(d.opts.MetricsAddr) {
			// Read-only, but it tells who is doing what: say it is open.
			d.log.Warn("metrics served beyond loopback without authentication (read-only)", "addr", ln.Addr().String())
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(d.gath, promhttp.HandlerOpts{}))
		d.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = d.httpSrv.Serve(ln) }()
	}
	d.started = true
	start := time.Now()
	d.t0 = start
	if d.opts.Sched.Aligned {
		// Aligned TWINS windows are slots of a clock every daemon shares:
		// the wall clock since the top of the hour before the start (then
		// monotonic), so daemons on one host, or on hosts whose clocks
		// agree, serve different data servers in every slot of a window
		// that divides an hour (every window of sched.Windows does).
		d.t0 = start.Add(-time.Duration(start.UnixNano() % int64(time.Hour)))
	}
	d.accMu.Lock()
	d.accStart = start
	d.accMu.Unlock()
	for i := 0; i < d.opts.Workers; i++ {
		d.workerWG.Add(1)
		go d.worker()
	}
	go d.rings.run()
	for _, ln := range d.listeners {
		d.connWG.Add(1)
		go d.accept(ln)
	}
	close(d.ready)
	d.log.Info("forwarder started", "addrs", d.addrs, "scheduler", d.opts.Scheduler,
		"servers", d.be.Servers(), "workers", d.opts.Workers, "ring_polls", d.opts.RingPolls, "ring_spin", d.opts.RingSpin)
	return nil
}

func (d *Daemon) closeListenersLocked() {
	for _, ln := range d.listeners {
		_ = ln.Close()
	}
	d.listeners = nil
	d.addrs = nil
}

// Ready waits up to timeout for the daemon to accept connections.
func (d *Daemon) Ready(timeout time.Duration) bool {
	select {
	case <-d.ready:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Addr returns the first listen address, in a form Dial accepts
// ("127.0.0.1:40123" or "unix:/path"); empty before Start.
func (d *Daemon) Addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.addrs) == 0 {
		return ""
	}
	return d.addrs[0]
}

// Addrs returns every listen address.
func (d *Daemon) Addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// MetricsAddr returns the address /metrics is served on ("" if none).
func (d *Daemon) MetricsAddr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.metricsLn == nil {
		return ""
	}
	return d.metricsLn.Addr().String()
}

// Shutdown stops accepting, closes client connections (requests already
// received still complete on the backend, so an acknowledged write is never
// lost and a write in progress finishes), waits up to ShutdownTimeout for
// queued pieces, then cancels what is left. It does not close the backend.
func (d *Daemon) Shutdown() {
	d.shutdownOnce.Do(func() {
		d.mu.Lock()
		if !d.started {
			d.mu.Unlock()
			return
		}
		d.stopping = true
		d.closeListenersLocked()
		for c := range d.conns {
			c.stop()
		}
		if d.httpSrv != nil {
			_ = d.httpSrv.Close()
		}
		d.mu.Unlock()
		timer := time.AfterFunc(d.opts.ShutdownTimeout, d.cancel)
		d.connWG.Wait() // readers done and every received request answered
		timer.Stop()
		d.rings.shutdown()
		d.closeQueue() // nothing else will be added; the workers drain the queue and end
		d.workerWG.Wait()
		d.cancel()
		d.log.Info("forwarder stopped")
	})
}

func (d *Daemon) accept(ln net.Listener) {
	defer d.connWG.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		d.mu.Lock()
		if d.stopping {
			d.mu.Unlock()
			_ = nc.Close()
			return
		}
		c := newConn(d, nc)
		d.conns[c] = struct{}{}
		d.connWG.Add(1)
		d.mu.Unlock()
		d.m.conns.Inc()
		go c.serve()
	}
}

func (d *Daemon) dropConn(c *conn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
	d.m.conns.Dec()
	d.connWG.Done()
}

// now is the scheduler's clock: time since Start, or with aligned TWINS
// windows since the top of the hour before it (or the clock a test of this
// package set).
func (d *Daemon) now() time.Duration {
	if d.clock != nil {
		return d.clock()
	}
	return time.Since(d.t0)
}

// fileRef is a path's daemon-wide handle and how many opens hold it.
type fileRef struct {
	id   uint64
	refs int
}

// acquire returns the daemon-wide handle of a (clean) path and counts one
// more open of it: while a path is open anywhere, every client gets the
// same handle, so the scheduler can aggregate requests of different
// clients to a shared file. Handles are never reused.
func (d *Daemon) acquire(p string) uint64 {
	d.files.Lock()
	defer d.files.Unlock()
	r, ok := d.byPath[p]
	if !ok {
		d.nextFID++
		r = &fileRef{id: d.nextFID}
		d.byPath[p] = r
	}
	r.refs++
	return r.id
}

// release undoes n acquires of p; the last one forgets the path.
func (d *Daemon) release(p string, n int) {
	d.files.Lock()
	defer d.files.Unlock()
	if r, ok := d.byPath[p]; ok {
		if r.refs -= n; r.refs <= 0 {
			delete(d.byPath, p)
		}
	}
}

// openFiles is the number of distinct paths open (for tests).
func (d *Daemon) openFiles() int {
	d.files.Lock()
	defer d.files.Unlock()
	return len(d.byPath)
}

// cleanPath confines a client path to the export root: absolute paths, ".."
// elements and NUL bytes are refused; "" and "." name the root. The backend
// checks again, including symlinks.
func cleanPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || strings.Contains(p, "\\") {
		return "", fmt.Errorf("%w: %q", backend.ErrPath, p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return "", fmt.Errorf("%w: %q", backend.ErrPath, p)
		}
	}
	if p == "" {
		return ".", nil
	}
	return path.Clean(p), nil
}

// code maps an error to a protocol status.
func code(err error) fwdproto.Code {
	switch {
	case err == nil:
		return fwdproto.CodeOK
	case errors.Is(err, backend.ErrPath):
		return fwdproto.CodePath
	case errors.Is(err, backend.ErrServerDown):
		return fwdproto.CodeServerDown
	case errors.Is(err, fs.ErrNotExist):
		return fwdproto.CodeNotExist
	case errors.Is(err, syscall.ENOTEMPTY): // before ErrExist, which ENOTEMPTY also matches
		return fwdproto.CodeNotEmpty
	case errors.Is(err, fs.ErrExist):
		return fwdproto.CodeExist
	case errors.Is(err, backend.ErrBadArgument), errors.Is(err, fs.ErrInvalid):
		return fwdproto.CodeBadArgument
	case errors.Is(err, backend.ErrClosed), errors.Is(err, ErrShutdown), errors.Is(err, context.Canceled):
		return fwdproto.CodeShutdown
	case errors.Is(err, syscall.EISDIR):
		return fwdproto.CodeIsDir
	case errors.Is(err, syscall.ENOTDIR):
		return fwdproto.CodeNotDir
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP):
		return fwdproto.CodeNotSupported
	case errors.Is(err, syscall.EXDEV):
		return fwdproto.CodeCrossDevice
	case errors.Is(err, syscall.EPERM):
		return fwdproto.CodePermission
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fwdproto.CodeNoSpace
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fwdproto.CodeNameTooLong
	case errors.Is(err, errLocked):
		return fwdproto.CodeLocked
	case errors.Is(err, errInterrupted):
		return fwdproto.CodeInterrupted
	case errors.Is(err, fs.ErrPermission):
		return fwdproto.CodePath
	}
	return fwdproto.CodeIO
}
