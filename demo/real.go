package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

// Files in the state directory for the real stack.
const (
	RealStateDir    = "council"         // the Council's JetStream store (learned state in KV)
	RealDecisionLog = "decisions.jsonl" // the Council's decisions of the last real run
	RealPhases      = "phases.csv"      // the last real run's phases on the wall clock (adaptio eval labels --phases)
	realPrefix      = "adaptio.demo"    // subject prefix of the demo's Council group
)

// loggedDecision is a line of the Council service's decision log: the
// decision and its wall-clock time.
type loggedDecision struct {
	council.Decision
	Wall *time.Time `json:"wall,omitempty"`
}

// decisionSink receives the Council service's decision log: it writes every
// line to the log file and hands the decoded decision to the tracker.
// Under a static window, each line is written as the nodes ran it
// (staticDecision).
type decisionSink struct {
	mu    sync.Mutex
	file  *os.File
	buf   []byte
	t0    time.Time
	phase *atomic.Value // string
	trk   *tracker
	nodes int
}

func (s *decisionSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := s.buf[:i+1]
		var l loggedDecision
		if err := json.Unmarshal(s.buf[:i], &l); err == nil {
			l.Decision = s.trk.decision(time.Since(s.t0).Seconds(), s.phase.Load().(string), l.Decision, s.nodes)
			if s.trk.static != 0 {
				b, err := json.Marshal(l)
				if err != nil {
					return 0, err
				}
				line = append(b, '\n')
			}
		}
		if _, err := s.file.Write(line); err != nil {
			return 0, err
		}
		s.buf = s.buf[i+1:]
	}
	return len(p), nil
}

var (
	_ io.Writer    = (*decisionSink)(nil)
	_ http.Handler = (*switchHandler)(nil)
)

// stack is the real stack of the demo, started in one process.
type stack struct {
	cluster  *pfs.Cluster
	backends []backend.Backend
	daemons  []*fwd.Daemon
	anns     []*announce.Announcer
	svc      *service.Service
	clients  []*client.Client
	pfsDir   string
	// phaseServers holds the data servers' counters (all servers
	// together) during each phase run, in the order run.
	phaseServers []dataserver.Stats
	serversAt    dataserver.Stats
	// phaseWakes holds the daemons' idle-worker wake-up latencies (all
	// daemons together) during each phase run, in the order run.
	phaseWakes []fwd.WakeStats
	wakesAt    fwd.WakeStats
}

// wakeStats is the daemons' wake-up latencies, all daemons together.
func (s *stack) wakeStats() fwd.WakeStats {
	var all fwd.WakeStats
	for _, d := range s.daemons {
		all = all.Plus(d.Wakes())
	}
	return all
}

// serverStats is the data servers' counters, all servers together.
func (s *stack) serverStats() dataserver.Stats {
	var all dataserver.Stats
	if s.cluster == nil {
		return all // a posix backend: no model to count
	}
	for _, x := range s.cluster.Stats() {
		all = all.Plus(x.Model)
	}
	return all
}

func (s *stack) shutdown() {
	for _, c := range s.clients {
		c.Close()
	}
	for _, a := range s.anns {
		a.Shutdown()
	}
	for _, d := range s.daemons {
		d.Shutdown()
	}
	for _, b := range s.backends {
		b.Close()
	}
	if s.svc != nil {
		s.svc.Shutdown()
	}
	if s.cluster != nil {
		s.cluster.Shutdown()
	}
	if s.pfsDir != "" {
		os.RemoveAll(s.pfsDir)
	}
}

