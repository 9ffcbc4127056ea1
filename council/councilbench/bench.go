package councilbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// ErrBadConfig wraps configuration errors.
var ErrBadConfig = errors.New("councilbench: invalid configuration")

// Config configures a time-to-decision benchmark. Zero fields take the
// defaults listed.
type Config struct {
	Announcers int           // Announcers, one per simulated I/O node (default 768)
	Interval   time.Duration // reporting interval (default 1 s)
	Duration   time.Duration // measured time after the warm-up (default 20 s)
	Warmup     int           // rounds ignored at the start (default 3)
	Conns      int           // in-process: NATS connections the Announcers share (default one per 128)
	// AlignDecision makes the Announcers report one Interval after each
	// decision (their default) instead of on the wall-clock grid
	// (announce.Options.AlignClock, the bench's default).
	AlignDecision bool
	// Procs > 0 runs the Announcers in that many child processes, started
	// by Worker; the Council then has this process to itself, so CPU per
	// round is the Council's (with its embedded NATS server).
	Procs  int
	Worker func(w WorkerConfig) *exec.Cmd
	// URL of an external NATS server ("" : the Council runs in this
	// process with its embedded server on a free loopback port).
	URL      string
	Prefix   string           // subject prefix (default "adaptio.bench")
	Core     council.Config   // the Council's core (Nodes defaults to Announcers)
	Security service.Security // NATS authentication and TLS, for every connection
	Progress io.Writer        // progress lines (nil: none)
	Logger   *slog.Logger     // nil: discard
}

// Result is the benchmark's outcome.
type Result struct {
	Announcers int           `json:"announcers"`
	Procs      int           `json:"procs"`
	Interval   time.Duration `json:"interval_ns"`
	Align      string        `json:"align"`           // "clock" or "decision"
	Rounds     int           `json:"rounds"`          // rounds closed in the measured period
	Deadline   int           `json:"rounds_deadline"` // of which closed by the deadline (some report missing)
	Samples    int           `json:"samples"`         // time-to-decision measurements
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	Mean       time.Duration `json:"mean_ns"`
	// ProcessingPerRound is the Council's handler time per round (decode,
	// detect, learn, decide, publish), measured inside the service.
	ProcessingPerRound time.Duration `json:"processing_per_round_ns"`
	// CPUPerRound is this process's CPU time (user+system) per round; with
	// Procs > 0 that is the Council and its embedded NATS server alone.
	CPUPerRound time.Duration `json:"cpu_per_round_ns"`
}

// WorkerConfig is what one child process runs: Count Announcers for nodes
// First..First+Count-1.
type WorkerConfig struct {
	URL      string
	Prefix   string
	First    int
	Count    int
	Conns    int
	Interval time.Duration
	Warmup   int
	Duration time.Duration
	// AlignDecision: see Config.
	AlignDecision bool
}

