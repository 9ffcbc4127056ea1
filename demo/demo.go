package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/demo/dashboard"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/internal/statelock"
	"github.com/adaptio/adaptio/labels"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

// Errors of the demo.
var (
	ErrBadConfig   = errors.New("demo: invalid configuration")
	ErrNoRealStack = errors.New("demo: the real stack is not available in this build")
)

// Config configures one demo run. Zero fields take the defaults listed.
type Config struct {
	Sim        bool          // run in the simulator, in virtual time
	Duration   time.Duration // stop after this much run time (wall clock; virtual time with Sim); 0: no limit
	Iterations int           // experiment iterations, each one pass of every phase (default: 120 with Sim, DefaultIterations otherwise)
	StateDir   string        // learned state and decision log (default ./adaptio-state)
	Static     time.Duration // a fixed TWINS window instead of learning (0: learn); must be one of sched.Windows
	HTTP       string        // dashboard address ("" = none; port 0 picks a free one)
	Report     string        // report file (default report.html; "-" = none)

	Nodes       int   // I/O nodes (default 4)
	Servers     int   // PFS data servers (default 4)
	Processes   int   // client processes (default 128)
	RequestSize int64 // bytes per request (default 32 KiB)
	PhaseBytes  int64 // bytes each shared-file phase moves (default 1 GiB with Sim, 256 MiB otherwise)
	// FPPBytes is what the file-per-process write moves (default an
	// eighth of PhaseBytes). That phase runs as fast under every window
	// (README, "The demo"), so its length would only dilute the
	// comparison's time.
	FPPBytes int64
	Mix      bool // add file-per-process and shared-contiguous phases to each iteration
	// ReadPasses is how many times in a row each read phase of the real
	// stack reads its file, as one phase (default DefaultReadPasses; the
	// simulator reads once). A longer read phase is less noisy against its
	// window's effect, so it teaches the Council more per phase.
	ReadPasses  int
	Policy      string  // bandit policy (default DefaultPolicy)
	Epsilon     float64 // exploration probability (0: the policy's default)
	Seed        uint64  // random seed
	Compare     int     // iterations of each static-window run for the comparison (default DefaultCompare; -1: skip)
	CompareReal bool    // real stack: run the static comparison on the real stack after learning (default: in the simulator)
	Pace        float64 // Sim only: virtual seconds per wall second (0: as fast as possible)
	// ReferenceWindows runs the reference TWINS windows, each starting at
	// the first dispatch after the previous one ended. By default (false)
	// every I/O node's windows are slots of one clock (sched.Config.Aligned),
	// on the real stack and in the simulator: on the real stack the
	// reference's windows drift apart node by node (README, "The demo").
	ReferenceWindows bool
	// ServerTimeScale multiplies the data servers' modelled service
	// times, on the real stack and in the simulator alike
	// (dataserver.Config.TimeScale; 0: DefaultServerTimeScale).
	ServerTimeScale float64
	// ServerReadAhead is the data servers' page-cache chunk, on the real
	// stack and in the simulator alike (dataserver.Config.ReadAheadBytes;
	// 0: the default, 128 KiB; negative: no page cache, every read goes
	// to the modelled disk).
	ServerReadAhead int64
	// ServerElevator makes the data servers serve their queued accesses in
	// disk-address (C-LOOK) order, as the Linux block layer sorts them,
	// instead of arrival order, on the real stack and in the simulator.
	ServerElevator bool
	// Backend, when set, is a directory (a mounted parallel file system)
	// the real stack's daemons forward to, one posix backend each with the
	// layout kind Layout (posix.Options), instead of the emulated PFS; the
	// clients' files go under Backend/demo, removed at each iteration's end. Its queues
	// must number Servers. Needs the real stack, and CompareReal unless
	// the comparison is skipped (the simulator models the emulated PFS).
	Backend string
	Layout  string               // the posix layout kind ("" static)
	MooseFS posix.MooseFSOptions // the moosefs layout kind's settings
	// Interval is how often each Announcer reports and the Council decides
	// (default DefaultInterval; the papers' is 1 s); the simulator observes
	// at the same interval. A shorter one lets the Council act within
	// phases shorter than a second.
	Interval time.Duration
	// NoPlan makes the Council decide one window only (the papers'); by
	// default each decision carries a window per direction of requests,
	// applied by the I/O nodes as their requests turn (council.Config.NoPlan).
	NoPlan bool
	// Shadow runs the Council in shadow mode (council.Config.Shadow): the
	// default window stays in force, learning's choices are logged.
	Shadow bool
	// Credit is how rewards teach the Council's bandits
	// (council.Config.Credit; "" the default, phase).
	Credit string
	// MaxPull is the longest pull of the phase credit
	// (council.Config.MaxPull; default DefaultMaxPull).
	MaxPull time.Duration
	// SimDispatchDelay is the simulated I/O nodes' delay from a request's
	// arrival to its dispatch when they are idle (sim.Config.DispatchDelay):
	// the real daemons' wake-up on the host, for --rank's comparison.
	SimDispatchDelay time.Duration

	// Jobs, when 2, runs the two-job scenario instead (RunJobs): a job
	// writing and reading a shared file in 1D-strided requests and a job
	// reading a file per process share the I/O nodes, each with half of
	// Processes, every daemon with its QoS gate, the Council detecting each
	// job's pattern in what each node reports. 0 or 1: the one-application
	// experiment.
	Jobs int

	// scheduler replaces TWINS on every I/O node (Rank's FIFO row); ""
	// is TWINS.
	scheduler string

	// OnDashboard, if set, is called with the dashboard's URL once it listens.
	OnDashboard func(url string)

	Out    io.Writer    // live view (nil: none)
	TTY    bool         // Out is a terminal: redraw in place
	Logger *slog.Logger // nil: discard
}