// start brings up the Council, the PFS, the daemons with their Announcers
// and one client connection per daemon.
func startStack(ctx context.Context, cfg Config, sink io.Writer) (*stack, error) {
	s := &stack{}
	fail := func(err error) (*stack, error) {
		s.shutdown()
		return nil, err
	}
	// An ephemeral key set, in memory: the Council signs its decisions,
	// each Announcer its reports, as in a production setup.
	keys, err := keyring.Generate(cfg.Nodes)
	if err != nil {
		return fail(fmt.Errorf("demo: keys: %w", err))
	}
	s.svc, err = service.New(service.Options{
		Keys: service.Keys{Ring: &keys.Ring, Signer: keys.Council}, Admission: service.Admission{Interval: cfg.Interval},
		Prefix: realPrefix, Port: -1, StateDir: filepath.Join(cfg.StateDir, RealStateDir),
		Core: council.Config{Policy: cfg.Policy, Options: bandit.Options{Epsilon: cfg.Epsilon}, Windows: sched.Windows,
			Nodes: cfg.Nodes, Timeout: min(council.DefaultTimeout, cfg.Interval/2), NoPlan: cfg.NoPlan, Credit: cfg.Credit, MaxPull: cfg.MaxPull, Shadow: cfg.Shadow},
		Seed: cfg.Seed, DecisionLog: sink, Logger: cfg.Logger, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		return fail(fmt.Errorf("demo: council: %w", err))
	}
	if err := s.svc.Start(); err != nil {
		return fail(fmt.Errorf("demo: council: %w", err))
	}
	if !s.svc.Ready(10 * time.Second) {
		return fail(errors.New("demo: council: not ready after 10 s"))
	}
	if cfg.Backend == "" {
		if err := s.startPFS(cfg); err != nil {
			return fail(err)
		}
	}
	window := cfg.Static
	if window == 0 {
		window = sched.DefaultWindow
	}
	for i := 0; i < cfg.Nodes; i++ {
		be, err := s.nodeBackend(cfg, i)
		if err != nil {
			return fail(err)
		}
		s.backends = append(s.backends, be)
		// As many batches in flight as the clients can have requests
		// outstanding: the data servers, not the daemon's workers, decide
		// how fast accesses are served (the simulator's dispatch slots).
		// With several jobs (Jobs), the daemon's QoS gate shares the node
		// between them (adaptio forward --qos).
		d, err := fwd.New(fwd.Options{Backend: be, Scheduler: cfg.schedulerName(), Observe: true, Workers: max(cfg.Processes, 16), QoS: cfg.Jobs > 1,
			Sched:  sched.Config{Node: i, Nodes: cfg.Nodes, Window: window, Aligned: !cfg.ReferenceWindows},
			Logger: cfg.Logger.With("node", i), Registerer: prometheus.NewRegistry()})
		if err != nil {
			return fail(fmt.Errorf("demo: forwarding daemon %d: %w", i, err))
		}
		s.daemons = append(s.daemons, d)
		if err := d.Start(); err != nil {
			return fail(fmt.Errorf("demo: forwarding daemon %d: %w", i, err))
		}
		if !d.Ready(10 * time.Second) {
			return fail(fmt.Errorf("demo: forwarding daemon %d: not ready after 10 s", i))
		}
		var applier announce.Applier = d
		if cfg.Static != 0 {
			applier = nil // no learning: decisions are recorded, not applied
		}
		a, err := announce.New(announce.Options{URL: s.svc.ClientURL(), Prefix: realPrefix, Node: i, Source: d, Applier: applier, Interval: cfg.Interval,
			Default: window, Logger: cfg.Logger.With("node", i), Registerer: prometheus.NewRegistry(),
			Keyring: &keys.Ring, Signer: keys.Nodes[i], NATSOptions: []nats.Option{keys.Nodes[i].NATSOption()}})
		if err != nil {
			return fail(fmt.Errorf("demo: announcer %d: %w", i, err))
		}
		s.anns = append(s.anns, a)
		if err := a.Start(ctx); err != nil {
			return fail(fmt.Errorf("demo: announcer %d: %w", i, err))
		}
		c, err := client.Dial(d.Addr())
		if err != nil {
			return fail(fmt.Errorf("demo: client of daemon %d: %w", i, err))
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

// startPFS starts the emulated PFS of cfg.Servers data servers.
func (s *stack) startPFS(cfg Config) error {
	var err error
	s.pfsDir, err = os.MkdirTemp("", "adaptio-demo-pfs-")
	if err != nil {
		return fmt.Errorf("demo: pfs: %w", err)
	}
	s.cluster, err = pfs.NewCluster(pfs.ClusterOptions{Servers: cfg.Servers, Dir: s.pfsDir, Disk: "hdd", Seed: cfg.Seed,
		Model:  dataserver.Config{TimeScale: cfg.ServerTimeScale, ReadAheadBytes: cfg.ServerReadAhead, Elevator: cfg.ServerElevator},
		Logger: cfg.Logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return fmt.Errorf("demo: pfs: %w", err)
	}
	if err := s.cluster.Start(); err != nil {
		return fmt.Errorf("demo: pfs: %w", err)
	}
	if !s.cluster.Ready(10 * time.Second) {
		return errors.New("demo: pfs: data servers not ready after 10 s")
	}
	return nil
}

// serversNote says what the daemons forward to.
func serversNote(cfg Config) string {
	if cfg.Backend == "" {
		return fmt.Sprintf("%d emulated data servers with the hard-disk model", cfg.Servers)
	}
	kind := cfg.Layout
	if kind == "" {
		kind = posix.LayoutStatic
	}
	return fmt.Sprintf("the directory %s (posix backend, %s layout, %d data servers)", cfg.Backend, kind, cfg.Servers)
}

// nodeBackend opens I/O node i's backend: a client of the emulated PFS, or
// the posix backend over cfg.Backend with its layout kind, whose queues
// must be cfg.Servers.
func (s *stack) nodeBackend(cfg Config, i int) (backend.Backend, error) {
	if cfg.Backend == "" {
		be, err := s.cluster.NodeBackend(i)
		if err != nil {
			return nil, fmt.Errorf("demo: pfs client: %w", err)
		}
		return be, nil
	}
	be, err := posix.Open(posix.Options{Root: cfg.Backend, Layout: cfg.Layout, Static: layout.Default(cfg.Servers),
		MooseFS: cfg.MooseFS, Logger: cfg.Logger.With("node", i)})
	if err != nil {
		return nil, fmt.Errorf("demo: backend %s: %w", cfg.Backend, err)
	}
	if be.Servers() != cfg.Servers {
		be.Close()
		return nil, fmt.Errorf("%w: the %s layout of %s has %d data servers, --servers says %d: give --servers %d",
			ErrBadConfig, be.LayoutKind(), cfg.Backend, be.Servers(), cfg.Servers, be.Servers())
	}
	return be, nil
}

// runReal runs the experiment on the real stack: real bytes through the
// forwarding daemons to the emulated PFS, the Council service deciding.
func runReal(ctx context.Context, cfg Config, rec *record.Recorder, councilHTTP *switchHandler) error {
	logf, err := os.Create(filepath.Join(cfg.StateDir, RealDecisionLog))
	if err != nil {
		return fmt.Errorf("demo: decision log: %w", err)
	}
	defer logf.Close()
	var phase atomic.Value
	phase.Store("")
	t0 := time.Now()
	sink := &decisionSink{file: logf, t0: t0, phase: &phase, trk: newTracker(rec, nil, sched.Windows, cfg.Static), nodes: cfg.Nodes}

	// The static-window comparison runs in the simulator meanwhile.
	var wg sync.WaitGroup
	var static []record.StaticResult
	var staticErr error
	if cfg.Compare > 0 && !cfg.CompareReal {
		wg.Add(1)
		go func() {
			defer wg.Done()
			static, staticErr = staticSim(ctx, cfg)
			if staticErr == nil && cfg.Static == 0 {
				var learned record.StaticResult
				learned, staticErr = learnSim(ctx, cfg)
				static = append(static, learned)
			}
		}()
	}

	st, err := startStack(ctx, cfg, sink)
	if err != nil {
		wg.Wait()
		return err
	}
	councilHTTP.set(st.svc.Handler())
	defer councilHTTP.set(nil)
	carried := pulls(st.svc.Status())
	rec.UpdateMeta(func(m *record.Meta) {
		m.CarriedOver = carried
		m.DecisionLog = filepath.Join(cfg.StateDir, RealDecisionLog)
		m.StateDir = filepath.Join(cfg.StateDir, RealStateDir)
		m.Notes = append(m.Notes,
			fmt.Sprintf("Real stack in one process: a Council service (embedded NATS at %s, learned state in JetStream KV), %s, %d forwarding daemons running TWINS (%s), each with an Announcer reporting every second; the clients are %d goroutines moving real bytes, verified on read.",
				st.svc.ClientURL(), serversNote(cfg), cfg.Nodes, windowsNote(cfg), cfg.Processes),
			learningNote(cfg))
		switch {
		case cfg.Compare > 0 && cfg.CompareReal:
			m.StaticOn = "real"
			m.Notes = append(m.Notes, fmt.Sprintf("The static-window comparison below ran on this real stack after the learning run: %d iterations under each window, after one warm-up iteration not counted, with a fresh Council that does not apply its decisions.", cfg.Compare))
		case cfg.Compare > 0:
			m.StaticOn = "sim"
			m.Notes = append(m.Notes, "The static-window comparison below ran in the simulator (same experiment, virtual time), with a simulated learning run for reference: its times are the simulator's, not this run's.")
		}
	})
	if carried > 0 {
		rec.AddEvent(0, "info", fmt.Sprintf("learning continues from %s: %d bandit pulls carried over", cfg.StateDir, carried))
	}

	// Estimates follow the Council's state each second.
	stopEst := make(chan struct{})
	estDone := make(chan struct{})
	go func() {
		defer close(estDone)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-stopEst:
				return
			case <-tk.C:
				rec.SetEstimates(estimates(st.svc.Status()))
				rec.SetElapsed(time.Since(t0).Seconds())
			}
		}
	}()

	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	runErr := realLoop(runCtx, cfg, rec, st, &phase, t0)
	if errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() == nil {
		rec.AddEvent(time.Since(t0).Seconds(), "info", fmt.Sprintf("stopped at --duration %v", cfg.Duration))
		runErr = nil
	}
	phase.Store("")
	close(stopEst)
	<-estDone
	// Stop reporting, let the Council close its open round, then take the
	// final estimates: the report and the decision log then agree.
	for _, a := range st.anns {
		a.Shutdown()
	}
	settle(st.svc)
	rec.SetEstimates(estimates(st.svc.Status()))
	councilHTTP.set(nil)
	st.shutdown() // the Council persists its learned state on shutdown
	if cfg.Static == 0 {
		rec.AddEvent(time.Since(t0).Seconds(), "info", "learned state saved in "+filepath.Join(cfg.StateDir, RealStateDir))
	}
	wg.Wait()
	if err := writePhases(filepath.Join(cfg.StateDir, RealPhases), rec.Snapshot().Iterations, t0); err != nil {
		rec.AddEvent(time.Since(t0).Seconds(), "error", "phases file: "+err.Error())
	}
	if cfg.Compare > 0 && cfg.CompareReal && runErr == nil && ctx.Err() == nil {
		static, staticErr = staticReal(ctx, cfg, rec, t0)
	}
	if staticErr == nil && len(static) > 0 {
		rec.SetStatic(static)
	} else if staticErr != nil && !errors.Is(staticErr, context.Canceled) {
		rec.AddEvent(time.Since(t0).Seconds(), "error", "static comparison: "+staticErr.Error())
	}
	if errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}

// learningNote says what a decision carries and what it is rewarded with.
func learningNote(cfg Config) string {
	if cfg.Static != 0 {
		return fmt.Sprintf("Learning is off: every I/O node keeps the %v window.", cfg.Static)
	}
	if cfg.NoPlan {
		return "Each decision is one window for every I/O node (--no-plan, the papers' Council). An interval is rewarded with its majority operation's bandwidth while it ran."
	}
	return "Each decision is a window and a plan: a window for reads and one for writes, for the pattern each is expected to take next, which the I/O nodes apply as soon as their requests turn, so that a phase shorter than a decision runs under its own pattern's window (--no-plan: one window). An interval is rewarded with its majority operation's bandwidth while it ran."
}

// windowsNote says which TWINS windows the run uses.
func windowsNote(cfg Config) string {
	if cfg.ReferenceWindows {
		return "the reference's windows, each starting at the first dispatch after the last ended"
	}
	return "aligned windows: slots of one clock, so the I/O nodes never serve one data server together"
}

// writePhases writes the run's phases, one line per iteration of a phase
// followed by one per process of each I/O node (its end and bytes) when
// known, on the wall clock (t0 is the run's start) in the format of
// adaptio eval labels --phases, so the decision log can be judged and
// exported for training like any application's.
func writePhases(path string, its []record.Iteration, t0 time.Time) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		fmt.Fprintln(w, "phase,start,end,bytes,node")
		for _, it := range its {
			start := t0.Add(time.Duration(it.Start * float64(time.Second)))
			wall := func(secs float64) string {
				return start.Add(time.Duration(secs * float64(time.Second))).UTC().Format(time.RFC3339Nano)
			}
			if _, err := fmt.Fprintf(w, "%s,%s,%s,%d,\n", it.Phase, wall(0), wall(it.Seconds), it.Bytes); err != nil {
				return err
			}
			for n, s := range it.Nodes {
				for _, p := range s.Parts() { // one line per process when known
					if _, err := fmt.Fprintf(w, "%s,%s,%s,%d,%d\n", it.Phase, wall(0), wall(min(p.Seconds, it.Seconds)), p.Bytes, n); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// nodeSpans returns each I/O node's part of a phase: its processes (in
// blocks, fwdbench.ClientOf; client k is I/O node k) end when the last of
// them does, having moved their share of the phase's bytes (every pass),
// each process its equal part by its own end (record.NodeSpan.Ends).
func nodeSpans(ph fwdbench.Phase, p workload.Pattern, nodes int) []record.NodeSpan {
	if nodes <= 1 || p.Processes < 1 || len(ph.ProcessEnds) != p.Processes {
		return nil
	}
	spans := make([]record.NodeSpan, nodes)
	perProcess := ph.Bytes / int64(p.Processes)
	for proc, end := range ph.ProcessEnds {
		s := &spans[fwdbench.ClientOf(proc, p.Processes, nodes)]
		s.Seconds = max(s.Seconds, end.Seconds())
		s.Bytes += perProcess
		s.Ends = append(s.Ends, max(math.Round(end.Seconds()*1e4)/1e4, 1e-4)) // 0.1 ms: the report stays small
	}
	return spans
}

// settle waits until the Council has closed no round for longer than its
// round timeout (at most 3 s).
func settle(svc *service.Service) {
	quiet := council.DefaultTimeout + 200*time.Millisecond
	last, since := svc.LastDecision().Round, time.Now()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if r := svc.LastDecision().Round; r != last {
			last, since = r, time.Now()
		}
		if time.Since(since) > quiet {
			return
		}
	}
}

// realLoop runs the iterations: per iteration SS write, SS read, and with
// Mix FPP write and SC read (which reads back the shared file SS wrote).
func realLoop(ctx context.Context, cfg Config, rec *record.Recorder, st *stack, phase *atomic.Value, t0 time.Time) error {
	phases := cfg.Phases()
	extra := st.clients[1:]
	for it := 0; it < cfg.Iterations; it++ {
		opt := fwdbench.Options{Dir: "demo", Clients: extra, Seed: uint64(it), Keep: true}
		for _, p := range phases {
			if err := ctx.Err(); err != nil {
				return err
			}
			phase.Store(p.Name)
			now := time.Since(t0).Seconds()
			rec.AddEvent(now, "phase", fmt.Sprintf("iteration %d: start %s", it+1, p.Name))
			var ph fwdbench.Phase
			var err error
			switch {
			case p.Pattern.Op == rw.Write:
				o := opt
				o.NoVerify = true
				o.Keep = p.Pattern.Files() == 1 // the shared file is read back by the read phases
				var res fwdbench.Result
				res, err = fwdbench.Run(ctx, st.clients[0], p.Pattern, o)
				ph = res.Write
			default:
				o := opt
				o.ReadPasses = cfg.ReadPasses
				ph, err = fwdbench.Verify(ctx, st.clients[0], p.Pattern, o)
			}
			if err != nil {
				return fmt.Errorf("demo: %s: %w", p.Name, err)
			}
			all := st.serverStats()
			st.phaseServers = append(st.phaseServers, all.Minus(st.serversAt))
			st.serversAt = all
			wakes := st.wakeStats()
			st.phaseWakes = append(st.phaseWakes, wakes.Minus(st.wakesAt))
			st.wakesAt = wakes
			workload := p.Pattern.String()
			if p.Pattern.Op == rw.Read && cfg.ReadPasses > 1 {
				workload += fmt.Sprintf(", read %d times", cfg.ReadPasses)
			}
			rec.AddIteration(record.Iteration{Phase: p.Name, Workload: workload, Start: now,
				Seconds: ph.Makespan.Seconds(), Bytes: ph.Bytes, Nodes: nodeSpans(ph, p.Pattern, len(st.clients))})
		}
		phase.Store("")
		if err := st.clients[0].Unlink(fwdbench.FileName("demo", phases[0].Pattern, 0)); err != nil {
			return fmt.Errorf("demo: cleaning up: %w", err)
		}
	}
	return nil
}

// learnSim runs the learning experiment in the simulator with a fresh
// Council core and returns its last-quarter summary, the reference row of
// the real demo's static comparison.
func learnSim(ctx context.Context, cfg Config) (record.StaticResult, error) {
	c := cfg
	c.Sim, c.Static, c.Compare, c.Out, c.Pace, c.Duration = true, 0, -1, nil, 0, 0
	c.ReadPasses = 1 // the simulator reads each phase once
	c.Iterations = max(cfg.Iterations, 8)
	dir, err := os.MkdirTemp("", "adaptio-demo-learnsim-")
	if err != nil {
		return record.StaticResult{}, err
	}
	defer os.RemoveAll(dir)
	c.StateDir = dir
	r := record.New(c.meta("sim"))
	if err := runSim(ctx, c, r); err != nil {
		return record.StaticResult{}, err
	}
	s := record.Summary(r.Snapshot().Iterations)
	s.Label = "learning (simulator, last quarter)"
	return s, nil
}

// staticReal runs Compare iterations of the experiment on the real stack
// under each TWINS window in turn (a fresh stack each time, its Council
// deciding nothing that is applied), and returns the mean time per phase.
// Then it confirms the winners: each window that came out best in a phase
// or in the cycle runs Compare iterations again, and its row becomes the
// mean over both runs (Confirmed), until every window best in a phase or
// the cycle has been run again. The lowest of 7 means of 3 noisy
// iterations is, on average, lower than its window's true time (the
// winner's curse): in 8 real demo runs, learning's reads at the best static
// read window took 2.2% longer on average than that window's row, and at 5
// other windows 1.7% less (docs/performance.md, "Does learning beat the
// default window on the demo?"). Against a row
// measured again, the targets judge learning by what the window does, not
// by its luckiest draw.
func staticReal(ctx context.Context, cfg Config, rec *record.Recorder, t0 time.Time) ([]record.StaticResult, error) {
	var out []record.StaticResult
	runs := map[time.Duration][]record.Iteration{}
	for i, w := range sched.Windows {
		rec.AddEvent(time.Since(t0).Seconds(), "info", fmt.Sprintf("static comparison on the real stack: window %v (%d of %d)", w, i+1, len(sched.Windows)))
		run, err := staticRealRun(ctx, cfg, w)
		if err != nil {
			return out, fmt.Errorf("window %v: %w", w, err)
		}
		runs[w] = run.Iterations
		out = append(out, run.Result)
		rec.SetStatic(out)
	}
	// A window run again may lose its place to one that was not: run
	// again until every winner has been (at most every window once).
	for again := 1; ; again++ {
		winners := record.Winners(out)
		i := slices.IndexFunc(out, func(r record.StaticResult) bool {
			return !r.Confirmed && slices.Contains(winners, r.Window)
		})
		if i < 0 {
			return out, nil
		}
		w := out[i].Window
		rec.AddEvent(time.Since(t0).Seconds(), "info", fmt.Sprintf("static comparison on the real stack: window %v again, best in a phase or the cycle (%d run again)", w, again))
		run, err := staticRealRun(ctx, cfg, w)
		if err != nil {
			return out, fmt.Errorf("window %v again: %w", w, err)
		}
		sr := record.CycleMean(append(runs[w], run.Iterations...))
		sr.Window, sr.Label, sr.Confirmed = w, "", true
		out[i] = sr
		rec.SetStatic(out)
	}
}

// staticRun is one static-window run of the experiment on the real stack.
type staticRun struct {
	Result     record.StaticResult // mean seconds per phase
	Iterations []record.Iteration  // every phase run, in the order run
	Servers    []dataserver.Stats  // the data servers' counters during each phase run, in the order run
	Wakes      []fwd.WakeStats     // the daemons' wake-up latencies during each phase run, in the order run
}

// staticRealRun runs Compare iterations of the experiment under window w on
// a fresh real stack, its Council deciding nothing that is applied, and
// returns the mean time per phase, every phase run's time and the data
// servers' counters. A warm-up iteration runs first and is not counted: a
// fresh stack's first iteration is its slowest (files created, caches and
// connections cold: 50% slower on MooseFS, docs/performance.md), while the
// learning run is judged on its last iterations, so counting it would
// credit learning with the static windows' cold start.
func staticRealRun(ctx context.Context, cfg Config, w time.Duration) (staticRun, error) {
	c := cfg
	c.Static, c.Iterations = w, cfg.Compare+staticWarmUp
	dir, err := os.MkdirTemp("", "adaptio-demo-static-")
	if err != nil {
		return staticRun{}, err
	}
	defer os.RemoveAll(dir)
	c.StateDir = dir
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return staticRun{}, err
	}
	defer devnull.Close()
	r := record.New(c.meta("real"))
	var phase atomic.Value
	phase.Store("")
	t0 := time.Now()
	sink := &decisionSink{file: devnull, t0: t0, phase: &phase, trk: newTracker(r, nil, sched.Windows, w), nodes: c.Nodes}
	st, err := startStack(ctx, c, sink)
	if err != nil {
		return staticRun{}, err
	}
	err = realLoop(ctx, c, r, st, &phase, t0)
	st.shutdown()
	servers, wakes := st.phaseServers, st.phaseWakes
	if err != nil {
		return staticRun{}, err
	}
	its := r.Snapshot().Iterations
	warm := 0 // phase runs of the warm-up iterations
	for warm < len(its) && its[warm].K <= staticWarmUp {
		warm++
	}
	its = its[warm:]
	if len(servers) >= warm {
		servers = servers[warm:]
	}
	if len(wakes) >= warm {
		wakes = wakes[warm:]
	}
	sr := record.CycleMean(its)
	sr.Window, sr.Label = w, ""
	return staticRun{Result: sr, Iterations: its, Servers: servers, Wakes: wakes}, nil
}

// staticWarmUp is the number of iterations each static run makes before
// those it counts (staticRealRun).
const staticWarmUp = 1