func (c Config) withDefaults() Config {
	if c.Announcers == 0 {
		c.Announcers = 768
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 3
	}
	if c.Conns == 0 {
		c.Conns = (c.Announcers + 127) / 128
	}
	if c.Prefix == "" {
		c.Prefix = "adaptio.bench"
	}
	if c.Core.Nodes == 0 {
		c.Core.Nodes = c.Announcers
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Run starts the Council (unless Config.URL is set) and the Announcers,
// lets them report for the warm-up and Duration, and returns the
// time-to-decision distribution and the Council's cost per round.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Announcers < 1 || cfg.Interval <= 0 || cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Conns < 1 || cfg.Procs < 0:
		return Result{}, fmt.Errorf("%w: %+v", ErrBadConfig, cfg)
	case cfg.Procs > 0 && cfg.Worker == nil:
		return Result{}, fmt.Errorf("%w: Procs without a Worker command", ErrBadConfig)
	}
	var svc *service.Service
	url := cfg.URL
	if url == "" {
		var err error
		svc, err = service.New(service.Options{Prefix: cfg.Prefix, Port: -1, Core: cfg.Core, Security: cfg.Security, Logger: cfg.Logger})
		if err != nil {
			return Result{}, err
		}
		if err := svc.Start(); err != nil {
			return Result{}, err
		}
		defer svc.Shutdown()
		url = svc.ClientURL()
	}
	copts, err := cfg.Security.ClientOptions()
	if err != nil {
		return Result{}, err
	}
	// Watch the decisions: rounds, reasons, and when the warm-up ends.
	watch, err := nats.Connect(url, copts...)
	if err != nil {
		return Result{}, err
	}
	defer watch.Close()
	subj := councilmsg.Subjects{Prefix: cfg.Prefix}
	var mu sync.Mutex
	var rounds, deadline int
	var startRound uint64
	warm := make(chan struct{})
	var warmOnce sync.Once
	var cpu0 time.Duration
	var stats0 service.Stats
	if _, err := watch.Subscribe(subj.Decision(), func(m *nats.Msg) {
		d, err := councilmsg.UnmarshalDecision(m.Data)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if startRound == 0 {
			startRound = d.Round
		}
		if d.Round-startRound+1 == uint64(cfg.Warmup) {
			warmOnce.Do(func() {
				cpu0 = cpuTime()
				if svc != nil {
					stats0 = svc.Stats()
				}
				close(warm)
			})
			return
		}
		if d.Round-startRound+1 > uint64(cfg.Warmup) {
			rounds++
			if d.Reason == "deadline" {
				deadline++
			}
		}
	}); err != nil {
		return Result{}, err
	}
	if err := watch.Flush(); err != nil {
		return Result{}, err
	}

	fmt.Fprintf(cfg.Progress, "council bench: %d announcers every %v (%s), warm-up %d rounds, then %v\n",
		cfg.Announcers, cfg.Interval, mode(cfg), cfg.Warmup, cfg.Duration)
	var lat []time.Duration
	total := cfg.Duration + time.Duration(cfg.Warmup+2)*cfg.Interval + 10*time.Second
	runCtx, cancel := context.WithTimeout(ctx, total)
	defer cancel()
	if cfg.Procs == 0 {
		lat, err = runLocal(runCtx, WorkerConfig{URL: url, Prefix: cfg.Prefix, First: 0, Count: cfg.Announcers,
			Conns: cfg.Conns, Interval: cfg.Interval, Warmup: cfg.Warmup, Duration: cfg.Duration, AlignDecision: cfg.AlignDecision}, copts, warm)
	} else {
		lat, err = runProcs(runCtx, cfg, url)
	}
	if err != nil {
		return Result{}, err
	}
	select {
	case <-warm:
	default:
		return Result{}, fmt.Errorf("council bench: warm-up never finished (%d rounds seen)", rounds)
	}
	mu.Lock()
	defer mu.Unlock()
	res := Result{Announcers: cfg.Announcers, Procs: cfg.Procs, Interval: cfg.Interval, Align: "clock", Rounds: rounds, Deadline: deadline, Samples: len(lat)}
	if cfg.AlignDecision {
		res.Align = "decision"
	}
	if rounds > 0 {
		res.CPUPerRound = (cpuTime() - cpu0) / time.Duration(rounds)
		if svc != nil {
			st := svc.Stats()
			if n := st.Rounds - stats0.Rounds; n > 0 {
				res.ProcessingPerRound = (st.Processing - stats0.Processing) / time.Duration(n)
			}
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
		res.Max = lat[len(lat)-1]
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		res.Mean = sum / time.Duration(len(lat))
	}
	return res, nil
}

func mode(cfg Config) string {
	if cfg.Procs > 0 {
		return fmt.Sprintf("%d child processes", cfg.Procs)
	}
	return fmt.Sprintf("in-process, %d connections", cfg.Conns)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runProcs starts the child processes and merges their measurements.
func runProcs(ctx context.Context, cfg Config, url string) ([]time.Duration, error) {
	type child struct {
		cmd *exec.Cmd
		out io.ReadCloser
		lat []time.Duration
		err error
	}
	children := make([]*child, cfg.Procs)
	per := (cfg.Announcers + cfg.Procs - 1) / cfg.Procs
	for p := range cfg.Procs {
		first := p * per
		count := min(per, cfg.Announcers-first)
		if count <= 0 {
			children = children[:p]
			break
		}
		cmd := cfg.Worker(WorkerConfig{URL: url, Prefix: cfg.Prefix, First: first, Count: count,
			Conns: max(1, (count+127)/128), Interval: cfg.Interval, Warmup: cfg.Warmup, Duration: cfg.Duration, AlignDecision: cfg.AlignDecision})
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start worker %d: %w", p, err)
		}
		children[p] = &child{cmd: cmd, out: out}
	}
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r workerResult
			if err := json.NewDecoder(bufio.NewReader(c.out)).Decode(&r); err != nil {
				c.err = fmt.Errorf("worker output: %w", err)
			}
			c.lat = r.Latencies
			if err := c.cmd.Wait(); err != nil && c.err == nil {
				c.err = fmt.Errorf("worker: %w", err)
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, c := range children {
		if c.err != nil {
			return nil, c.err
		}
		all = append(all, c.lat...)
	}
	return all, nil
}

type workerResult struct {
	Latencies []time.Duration `json:"lat_ns"`
}

// RunWorker runs one child's Announcers and writes its measurements to out
// as one JSON object (the parent reads it).
func RunWorker(ctx context.Context, w WorkerConfig, sec service.Security, out io.Writer) error {
	copts, err := sec.ClientOptions()
	if err != nil {
		return err
	}
	lat, err := runLocal(ctx, w, copts, nil)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(workerResult{Latencies: lat})
}

// runLocal runs w.Count Announcers in this process on w.Conns shared
// connections; each records the time to decision of every round after its
// w.Warmup first decisions. It returns after the warm-up plus w.Duration.
func runLocal(ctx context.Context, w WorkerConfig, copts []nats.Option, warm <-chan struct{}) ([]time.Duration, error) {
	conns := make([]*nats.Conn, w.Conns)
	for i := range conns {
		nc, err := nats.Connect(w.URL, append([]nats.Option{nats.Name("adaptio-council-bench")}, copts...)...)
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		conns[i] = nc
	}
	var mu sync.Mutex
	var lat []time.Duration
	warmed := make(chan struct{})
	var warmedOnce sync.Once
	as := make([]*announce.Announcer, w.Count)
	for i := range as {
		node := w.First + i
		src := newSource(node)
		seen := 0
		a, err := announce.New(announce.Options{
			Conn: conns[i%len(conns)], Prefix: w.Prefix, Node: node, Interval: w.Interval,
			Source: src, Applier: src, Instance: uint64(node) + 1, AlignClock: !w.AlignDecision,
			OnDecision: func(_ councilmsg.Decision, since time.Duration) {
				seen++
				if seen <= w.Warmup {
					if seen == w.Warmup {
						warmedOnce.Do(func() { close(warmed) })
					}
					return
				}
				if since > 0 {
					mu.Lock()
					lat = append(lat, since)
					mu.Unlock()
				}
			},
		})
		if err != nil {
			return nil, err
		}
		as[i] = a
	}
	for _, a := range as {
		if err := a.Start(ctx); err != nil {
			return nil, err
		}
		defer a.Shutdown()
	}
	if warm == nil {
		warm = warmed
	}
	select {
	case <-warm:
	case <-ctx.Done():
		return nil, fmt.Errorf("council bench: no decisions (warm-up not reached): %w", ctx.Err())
	}
	select {
	case <-time.After(w.Duration):
	case <-ctx.Done():
	}
	for _, a := range as {
		a.Shutdown()
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(lat), nil
}

// source is a synthetic I/O node: one access pattern (by node index), a
// bandwidth that depends on the window in force, some noise.
type source struct {
	mu     sync.Mutex
	node   int
	rng    *rand.Rand
	window time.Duration
	last   time.Time
}

func newSource(node int) *source {
	return &source{node: node, rng: rand.New(rand.NewPCG(uint64(node), 0xbe)), window: sched.DefaultWindow}
}

func (s *source) CloseInterval(now time.Time) access.Observation {
	s.mu.Lock()
	defer s.mu.Unlock()
	iv := time.Second
	if !s.last.IsZero() {
		iv = now.Sub(s.last)
	}
	s.last = now
	const req = 1 << 20
	o := access.Observation{Node: s.node, Interval: iv, DataServers: 4, Clients: 8, Processes: 64,
		Op: rw.Write, ReqAvg: req, ReqMin: req, ReqMax: req, Window: s.window}
	switch s.node % 3 {
	case 0: // file per process
		o.FileHandles, o.OffsetDist, o.ProcDist, o.Sharers = 64, req, req, 1
	case 1: // shared file, contiguous regions (1 GiB apart)
		o.FileHandles, o.OffsetDist, o.ProcDist, o.Sharers = 1, 1<<30, req, 64
	default: // shared file, 1D-strided
		o.FileHandles, o.OffsetDist, o.ProcDist, o.Sharers, o.ReqAvg, o.ReqMin, o.ReqMax = 1, 64*32<<10, 64*32<<10, 64, 32<<10, 32<<10, 32<<10
	}
	// Best window differs by pattern; 10% noise.
	best := []time.Duration{250 * time.Microsecond, 2 * time.Millisecond, 8 * time.Millisecond}[s.node%3]
	ratio := float64(s.window) / float64(best)
	if ratio > 1 {
		ratio = 1 / ratio
	}
	o.Bandwidth = 5e8 * (0.5 + 0.5*ratio) * (0.9 + 0.2*s.rng.Float64())
	o.Bytes = int64(o.Bandwidth * iv.Seconds())
	o.Requests = max(1, o.Bytes/int64(o.ReqAvg))
	return o
}

func (s *source) ApplyWindow(w time.Duration) error {
	s.mu.Lock()
	s.window = w
	s.mu.Unlock()
	return nil
}