// Defaults.
const (
	DefaultStateDir    = "adaptio-state"
	DefaultReport      = "report.html"
	DefaultNodes       = 4
	DefaultServers     = 4
	DefaultProcesses   = 128
	DefaultRequestSize = 32 << 10
	// DefaultCompare is the iterations of each static window in the
	// comparison (README, "The demo": with 128 MiB phases and 2
	// iterations a window, the read phases' means moved by a third
	// between runs).
	DefaultCompare = 3
	// DefaultInterval is half the papers' second: the demo's shared
	// strided reads last 0.8 to 1.4 s a pass, three or four half-seconds,
	// where at 1 s reports a read of three intervals left its tail to a
	// pull of its own.
	DefaultInterval = 500 * time.Millisecond
	// DefaultReadPasses of the real stack: each read phase reads its file
	// twice in a row. One pass of the shared strided file took 0.8 to 1.4 s
	// and varied by 13% of its mean from one iteration to the next under
	// one window, as much as the 7 windows differ; two passes vary by 8%
	// (docs/performance.md, "Does learning beat the default window on the
	// demo?"). The simulator reads once (its
	// phases are 1 GiB).
	DefaultReadPasses = 2
	// DefaultMaxPull is the demo Council's longest pull: a read phase of
	// two passes (1.2 to 1.7 s, up to 6 half-second reports) is one pull,
	// where council.DefaultMaxPull (2 s) left the slower windows' tails to
	// pulls of their own.
	DefaultMaxPull = 3 * time.Second
	// DefaultIterations of the real stack: the shared strided reads are one
	// pull a phase (council.CreditPhase), and 24 iterations left their 7
	// windows 24 pulls, most of them the policy's warm-up (one run
	// exploited the best read window from its 20th iteration); 48 take
	// about 7.5 minutes.
	DefaultIterations = 48
	// DefaultServerTimeScale is 1: the data servers as modelled.
	DefaultServerTimeScale = 1.0
	DefaultPolicy          = council.DefaultPolicy
)

