package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/sim/experiment"
)

func (c Config) schedulerName() string {
	if c.scheduler == "" {
		return "twins"
	}
	return c.scheduler
}

// Setting is one row of a ranking: a static TWINS window, or FIFO.
type Setting struct {
	Window time.Duration `json:"window_ns"` // 0 with FIFO
	FIFO   bool          `json:"fifo"`
}

func (s Setting) String() string {
	if s.FIFO {
		return "FIFO"
	}
	return report.WindowLabel(s.Window)
}

// RankSettings are the papers' seven windows and FIFO (Bez et al., FGCS 2020, Fig. 1).
func RankSettings() []Setting {
	out := make([]Setting, 0, len(sched.Windows)+1)
	for _, w := range sched.Windows {
		out = append(out, Setting{Window: w})
	}
	return append(out, Setting{FIFO: true})
}

// Statistics a ranking can rank by (RankOptions.Statistic).
const (
	// StatMedian is each setting's median iteration: with 3 iterations or
	// more, one outlying iteration does not move it.
	StatMedian = "median"
	// StatMean is each setting's mean iteration.
	StatMean = "mean"
)

// Ranking compares, phase by phase, the time of each setting on the real
// stack and in the simulator for the same experiment.
type Ranking struct {
	Settings []Setting `json:"settings"`
	Phases   []string  `json:"phases"`
	// Statistic is how a setting's iterations of a phase make the one
	// figure that is ranked: StatMedian or StatMean.
	Statistic string `json:"statistic"`
	// Workload identifies the experiment run on the real stack: a saved
	// ranking's real side is reused only for the same one (RankOptions.Real).
	Workload string `json:"workload"`
	// RealTimes and SimTimes are every iteration's seconds:
	// [setting][phase][iteration].
	RealTimes [][][]float64 `json:"real_times"`
	SimTimes  [][][]float64 `json:"sim_times"`
	Real      [][]float64   `json:"real"` // [setting][phase] Statistic of RealTimes
	Sim       [][]float64   `json:"sim"`  // [setting][phase] Statistic of SimTimes
	// RealServers and SimServers are the data servers' counters (all
	// servers together) per iteration of each phase: [setting][phase].
	// Where the times rank apart, they say why (accesses the I/O nodes
	// aggregated, switches between I/O nodes, device time, repositionings).
	RealServers [][]dataserver.Stats `json:"real_servers"`
	SimServers  [][]dataserver.Stats `json:"sim_servers"`
	// RealWakes are the real daemons' idle-worker wake-up latencies (all
	// daemons, all iterations together): [setting][phase].
	RealWakes [][]fwd.WakeStats `json:"real_wakes"`
	// SimDispatchDelay is the simulator's dispatch delay of this ranking
	// (Config.SimDispatchDelay).
	SimDispatchDelay time.Duration `json:"sim_dispatch_delay_ns"`
	Took             time.Duration `json:"took_ns"` // wall time of this ranking's runs
}

// Rho is the Spearman rank correlation of the real and simulated times of
// phase p over the settings.
func (r Ranking) Rho(p int) float64 {
	x := make([]float64, len(r.Settings))
	y := make([]float64, len(r.Settings))
	for i := range r.Settings {
		x[i], y[i] = r.Real[i][p], r.Sim[i][p]
	}
	return experiment.Spearman(x, y)
}

// RankOptions are Rank's choices beyond the experiment's Config.
type RankOptions struct {
	// Statistic is StatMedian (the default) or StatMean.
	Statistic string
	// Real, if not nil, is an earlier ranking of the same workload
	// (ReadRanking) whose real side is reused: the real stack does not
	// run, only the simulator, so one set of real runs can be compared
	// with simulators configured otherwise (e.g. Config.SimDispatchDelay).
	Real *Ranking
	// Progress, if not nil, gets a line per finished setting.
	Progress io.Writer
}

// rankWorkload is what must match for two rankings' real sides to be the
// same experiment: every setting of cfg that reaches the real stack.
func rankWorkload(cfg Config) string {
	return fmt.Sprintf("nodes=%d servers=%d processes=%d request=%d phase-bytes=%d fpp-bytes=%d mix=%t read-passes=%d compare=%d reference-windows=%t server-time-scale=%g server-read-ahead=%d server-elevator=%t interval=%v seed=%d",
		cfg.Nodes, cfg.Servers, cfg.Processes, cfg.RequestSize, cfg.PhaseBytes, cfg.FPPBytes, cfg.Mix, cfg.ReadPasses, cfg.Compare,
		cfg.ReferenceWindows, cfg.ServerTimeScale, cfg.ServerReadAhead, cfg.ServerElevator, cfg.Interval, cfg.Seed)
}

