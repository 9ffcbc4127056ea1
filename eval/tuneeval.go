package eval

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
	"github.com/adaptio/adaptio/workload"
)

// The knobs the evaluation tunes on every I/O node, named as the daemon
// names them (fwd.KnobAggregate, fwd.KnobPerServer), at the daemon's
// defaults: IOFSL's 16 requests per access, and ionode.PerServerLimit of
// its 16 workers over 4 data servers.
const (
	knobAggregate = "aggregate"
	knobPerServer = "per_server_in_flight"
)

// TuneKnobs are the knobs at the forwarder's defaults and their ranges.
func TuneKnobs() []knob.Knob {
	return []knob.Knob{
		{Name: knobAggregate, Value: 16, Min: 1, Max: 256},
		{Name: knobPerServer, Value: ionode.PerServerLimit(16, sim.DefaultServers), Min: 1, Max: 64},
	}
}

// TuneWorkload is one IOR-like workload: every process of every client
// node reads or writes its own contiguous region, in its own file or in
// one shared file.
type TuneWorkload struct {
	Layout      workload.Layout
	Op          rw.Op
	RequestSize int64
	PerClient   int // processes per client node
}

// Name is e.g. "fpp-write-16m-16ppc".
func (w TuneWorkload) Name() string {
	size := fmt.Sprintf("%dk", w.RequestSize>>10)
	if w.RequestSize >= 1<<20 {
		size = fmt.Sprintf("%dm", w.RequestSize>>20)
	}
	return fmt.Sprintf("%s-%s-%s-%dppc", w.Layout, w.Op, size, w.PerClient)
}

// Pattern is the workload on clients client nodes moving total bytes
// (rounded down to whole requests per process, at least one).
func (w TuneWorkload) Pattern(clients int, total int64) workload.Pattern {
	procs := w.PerClient * clients
	per := max(total/(w.RequestSize*int64(procs)), 1)
	return workload.Pattern{Processes: procs, Layout: w.Layout, Spatiality: workload.Contiguous, Op: w.Op,
		RequestSize: w.RequestSize, TotalBytes: per * w.RequestSize * int64(procs)}
}

// TuneWorkloads are the evaluation's twelve workloads: each layout and
// operation with 32 KiB, 1 MiB and 16 MiB requests, and 1, 16 or 64
// processes per client node, in a Latin square so that every size meets
// every process count.
func TuneWorkloads() []TuneWorkload {
	var out []TuneWorkload
	sizes := []int64{32 << 10, 1 << 20, 16 << 20}
	ppcs := []int{64, 1, 16}
	k := 0
	for _, l := range []workload.Layout{workload.FilePerProcess, workload.Shared} {
		for _, op := range []rw.Op{rw.Write, rw.Read} {
			for i, s := range sizes {
				out = append(out, TuneWorkload{Layout: l, Op: op, RequestSize: s, PerClient: ppcs[(i+k)%3]})
			}
			k++
		}
	}
	return out
}

// DefaultTuneSequence is the dynamic run: six workloads, then the same six
// in another order, each for about a phase.
var DefaultTuneSequence = []int{2, 4, 6, 9, 1, 11, 6, 2, 11, 4, 9, 1}

// TuneConfig configures RunTune.
type TuneConfig struct {
	// Phase is how long each workload runs under the default settings
	// (default 3 min): its bytes are what the defaults move in that time,
	// alone and in each phase of the dynamic run, so a better setting ends
	// it sooner.
	Phase    time.Duration
	Clients  int   // client nodes (default 4)
	IONodes  int   // I/O nodes, each with its own tuner (default 1)
	Sequence []int // the dynamic run's workloads, by index in TuneWorkloads (default DefaultTuneSequence)
	// Workloads are the workloads run alone, by index in TuneWorkloads
	// (default all); they include the sequence's.
	Workloads []int
	// Grid is the static settings searched: aggregation limits and
	// accesses in flight per data server (default every power of two in
	// their ranges); the defaults are always searched too.
	Grid     [2][]int
	TrainFor time.Duration // the pre-trained DQN's training, in simulated time (default 2 h; negative: none)
	// Threshold is the share of the best static bandwidth that counts as
	// converged (default 0.9; see TuneResult).
	Threshold float64
	Seed      uint64
	Workers   int       // parallel simulations (default 1; results do not depend on it)
	Log       io.Writer // progress (nil: none)
	Out       string    // directory for the CSV files and report.html ("": none)
	Command   string
}