// WithDefaults returns c with zero fields set.
func (c Config) WithDefaults() Config {
	if c.Iterations == 0 {
		c.Iterations = DefaultIterations
		if c.Sim {
			c.Iterations = 120
		}
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.Report == "" {
		c.Report = DefaultReport
	}
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.Processes == 0 {
		c.Processes = DefaultProcesses
	}
	if c.RequestSize == 0 {
		c.RequestSize = DefaultRequestSize
	}
	if c.PhaseBytes == 0 {
		c.PhaseBytes = 256 << 20
		if c.Sim {
			c.PhaseBytes = 1 << 30
		}
	}
	if c.Policy == "" {
		c.Policy = DefaultPolicy
	}
	if c.FPPBytes == 0 {
		c.FPPBytes = c.PhaseBytes / 8
	}
	if c.Compare == 0 {
		c.Compare = DefaultCompare
	}
	if c.ReadPasses == 0 {
		c.ReadPasses = DefaultReadPasses
		if c.Sim {
			c.ReadPasses = 1
		}
	}
	if c.MaxPull == 0 {
		c.MaxPull = DefaultMaxPull
	}
	if c.ServerTimeScale == 0 {
		c.ServerTimeScale = DefaultServerTimeScale
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks c after defaults.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Iterations < 1:
		return bad("iterations %d, want >= 1", c.Iterations)
	case c.Duration < 0:
		return bad("duration %v, want >= 0", c.Duration)
	case c.Static != 0 && !slices.Contains(sched.Windows, c.Static):
		return bad("static window %v is not one of the TWINS windows %v", c.Static, sched.Windows)
	case c.Interval < 10*time.Millisecond || c.Interval > time.Minute:
		return bad("interval %v, want 10ms to 1m", c.Interval)
	case c.Nodes < 1 || c.Servers < 1:
		return bad("%d I/O nodes and %d data servers, want >= 1 each", c.Nodes, c.Servers)
	case c.Epsilon < 0 || c.Epsilon > 1:
		return bad("epsilon %v, want in [0, 1]", c.Epsilon)
	case c.Pace < 0:
		return bad("pace %v, want >= 0", c.Pace)
	case c.MaxPull < 0:
		return bad("longest pull %v, want > 0", c.MaxPull)
	case c.MaxPull > 0 && c.MaxPull < c.Interval:
		return bad("longest pull %v is shorter than the report interval %v: a pull is at least one interval", c.MaxPull, c.Interval)
	case !slices.Contains([]string{"", council.CreditPhase, council.CreditRound, council.CreditNode}, c.Credit):
		return bad("credit %q, want %s, %s or %s", c.Credit, council.CreditPhase, council.CreditRound, council.CreditNode)
	case c.ReadPasses < 1 || c.ReadPasses > 16:
		return bad("read passes %d, want 1 to 16", c.ReadPasses)
	case c.Sim && c.ReadPasses > 1:
		return bad("read passes %d: the simulator reads each phase once (its phases are 1 GiB); drop --read-passes or --sim", c.ReadPasses)
	case !(c.ServerTimeScale > 0) || c.ServerTimeScale > 100:
		return bad("server time scale %v, want in (0, 100]", c.ServerTimeScale)
	case c.Jobs < 0 || c.Jobs > 2:
		return bad("%d jobs, want 2 (the two-job scenario) or none", c.Jobs)
	case c.Jobs == 2 && (c.Backend != "" || c.CompareReal):
		return bad("the two-job scenario runs on the emulated PFS and compares nothing: drop --backend and --compare-real")
	case c.Backend != "" && c.Sim:
		return bad("a posix backend (%s) runs on the real stack only; drop --sim or --backend", c.Backend)
	case !slices.Contains(bandit.Names(), c.Policy):
		return bad("policy %q, want one of %v", c.Policy, bandit.Names())
	}
	if c.Report != "" && c.Report != "-" {
		if err := atomicfile.CheckCreate(c.Report); err != nil {
			return bad("report %s: %v", c.Report, err)
		}
	}
	for _, p := range c.Phases() {
		if err := p.Pattern.Validate(); err != nil {
			return bad("phase %s: %v", p.Name, err)
		}
	}
	return nil
}

// Phase is one step of an experiment iteration.
type Phase struct {
	Name    string // e.g. "SS write": detected class and operation
	Pattern workload.Pattern
}

// Phases returns one iteration of the experiment: the papers' online
// experiment (Bez et al., FGCS 2020, V-C: processes write, then read, a shared file in
// 1D-strided requests) and, with Mix, a file-per-process write and a
// shared-contiguous read, so several bandit instances learn.
func (c Config) Phases() []Phase {
	p := workload.Pattern{Processes: c.Processes, Layout: workload.Shared, Spatiality: workload.Strided,
		RequestSize: c.RequestSize, TotalBytes: c.PhaseBytes}
	w, r := p, p
	w.Op, r.Op = rw.Write, rw.Read
	out := []Phase{{"SS write", w}, {"SS read", r}}
	if c.Mix {
		f := p
		f.Layout, f.Spatiality, f.Op = workload.FilePerProcess, workload.Contiguous, rw.Write
		f.TotalBytes = c.FPPBytes
		s := p
		s.Spatiality, s.Op = workload.Contiguous, rw.Read
		out = append(out, Phase{"FPP write", f}, Phase{"SC read", s})
	}
	return out
}

func (c Config) meta(mode string) record.Meta {
	m := record.Meta{Mode: mode, Started: time.Now().UTC(), Nodes: c.Nodes, Servers: c.Servers,
		Windows: slices.Clone(sched.Windows), StaticWindow: c.Static, Policy: c.Policy, Epsilon: c.Epsilon,
		StateDir: c.StateDir, ValueUnit: "MiB/s", Iterations: c.Iterations, Compare: max(c.Compare, 0), Limit: c.Duration.Seconds()}
	for _, p := range c.Phases() {
		m.Phases = append(m.Phases, p.Name)
	}
	p := c.Phases()[0].Pattern
	m.Workload = fmt.Sprintf("%d processes write, then read, a shared file in %s 1D-strided requests (%s per phase)",
		p.Processes, size(p.RequestSize), size(p.TotalBytes))
	if ph := c.Phases(); c.Mix && len(ph) > 2 {
		m.Workload += fmt.Sprintf(", then write a file per process (%s in all) and read the shared file contiguously",
			size(ph[2].Pattern.TotalBytes))
	}
	if c.ReadPasses > 1 {
		m.Workload += fmt.Sprintf("; each read phase reads its file %d times in a row", c.ReadPasses)
	}
	m.Workload += fmt.Sprintf("; %d iterations.", c.Iterations)
	m.Title = "adaptio demo report"
	if mode == "sim" {
		m.Title += " (simulator)"
	}
	return m
}

func size(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

// switchHandler serves the Council service's /metrics, /status and
// /healthz on the dashboard once the service runs (503 before and after).
type switchHandler struct{ h atomic.Pointer[http.Handler] }

func (s *switchHandler) set(h http.Handler) {
	if h == nil {
		s.h.Store(nil)
		return
	}
	s.h.Store(&h)
}

func (s *switchHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "the Council service is not running (the simulator's Council has no HTTP endpoints)", http.StatusServiceUnavailable)
}

// Run runs the demo: it starts the dashboard (if HTTP is set), runs the
// experiment in the simulator or on the real stack, shows the live view on
// Out, saves the learned state, and writes the report, also when ctx is
// cancelled (the report then says the run was interrupted). It returns the
// recording.
func Run(ctx context.Context, cfg Config) (record.Recording, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return record.Recording{}, err
	}
	if cfg.Jobs == 2 {
		return record.Recording{}, fmt.Errorf("%w: two jobs: call RunJobs", ErrBadConfig)
	}
	if cfg.Backend != "" && cfg.Compare > 0 && !cfg.CompareReal {
		return record.Recording{}, fmt.Errorf("%w: with a posix backend the static-window comparison must run on it: add --compare-real, or skip it with --compare -1", ErrBadConfig)
	}
	lock, err := statelock.Acquire(cfg.StateDir)
	if err != nil {
		return record.Recording{}, fmt.Errorf("demo: %w", err)
	}
	defer lock.Release()
	mode := "real"
	if cfg.Sim {
		mode = "sim"
	}
	rec := record.New(cfg.meta(mode))
	var url string
	councilHTTP := &switchHandler{}
	if cfg.HTTP != "" {
		ln, err := net.Listen("tcp", cfg.HTTP)
		if errors.Is(err, syscall.EADDRINUSE) {
			// The port is taken (another demo?): take a free one on the same host.
			host, _, _ := net.SplitHostPort(cfg.HTTP)
			ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
		}
		if err != nil {
			return record.Recording{}, fmt.Errorf("demo: dashboard: %w", err)
		}
		url = "http://" + ln.Addr().String() + "/"
		mux := http.NewServeMux()
		mux.Handle("/", dashboard.Handler(rec))
		for _, p := range []string{"/metrics", "/status", "/healthz"} {
			mux.Handle(p, councilHTTP)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		cfg.Logger.Info("dashboard", "url", url)
		if cfg.OnDashboard != nil {
			cfg.OnDashboard(url)
		}
		if cfg.Out != nil {
			fmt.Fprintf(cfg.Out, "adaptio demo: dashboard at %s\n", url)
			if cfg.Sim && cfg.Pace == 0 {
				fmt.Fprintln(cfg.Out, "adaptio demo: the simulated run takes seconds and its dashboard closes with it; add --pace 20 to watch it live")
			}
		}
	}
	viewDone := make(chan struct{})
	stopView := make(chan struct{})
	if cfg.Out != nil {
		v := &View{W: cfg.Out, TTY: cfg.TTY, Rec: rec, URL: url}
		go func() {
			defer close(viewDone)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopView:
					v.Render()
					return
				case <-t.C:
					v.Render()
				}
			}
		}()
	} else {
		close(viewDone)
	}
	// Resources at the start, every minute and at the end (--verbose shows
	// them): a soak run's evidence that nothing grows.
	logProcStats(cfg.Logger, "process at start")
	stopStats := make(chan struct{})
	go watchProcStats(cfg.Logger, time.Minute, stopStats)
	if cfg.Sim {
		err = runSim(ctx, cfg, rec)
	} else {
		err = runReal(ctx, cfg, rec, councilHTTP)
	}
	close(stopStats)
	runtime.GC()
	logProcStats(cfg.Logger, "process at end (after a GC)")
	if ctx.Err() != nil {
		rec.Interrupt()
	}
	rec.Finish()
	close(stopView)
	<-viewDone
	out := rec.Snapshot()
	if acc := record.LabelAccuracy(out); cfg.Out != nil && len(acc) > 0 {
		fmt.Fprintln(cfg.Out, "adaptio demo: pattern detection, per node-second of each phase (labelled as the phase):")
		labels.Write(cfg.Out, acc)
	}
	// A run that failed leaves an earlier report in place; an interrupted
	// one reports what it did.
	if cfg.Report != "-" && (err == nil || ctx.Err() != nil) {
		rerr := report.WriteFile(cfg.Report, out)
		if rerr != nil && err == nil {
			err = rerr
		}
		if rerr == nil && cfg.Out != nil {
			abs, _ := filepath.Abs(cfg.Report)
			fmt.Fprintf(cfg.Out, "adaptio demo: report written to %s\n", abs)
		}
	}
	return out, err
}