// Rank runs cfg's experiment (cfg.Compare iterations, default 2) under
// every setting on the real stack (a fresh stack each time: emulated PFS
// with the shared data-server model, forwarding daemons, no learning) and
// in the simulator, and returns both, each setting's iterations reduced
// by opts.Statistic.
func Rank(ctx context.Context, cfg Config, settings []Setting, opts RankOptions) (Ranking, error) {
	if cfg.ReadPasses == 0 {
		cfg.ReadPasses = 1 // as the simulator reads, and as the rankings were measured
	}
	cfg = cfg.WithDefaults()
	if cfg.Compare < 1 {
		cfg.Compare = 2
	}
	if err := cfg.Validate(); err != nil {
		return Ranking{}, err
	}
	if opts.Statistic == "" {
		opts.Statistic = StatMedian
	}
	if opts.Statistic != StatMedian && opts.Statistic != StatMean {
		return Ranking{}, fmt.Errorf("%w: rank statistic %q: want %s or %s", ErrBadConfig, opts.Statistic, StatMedian, StatMean)
	}
	t0 := time.Now()
	r := Ranking{Settings: settings, Statistic: opts.Statistic, Workload: rankWorkload(cfg), SimDispatchDelay: cfg.SimDispatchDelay}
	for _, p := range cfg.Phases() {
		r.Phases = append(r.Phases, p.Name)
	}
	if old := opts.Real; old != nil {
		if err := r.sameRealSide(*old); err != nil {
			return r, err
		}
		r.RealTimes, r.RealServers, r.RealWakes = old.RealTimes, old.RealServers, old.RealWakes
	}
	for i, s := range settings {
		c := cfg
		c.Static, c.scheduler = s.Window, ""
		if s.FIFO {
			c.Static, c.scheduler = sched.DefaultWindow, "fifo"
		}
		if opts.Real == nil {
			run, err := staticRealRun(ctx, c, c.Static)
			if err != nil {
				return r, fmt.Errorf("demo: rank %v on the real stack: %w", s, err)
			}
			r.RealTimes = append(r.RealTimes, realPhaseTimes(run.Iterations, r.Phases))
			r.RealServers = append(r.RealServers, serversPerPhase(run.Servers, len(r.Phases)))
			r.RealWakes = append(r.RealWakes, wakesPerPhase(run.Wakes, len(r.Phases)))
		}
		res, err := sim.Run(ctx, c.simConfig(c.Compare, c.Static), sim.Hooks{})
		if err != nil {
			return r, fmt.Errorf("demo: rank %v in the simulator: %w", s, err)
		}
		r.SimTimes = append(r.SimTimes, simPhaseTimes(res, len(r.Phases)))
		r.SimServers = append(r.SimServers, serversPerPhase(res.PhaseServers, len(r.Phases)))
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "rank: %v done (%d of %d, %v elapsed)\n", s, i+1, len(settings), time.Since(t0).Round(time.Second))
		}
	}
	r.Real, r.Sim = reduceTimes(r.RealTimes, r.Statistic), reduceTimes(r.SimTimes, r.Statistic)
	r.Took = time.Since(t0)
	return r, nil
}

// sameRealSide reports whether old's real side can stand for r's: the
// same workload, settings and phases.
func (r Ranking) sameRealSide(old Ranking) error {
	switch {
	case old.Workload != r.Workload:
		return fmt.Errorf("%w: the saved ranking's real runs are another experiment:\n  saved: %s\n  now:   %s", ErrBadConfig, old.Workload, r.Workload)
	case !slices.Equal(old.Settings, r.Settings):
		return fmt.Errorf("%w: the saved ranking ranks %v, not %v", ErrBadConfig, old.Settings, r.Settings)
	case !slices.Equal(old.Phases, r.Phases):
		return fmt.Errorf("%w: the saved ranking's phases are %v, not %v", ErrBadConfig, old.Phases, r.Phases)
	case len(old.RealTimes) != len(r.Settings) || len(old.RealServers) != len(r.Settings):
		return fmt.Errorf("%w: the saved ranking has real times for %d of its %d settings", ErrBadConfig, len(old.RealTimes), len(r.Settings))
	}
	for i, row := range old.RealTimes {
		if len(row) != len(r.Phases) || len(old.RealServers[i]) != len(r.Phases) {
			return fmt.Errorf("%w: the saved ranking's %v row has %d phases, want %d", ErrBadConfig, r.Settings[i], len(row), len(r.Phases))
		}
		for p, ts := range row {
			if len(ts) == 0 {
				return fmt.Errorf("%w: the saved ranking has no real time of %v under %v", ErrBadConfig, r.Phases[p], r.Settings[i])
			}
		}
	}
	return nil
}

// ReadRanking reads a ranking saved as JSON (Ranking.Save).
func ReadRanking(rd io.Reader) (Ranking, error) {
	var r Ranking
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return Ranking{}, fmt.Errorf("demo: read ranking: %w", err)
	}
	return r, nil
}

// Save writes r as JSON, for ReadRanking.
func (r Ranking) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}

// realPhaseTimes is each phase's iteration seconds of a real run.
func realPhaseTimes(its []record.Iteration, phases []string) [][]float64 {
	out := make([][]float64, len(phases))
	for i, p := range phases {
		for _, it := range record.OfPhase(its, p) {
			out[i] = append(out[i], it.Seconds)
		}
	}
	return out
}