func (c *TuneConfig) fill() error {
	if c.Phase == 0 {
		c.Phase = 3 * time.Minute
	}
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.IONodes == 0 {
		c.IONodes = 1
	}
	if c.Sequence == nil {
		c.Sequence = DefaultTuneSequence
	}
	if c.TrainFor == 0 {
		c.TrainFor = 2 * time.Hour
	}
	c.TrainFor = max(c.TrainFor, 0) // negative: none
	if c.Threshold == 0 {
		c.Threshold = 0.9
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	n := len(TuneWorkloads())
	if c.Workloads == nil {
		for i := range n {
			c.Workloads = append(c.Workloads, i)
		}
	}
	for _, i := range c.Workloads {
		if i < 0 || i >= n {
			return fmt.Errorf("%w: workload %d of %d", ErrConfig, i, n)
		}
	}
	for _, i := range c.Sequence {
		if !slices.Contains(c.Workloads, i) {
			return fmt.Errorf("%w: the sequence's workload %d is not among those run (%v)", ErrConfig, i, c.Workloads)
		}
	}
	knobs := TuneKnobs()
	for k := range c.Grid {
		if c.Grid[k] == nil {
			for v := knobs[k].Min; v <= knobs[k].Max; v *= 2 {
				c.Grid[k] = append(c.Grid[k], v)
			}
		}
		for _, v := range c.Grid[k] {
			if v < knobs[k].Min || v > knobs[k].Max {
				return fmt.Errorf("%w: %s %d outside [%d, %d]", ErrConfig, knobs[k].Name, v, knobs[k].Min, knobs[k].Max)
			}
		}
	}
	if c.Phase < time.Minute || c.Clients < 1 || c.IONodes < 1 || !(c.Threshold > 0 && c.Threshold <= 1) {
		return fmt.Errorf("%w: tune %+v", ErrConfig, *c)
	}
	return nil
}

// Tuners compared by RunTune, in report order.
const (
	TunerDefault    = "static defaults"
	TunerBestStatic = "best static"
	TunerIOPathTune = "IOPathTune"
	TunerDQN        = "DQN"
	TunerDQNTrained = "DQN, pre-trained"
	TunerOurs       = "pattern bandit"
)

// tuners are the learning tuners, in report order.
var tuners = []string{TunerIOPathTune, TunerDQN, TunerDQNTrained, TunerOurs}

// TuneRun is one tuner on one workload or sequence.
type TuneRun struct {
	Bandwidth float64 // bytes per second over the run (or phase)
	Ratio     float64 // Bandwidth over the best static setting's
	// Converge is the time from the start of the run (or phase) to the
	// end of the first whole second from which the mean bandwidth over the
	// next 10 s, and over all that is left (at least 30 s, or half of
	// it), reach Threshold of the best static bandwidth: the intervals a
	// 1 s tuner needed, that one included; -1 if no such second.
	Converge time.Duration
	Changes  int // knob changes
}

// TuneSteady is one workload run alone for a phase.
type TuneSteady struct {
	Workload string
	Default  float64 // bandwidth at the defaults
	Best     float64 // the best static setting's (grid search)
	BestAt   [2]int  // that setting: aggregate, per-server
	Runs     map[string]TuneRun
}

// TunePhase is one phase of the dynamic run.
type TunePhase struct {
	Workload string
	Revisit  bool    // the workload ran in an earlier phase
	Best     float64 // the best static setting's bandwidth in this phase of the dynamic run
	BestAt   [2]int  // that setting
	Runs     map[string]TuneRun
}

// TuneResult is the outcome of RunTune.
type TuneResult struct {
	Config  TuneConfig
	Grid    [2][]int // the static settings searched: aggregates, per-server limits
	Steady  []TuneSteady
	Phases  []TunePhase
	Dynamic map[string]TuneRun // the whole dynamic run, Ratio against the best single static setting
	// SequenceBest is the static setting of the grid that serves the
	// dynamic run best, Oracle the bandwidth of the best static setting of
	// every phase in turn (each phase's best from the grid's runs).
	SequenceBest [2]int
	Oracle       float64
	// TrainSim, TrainSteps and TrainWall are the DQN's pre-training:
	// simulated time, actions and wall time.
	TrainSim   time.Duration
	TrainSteps int
	TrainWall  time.Duration
	// Series are per-second bandwidths of the dynamic run relative to the
	// phase's best static, per tuner, and the knobs in force (node 0).
	Series map[string][]float64
	Knobs  map[string][][2]int
}

// tuneRunOut is one simulation's record.
type tuneRunOut struct {
	res     sim.Result
	bw      []float64       // per second, every node, bytes per second
	end     []time.Duration // end of each second
	knobs   [][2]int        // node 0's knobs in force during each second
	changes int
}

// setKnob sets one of node's knobs in s.
func setKnob(s *sim.Sim, node int, name string, v int) error {
	if name == knobAggregate {
		return s.SetAggregate(node, v)
	}
	return s.SetPerServer(node, v)
}

// simTune runs cfg (to its patterns' end or its MaxTime) with static knobs
// (mk nil) or with a tuner per I/O node made by mk, which also says the
// tuner's interval: every interval the tuner sees the node's bandwidth,
// queued bytes (the dirty bytes), bytes entering, requests received and
// the last second's pattern, as adaptio forward --tune shows them.
func simTune(ctx context.Context, cfg sim.Config, static [2]int, mk func(node int) (tune.Tuner, time.Duration, error)) (tuneRunOut, error) {
	var out tuneRunOut
	s, err := sim.New(cfg, nil)
	if err != nil {
		return out, err
	}
	nodes := cfg.IONodes
	tns := make([]tune.Tuner, nodes)
	every := make([]time.Duration, nodes)
	for n := range nodes {
		if mk != nil {
			if tns[n], every[n], err = mk(n); err != nil {
				return out, err
			}
			for _, k := range tns[n].Knobs() {
				if err := setKnob(s, n, k.Name, k.Value); err != nil {
					return out, err
				}
			}
			continue
		}
		if err := s.SetAggregate(n, static[0]); err != nil {
			return out, err
		}
		if err := s.SetPerServer(n, static[1]); err != nil {
			return out, err
		}
	}
	type acc struct {
		bytes, reqs, queued int64
		since               time.Duration
	}
	accs := make([]acc, nodes)
	res, err := s.Run(ctx, sim.Hooks{OnNodeInterval: func(s *sim.Sim, now time.Duration, obs []access.Observation) error {
		var bw float64
		for _, o := range obs {
			bw += o.Bandwidth
		}
		out.bw = append(out.bw, bw)
		out.end = append(out.end, now)
		out.knobs = append(out.knobs, [2]int{s.Aggregate(0), s.PerServer(0)})
		if mk == nil {
			return nil
		}
		for _, o := range obs {
			n := o.Node
			a := &accs[n]
			a.bytes += o.Bytes
			a.reqs += o.Requests
			if now-a.since < every[n] {
				continue
			}
			dt := (now - a.since).Seconds()
			_, q := s.Queued(n)
			ob := tune.Observation{Bandwidth: float64(a.bytes) / dt, DirtyBytes: q,
				CacheRate: (float64(a.bytes) + float64(q-a.queued)) / dt, RPCRate: float64(a.reqs) / dt, Pattern: tune.PatternOf(o)}
			*a = acc{queued: q, since: now}
			for _, st := range tns[n].Step(now, ob) {
				if err := setKnob(s, n, st.Knob, st.Value); err != nil {
					return err
				}
				if n == 0 {
					out.changes++
				}
			}
		}
		return nil
	}})
	out.res = res
	if errors.Is(err, sim.ErrTimeLimit) {
		err = nil
	}
	return out, err
}

// converge is the time from start to the end of the first whole second in
// [start, end) from which the mean of the next 10 s and the mean of all
// that is left (at least 30 s, or half the span) reach target; -1 if none.
func (o tuneRunOut) converge(start, end time.Duration, target float64) time.Duration {
	var bw []float64
	var from []time.Duration
	for i, e := range o.end {
		if e-time.Second >= start && e <= end {
			bw = append(bw, o.bw[i])
			from = append(from, e-start)
		}
	}
	tail := min(30, len(bw)/2)
	const window = 10
	sum, next := 0.0, 0.0
	best := -1
	for i := len(bw) - 1; i >= 0; i-- {
		sum += bw[i]
		next += bw[i]
		if i+window < len(bw) {
			next -= bw[i+window]
		}
		if len(bw)-i >= tail && sum/float64(len(bw)-i) >= target && next/float64(min(window, len(bw)-i)) >= target {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	return from[best]
}

// RunTune runs the evaluation: every workload alone for a phase under
// every static setting of the grid and under each tuner, then the dynamic
// run under the defaults, the best single static setting and each tuner;
// it writes tune-steady.csv, tune-phases.csv, tune-summary.csv and
// report.html to cfg.Out.
func RunTune(ctx context.Context, cfg TuneConfig) (*TuneResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	r := &TuneResult{Config: cfg, Grid: cfg.Grid, Dynamic: map[string]TuneRun{}, Series: map[string][]float64{}, Knobs: map[string][][2]int{}}
	knobs := TuneKnobs()
	def := [2]int{knobs[0].Value, knobs[1].Value}
	var grid [][2]int
	for _, a := range r.Grid[0] {
		for _, p := range r.Grid[1] {
			grid = append(grid, [2]int{a, p})
		}
	}
	grid = append(grid, def)
	var ws []TuneWorkload
	seq := slices.Clone(cfg.Sequence) // indexes in ws
	for _, i := range cfg.Workloads {
		for k, j := range cfg.Sequence {
			if j == i {
				seq[k] = len(ws)
			}
		}
		ws = append(ws, TuneWorkloads()[i])
	}
	base := func(pats ...workload.Pattern) sim.Config {
		return sim.Config{Patterns: pats, IONodes: cfg.IONodes, ClientNodes: cfg.Clients, Seed: cfg.Seed, MaxTime: 30 * 24 * time.Hour}
	}
	pcfg := Config{Workers: cfg.Workers, Log: cfg.Log}
	bw := func(o tuneRunOut) float64 { return float64(o.res.Bytes) / o.res.Makespan.Seconds() }

	// Each workload's bytes: what the defaults move in a phase. A first
	// run for 20 s gives their rate; a run of a phase's worth at that rate
	// corrects it (the files' size changes where their regions lie).
	logf("tune: sizing %d workloads to %v at the defaults", len(ws), cfg.Phase)
	bytes := make([]int64, len(ws))
	err := parallel(ctx, len(ws), pcfg, "sizing runs", func(wi int) error {
		c := base(ws[wi].Pattern(cfg.Clients, 1<<40))
		c.MaxTime = 20 * time.Second
		o, err := simTune(ctx, c, def, nil)
		if err != nil {
			return err
		}
		guess := int64(float64(o.res.Bytes) / 20 * cfg.Phase.Seconds())
		if o, err = simTune(ctx, base(ws[wi].Pattern(cfg.Clients, guess)), def, nil); err != nil {
			return err
		}
		bytes[wi] = ws[wi].Pattern(cfg.Clients, int64(float64(o.res.Bytes)*cfg.Phase.Seconds()/o.res.Makespan.Seconds())).TotalBytes
		return nil
	})
	if err != nil {
		return nil, err
	}
	steady := func(wi int) sim.Config { return base(ws[wi].Pattern(cfg.Clients, bytes[wi])) }

	// The static grid on every workload.
	logf("tune: %d workloads x %d static settings", len(ws), len(grid))
	static := make([][]float64, len(ws)) // bandwidth per workload per grid setting
	for i := range static {
		static[i] = make([]float64, len(grid))
	}
	err = parallel(ctx, len(ws)*len(grid), pcfg, "static runs", func(j int) error {
		wi, gi := j/len(grid), j%len(grid)
		o, err := simTune(ctx, steady(wi), grid[gi], nil)
		if err != nil {
			return fmt.Errorf("%s at %v: %w", ws[wi].Name(), grid[gi], err)
		}
		static[wi][gi] = bw(o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for wi, w := range ws {
		st := TuneSteady{Workload: w.Name(), Default: static[wi][len(grid)-1], Runs: map[string]TuneRun{}}
		for gi, b := range static[wi] {
			if b > st.Best {
				st.Best, st.BestAt = b, grid[gi]
			}
		}
		r.Steady = append(r.Steady, st)
	}

	// The DQN's pre-training: the workloads in a random order, a phase
	// each, for TrainFor of simulated time.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7a1e))
	var train []workload.Pattern
	for t := time.Duration(0); t < cfg.TrainFor; t += cfg.Phase {
		wi := rng.IntN(len(ws))
		train = append(train, ws[wi].Pattern(cfg.Clients, bytes[wi]))
	}
	trained := make([]*tune.DQN, cfg.IONodes)
	if len(train) > 0 {
		logf("tune: pre-training the DQN on %d phases (%v simulated)", len(train), cfg.TrainFor)
		t0 := time.Now()
		c := base(train...)
		c.Seed = cfg.Seed + 1
		c.MaxTime = cfg.TrainFor
		o, err := simTune(ctx, c, def, func(n int) (tune.Tuner, time.Duration, error) {
			d, err := tune.NewDQN(tune.DQNConfig{Knobs: knobs, Interval: time.Second}, rand.New(rand.NewPCG(cfg.Seed, uint64(0xd0+n))))
			trained[n] = d
			return d, time.Second, err
		})
		if err != nil {
			return nil, fmt.Errorf("pre-training the DQN: %w", err)
		}
		r.TrainWall, r.TrainSim, r.TrainSteps = time.Since(t0), o.res.Makespan, trained[0].Steps()
	}
	mkTuner := func(name string, seed uint64) func(n int) (tune.Tuner, time.Duration, error) {
		return func(n int) (tune.Tuner, time.Duration, error) {
			drng := rand.New(rand.NewPCG(seed, uint64(0xd0+n)))
			switch name {
			case TunerIOPathTune:
				t, err := tune.NewIOPathTune(tune.Config{Knobs: knobs, Interval: 10 * time.Second})
				return t, 10 * time.Second, err
			case TunerDQN:
				t, err := tune.NewDQN(tune.DQNConfig{Knobs: knobs, Interval: time.Second}, drng)
				return t, time.Second, err
			case TunerDQNTrained:
				if trained[n] == nil {
					return nil, 0, fmt.Errorf("%w: no pre-trained DQN (TrainFor 0)", ErrConfig)
				}
				t, err := trained[n].Clone(knobs, drng)
				return t, time.Second, err
			}
			t, err := tune.NewPatternBandit(tune.BanditConfig{Knobs: knobs})
			return t, time.Second, err
		}
	}
	active := tuners
	if len(train) == 0 {
		active = slices.DeleteFunc(slices.Clone(tuners), func(s string) bool { return s == TunerDQNTrained })
	}

	// Every tuner on every workload alone.
	logf("tune: %d tuners on each workload", len(active))
	runs := make([]TuneRun, len(ws)*len(active))
	err = parallel(ctx, len(runs), pcfg, "tuned runs", func(j int) error {
		wi, ti := j/len(active), j%len(active)
		o, err := simTune(ctx, steady(wi), def, mkTuner(active[ti], cfg.Seed+uint64(wi)))
		if err != nil {
			return fmt.Errorf("%s under %s: %w", ws[wi].Name(), active[ti], err)
		}
		best := r.Steady[wi].Best
		runs[j] = TuneRun{Bandwidth: bw(o), Ratio: bw(o) / best, Converge: o.converge(0, o.res.Makespan, cfg.Threshold*best), Changes: o.changes}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for j, run := range runs {
		r.Steady[j/len(active)].Runs[active[j%len(active)]] = run
	}

	// The dynamic run, under every static setting of the grid and each
	// tuner.
	var pats []workload.Pattern
	seen := map[int]bool{}
	for _, wi := range seq {
		pats = append(pats, ws[wi].Pattern(cfg.Clients, bytes[wi]))
		r.Phases = append(r.Phases, TunePhase{Workload: ws[wi].Name(), Revisit: seen[wi], Runs: map[string]TuneRun{}})
		seen[wi] = true
	}
	logf("tune: the dynamic run (%d phases) under %d static settings and %d tuners", len(pats), len(grid), len(active))
	outs := make([]tuneRunOut, len(grid)+len(active))
	err = parallel(ctx, len(outs), pcfg, "dynamic runs", func(j int) error {
		var err error
		if j < len(grid) {
			outs[j], err = simTune(ctx, base(pats...), grid[j], nil)
		} else {
			outs[j], err = simTune(ctx, base(pats...), def, mkTuner(active[j-len(grid)], cfg.Seed+99))
		}
		if err != nil {
			return fmt.Errorf("dynamic run %d: %w", j, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	phaseBW := func(o tuneRunOut, k int) float64 { return float64(pats[k].TotalBytes) / o.res.Phases[k].Seconds() }
	best := 0
	for gi := range grid {
		if bw(outs[gi]) > bw(outs[best]) {
			best = gi
		}
		for k := range r.Phases {
			if b := phaseBW(outs[gi], k); b > r.Phases[k].Best {
				r.Phases[k].Best, r.Phases[k].BestAt = b, grid[gi]
			}
		}
	}
	r.SequenceBest = grid[best]
	var total, oracleTime float64
	for k, ph := range r.Phases {
		total += float64(pats[k].TotalBytes)
		oracleTime += float64(pats[k].TotalBytes) / ph.Best
	}
	r.Oracle = total / oracleTime
	named := map[string]tuneRunOut{TunerDefault: outs[len(grid)-1], TunerBestStatic: outs[best]}
	for i, n := range active {
		named[n] = outs[len(grid)+i]
	}
	for name, o := range named {
		r.Dynamic[name] = TuneRun{Bandwidth: bw(o), Ratio: bw(o) / bw(outs[best]), Changes: o.changes}
		var start time.Duration
		series := make([]float64, len(o.bw))
		for k, d := range o.res.Phases {
			ph := &r.Phases[k]
			end := start + d
			b := phaseBW(o, k)
			ph.Runs[name] = TuneRun{Bandwidth: b, Ratio: b / ph.Best, Converge: o.converge(start, end, cfg.Threshold*ph.Best)}
			for i, e := range o.end {
				if e > start && e <= end {
					series[i] = o.bw[i] / ph.Best
				}
			}
			start = end
		}
		r.Series[name] = series
		r.Knobs[name] = o.knobs
	}
	return r, r.write()
}

// write writes the CSV files and the report to Config.Out.
func (r *TuneResult) write() error {
	if r.Config.Out == "" {
		return nil
	}
	rep := r.Report()
	for name, t := range map[string]Table{"tune-steady.csv": r.steadyTable(), "tune-phases.csv": r.phaseTable(), "tune-summary.csv": r.summaryTable()} {
		if err := WriteCSV(r.Config.Out, name, t.Header, t.Rows); err != nil {
			return err
		}
	}
	return rep.WriteHTML(filepath.Join(r.Config.Out, "report.html"))
}

func ratio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func mbps(v float64) string { return strconv.FormatFloat(v/1e6, 'f', 1, 64) }

func secs(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 0, 64)
}

// tunersOf are the tuners the result has, in report order.
func (r *TuneResult) tunersOf() []string {
	var out []string
	for _, t := range tuners {
		if _, ok := r.Dynamic[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (r *TuneResult) steadyTable() Table {
	t := Table{Title: "Each workload alone, from the defaults (what the defaults move in " + r.Config.Phase.String() + ")",
		Note:   fmt.Sprintf("Bandwidth in MB/s; the tuners' as a share of the best static setting's, and the seconds to converge (from then on, at least %.0f%% of it on average).", 100*r.Config.Threshold),
		Header: []string{"workload", "defaults (MB/s)", "best static (MB/s)", "best setting (aggregate/per server)", "defaults / best"}}
	ts := r.tunersOf()
	for _, n := range ts {
		t.Header = append(t.Header, n+" / best", n+" converged (s)")
	}
	for _, s := range r.Steady {
		row := []string{s.Workload, mbps(s.Default), mbps(s.Best), fmt.Sprintf("%d/%d", s.BestAt[0], s.BestAt[1]), ratio(s.Default / s.Best)}
		for _, n := range ts {
			row = append(row, ratio(s.Runs[n].Ratio), secs(s.Runs[n].Converge))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func (r *TuneResult) phaseTable() Table {
	t := Table{Title: "The dynamic run, phase by phase",
		Note:   "Each phase's bandwidth as a share of the best static setting's in that phase (the grid on the whole run), and the seconds from the phase's start to convergence.",
		Header: []string{"phase", "workload", "first time", "best static (MB/s)", "its setting", TunerDefault, TunerBestStatic}}
	ts := r.tunersOf()
	for _, n := range ts {
		t.Header = append(t.Header, n, n+" converged (s)")
	}
	for k, ph := range r.Phases {
		row := []string{strconv.Itoa(k + 1), ph.Workload, strconv.FormatBool(!ph.Revisit), mbps(ph.Best), fmt.Sprintf("%d/%d", ph.BestAt[0], ph.BestAt[1]),
			ratio(ph.Runs[TunerDefault].Ratio), ratio(ph.Runs[TunerBestStatic].Ratio)}
		for _, n := range ts {
			row = append(row, ratio(ph.Runs[n].Ratio), secs(ph.Runs[n].Converge))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// TuneSummary is one tuner's figures against the targets.
type TuneSummary struct {
	Tuner string
	// SteadyMean and SteadyMin are the ratios to the best static over the
	// steady runs; Dynamic the dynamic run's to the best single static
	// setting's, Oracle to the best static setting of every phase.
	SteadyMean, SteadyMin, Dynamic, Oracle float64
	// ConvergeFirst and ConvergeRevisit are the longest times to converge
	// over the dynamic run's phases that need tuning (where the defaults
	// fall short of Threshold of the phase's best static bandwidth), of a
	// workload met for the first time and met again (-1: one never
	// converged; 0: no such phase). Missed counts the phases, of all, that
	// never converged.
	ConvergeFirst, ConvergeRevisit time.Duration
	Missed                         int
}

// Summary returns each tuner's figures.
func (r *TuneResult) Summary() []TuneSummary {
	var out []TuneSummary
	for _, n := range r.tunersOf() {
		s := TuneSummary{Tuner: n, SteadyMin: math.Inf(1), Dynamic: r.Dynamic[n].Ratio, Oracle: r.Dynamic[n].Bandwidth / r.Oracle}
		for _, st := range r.Steady {
			s.SteadyMean += st.Runs[n].Ratio / float64(len(r.Steady))
			s.SteadyMin = min(s.SteadyMin, st.Runs[n].Ratio)
		}
		for _, ph := range r.Phases {
			c := ph.Runs[n].Converge
			if c < 0 {
				s.Missed++
			}
			if ph.Runs[TunerDefault].Ratio >= r.Config.Threshold {
				continue
			}
			worst := &s.ConvergeFirst
			if ph.Revisit {
				worst = &s.ConvergeRevisit
			}
			if c < 0 || *worst < 0 {
				*worst = -1
			} else {
				*worst = max(*worst, c)
			}
		}
		out = append(out, s)
	}
	return out
}

// Hard is the number of the dynamic run's phases that need tuning (the
// defaults below Threshold of the best static), met first and again.
func (r *TuneResult) Hard() (first, again int) {
	for _, ph := range r.Phases {
		if ph.Runs[TunerDefault].Ratio < r.Config.Threshold {
			if ph.Revisit {
				again++
			} else {
				first++
			}
		}
	}
	return first, again
}

func (r *TuneResult) summaryTable() Table {
	first, again := r.Hard()
	t := Table{Title: "Against the targets",
		Note: fmt.Sprintf("Steady: the %d workloads alone (mean and worst share of the best static). Dynamic: the whole run against the best single static setting (%d/%d) and against the best static setting of every phase (%s MB/s). Convergence: the longest time from a phase's start to convergence (at least %.0f%% of the phase's best static from then on), over the phases the defaults fall short of it, %d of a workload met for the first time and %d met again; never converged phases counted over all %d.",
			len(r.Steady), r.SequenceBest[0], r.SequenceBest[1], mbps(r.Oracle), 100*r.Config.Threshold, first, again, len(r.Phases)),
		Header: []string{"tuner", "interval", "steady mean", "steady worst", "dynamic / best single static", "dynamic / best per phase", "converged, first visits (s)", "converged, revisits (s)", "phases never converged"}}
	intervals := map[string]string{TunerIOPathTune: "10s", TunerDQN: "1s", TunerDQNTrained: "1s", TunerOurs: "1s"}
	t.Rows = append(t.Rows, []string{TunerDefault, "-", ratio(r.mean(func(s TuneSteady) float64 { return s.Default / s.Best })), "", ratio(r.Dynamic[TunerDefault].Ratio),
		ratio(r.Dynamic[TunerDefault].Bandwidth / r.Oracle), "", "", ""})
	for _, s := range r.Summary() {
		t.Rows = append(t.Rows, []string{s.Tuner, intervals[s.Tuner], ratio(s.SteadyMean), ratio(s.SteadyMin), ratio(s.Dynamic), ratio(s.Oracle),
			secs(s.ConvergeFirst), secs(s.ConvergeRevisit), strconv.Itoa(s.Missed)})
	}
	return t
}

func (r *TuneResult) mean(f func(TuneSteady) float64) float64 {
	var m float64
	for _, s := range r.Steady {
		m += f(s) / float64(len(r.Steady))
	}
	return m
}

// Report is the HTML report.
func (r *TuneResult) Report() *Report {
	c := r.Config
	intro := fmt.Sprintf("The forwarder's two dispatch knobs, the most requests merged into one access to a data server (aggregate, 1 to 256, default 16) and the most accesses in flight to one data server (1 to 64, default 12), tuned at run time on each of %d I/O node(s) of the simulator (%d client nodes, %d data servers, TWINS): "+
		"IOPathTune's heuristic (Rashid et al.: one knob doubled or halved every 10 s), a CAPES-style DQN (one action a second; from scratch, and pre-trained for %v of simulated I/O: %d actions in %v of wall time), and ours, a bandit over the knobs' settings keyed by the workload pattern each interval shows (one decision a second). "+
		"Against them: the defaults and the best static setting of a grid search (aggregates %v, per-server limits %v). %d IOR-like workloads (file per process and shared, 32 KiB to 16 MiB requests, 1 to 64 processes per client node) run alone, each moving what the defaults move in %v; then a dynamic run changes workload %d times, each phase as long.",
		c.IONodes, c.Clients, sim.DefaultServers, r.TrainSim, r.TrainSteps, r.TrainWall.Round(time.Second), r.Grid[0], r.Grid[1], len(r.Steady), c.Phase, len(r.Phases)-1)
	rep := &Report{Title: "Tuning the forwarder's knobs at run time (Rashid et al., IOPathTune)", Command: c.Command, Intro: intro}
	rep.Sections = append(rep.Sections, Section{Title: "Summary", Tables: []Table{r.summaryTable()}})
	var figs []template.HTML
	var series []Series
	for _, n := range append([]string{TunerDefault, TunerBestStatic}, r.tunersOf()...) {
		series = append(series, smooth(n, r.Series[n], 10))
	}
	if f, err := LinePlot("Dynamic run: bandwidth / the phase's best static (10 s means)", "time (s)", "share of best static", series, 0, math.NaN()); err == nil {
		figs = append(figs, f)
	}
	for _, n := range []string{TunerIOPathTune, TunerOurs} {
		ks := r.Knobs[n]
		if len(ks) == 0 {
			continue
		}
		a, p := Series{Name: "log2 aggregate"}, Series{Name: "log2 per-server in flight"}
		for i, k := range ks {
			a.X, a.Y = append(a.X, float64(i+1)), append(a.Y, math.Log2(float64(k[0])))
			p.X, p.Y = append(p.X, float64(i+1)), append(p.Y, math.Log2(float64(k[1])))
		}
		if f, err := LinePlot(n+": knobs in force", "time (s)", "log2 of the value", []Series{a, p}, 0, 8.5); err == nil {
			figs = append(figs, f)
		}
	}
	rep.Sections = append(rep.Sections,
		Section{Title: "Steady workloads", Tables: []Table{r.steadyTable()}},
		Section{Title: "Dynamic run", Tables: []Table{r.phaseTable()}, Figures: figs})
	return rep
}

// smooth is a series of means over windows of k points.
func smooth(name string, y []float64, k int) Series {
	s := Series{Name: name}
	for i := 0; i+k <= len(y); i += k {
		var m float64
		for _, v := range y[i : i+k] {
			m += v / float64(k)
		}
		s.X, s.Y = append(s.X, float64(i+k)), append(s.Y, m)
	}
	return s
}