// simPhaseTimes is each phase's iteration seconds of a simulated run
// (phase k of n is run k mod n).
func simPhaseTimes(res sim.Result, n int) [][]float64 {
	out := make([][]float64, n)
	for k, d := range res.Phases {
		out[k%n] = append(out[k%n], d.Seconds())
	}
	return out
}

// reduceTimes is stat of each [setting][phase] list of seconds.
func reduceTimes(times [][][]float64, stat string) [][]float64 {
	out := make([][]float64, len(times))
	for i, row := range times {
		out[i] = make([]float64, len(row))
		for p, ts := range row {
			if stat == StatMean {
				out[i][p] = mean(ts)
			} else {
				out[i][p] = fwdbench.Median(ts)
			}
		}
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// sumPerPhase adds up counters taken per phase run (phase k of n is run
// k mod n) into one per phase, and says how many runs each adds.
func sumPerPhase[T interface{ Plus(T) T }](runs []T, n int) ([]T, []uint64) {
	out, count := make([]T, n), make([]uint64, n)
	for k, x := range runs {
		out[k%n] = out[k%n].Plus(x)
		count[k%n]++
	}
	return out, count
}

// serversPerPhase averages counters taken per phase run into one per
// phase and iteration.
func serversPerPhase(runs []dataserver.Stats, n int) []dataserver.Stats {
	out, count := sumPerPhase(runs, n)
	for i, c := range count {
		out[i] = out[i].Div(c)
	}
	return out
}

// wakesPerPhase sums wake-up latencies taken per phase run into one per
// phase (their mean is over every wake-up of the phase's runs).
func wakesPerPhase(runs []fwd.WakeStats, n int) []fwd.WakeStats {
	out, _ := sumPerPhase(runs, n)
	return out
}

// Write prints the ranking: per phase, each setting's real and simulated
// time (its Statistic) with its rank in each, and Spearman's rho.
func (r Ranking) Write(w io.Writer) {
	fmt.Fprintf(w, "each setting's %s iteration", r.Statistic)
	if r.SimDispatchDelay > 0 {
		fmt.Fprintf(w, "; simulator's dispatch delay %v", r.SimDispatchDelay)
	}
	fmt.Fprintln(w)
	for p, name := range r.Phases {
		fmt.Fprintf(w, "%s\n%-8s %10s %5s %10s %5s\n", name, "setting", "real (s)", "rank", "sim (s)", "rank")
		realRank, simRank := rankOf(r.Real, p), rankOf(r.Sim, p)
		for i, s := range r.Settings {
			fmt.Fprintf(w, "%-8v %10.3f %5d %10.3f %5d\n", s, r.Real[i][p], realRank[i], r.Sim[i][p], simRank[i])
		}
		fmt.Fprintf(w, "Spearman rho (real vs simulator) = %.3f\n", r.Rho(p))
		if len(r.RealServers) == len(r.Settings) && len(r.SimServers) == len(r.Settings) {
			wakes := len(r.RealWakes) == len(r.Settings)
			fmt.Fprintf(w, "data servers per iteration, real / sim:\n%-8s %15s %13s %15s %13s", "setting", "accesses", "switches", "device busy s", "read seeks")
			if wakes {
				fmt.Fprintf(w, " %12s", "real wake µs")
			}
			fmt.Fprintln(w)
			for i, s := range r.Settings {
				a, b := r.RealServers[i][p], r.SimServers[i][p]
				fmt.Fprintf(w, "%-8v %7d/%-7d %6d/%-6d %7.2f/%-7.2f %6d/%-6d", s, a.Accesses, b.Accesses, a.Switches, b.Switches,
					a.Busy.Seconds(), b.Busy.Seconds(), a.Disk.ReadMisses, b.Disk.ReadMisses)
				if wakes {
					fmt.Fprintf(w, " %12.0f", float64(r.RealWakes[i][p].Mean())/float64(time.Microsecond))
				}
				fmt.Fprintln(w)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "took %v\n", r.Took.Round(time.Second))
}

// rankOf ranks the settings by column p of rows, fastest first (1-based).
func rankOf(rows [][]float64, p int) []int {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case rows[a][p] < rows[b][p]:
			return -1
		case rows[a][p] > rows[b][p]:
			return 1
		}
		return 0
	})
	out := make([]int, len(rows))
	for r, i := range idx {
		out[i] = r + 1
	}
	return out
}

// ParseSettings reads a comma-separated list of windows and "fifo".
func ParseSettings(s string) ([]Setting, error) {
	var out []Setting
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if strings.EqualFold(f, "fifo") {
			out = append(out, Setting{FIFO: true})
			continue
		}
		w, err := time.ParseDuration(f)
		if err != nil || !slices.Contains(sched.Windows, w) {
			return nil, fmt.Errorf("%w: setting %q: want fifo or one of the TWINS windows %v", ErrBadConfig, f, sched.Windows)
		}
		out = append(out, Setting{Window: w})
	}
	return out, nil
}
