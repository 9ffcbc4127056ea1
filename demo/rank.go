package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
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
	Window time.Duration // 0 with FIFO
	FIFO   bool
}

func (s Setting) String() string {
	if s.FIFO {
		return "FIFO"
	}
	return report.WindowLabel(s.Window)
}

// RankSettings are the papers' seven windows and FIFO (seed 000 Fig. 1).
func RankSettings() []Setting {
	out := make([]Setting, 0, len(sched.Windows)+1)
	for _, w := range sched.Windows {
		out = append(out, Setting{Window: w})
	}
	return append(out, Setting{FIFO: true})
}

// Ranking compares, phase by phase, the mean time of each setting on the
// real stack and in the simulator for the same experiment.
type Ranking struct {
	Settings []Setting
	Phases   []string
	Real     [][]float64 // [setting][phase] mean seconds on the real stack
	Sim      [][]float64 // [setting][phase] mean seconds in the simulator
	// RealServers and SimServers are the data servers' counters (all
	// servers together) per iteration of each phase: [setting][phase].
	// Where the times rank apart, they say why (accesses the I/O nodes
	// aggregated, switches between I/O nodes, device time, repositionings).
	RealServers, SimServers [][]dataserver.Stats
	Took                    time.Duration
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

// Rank runs cfg's experiment (cfg.Compare iterations, default 2) under
// every setting on the real stack (a fresh stack each time: emulated PFS
// with the shared data-server model, forwarding daemons, no learning) and
// in the simulator, and returns both. progress, if not nil, gets a line
// per finished setting.
func Rank(ctx context.Context, cfg Config, settings []Setting, progress io.Writer) (Ranking, error) {
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
	t0 := time.Now()
	r := Ranking{Settings: settings}
	for _, p := range cfg.Phases() {
		r.Phases = append(r.Phases, p.Name)
	}
	for i, s := range settings {
		c := cfg
		c.Static, c.scheduler = s.Window, ""
		if s.FIFO {
			c.Static, c.scheduler = sched.DefaultWindow, "fifo"
		}
		real, realServers, err := staticRealServers(ctx, c, c.Static)
		if err != nil {
			return r, fmt.Errorf("demo: rank %v on the real stack: %w", s, err)
		}
		res, err := sim.Run(ctx, c.simConfig(c.Compare, c.Static), sim.Hooks{})
		if err != nil {
			return r, fmt.Errorf("demo: rank %v in the simulator: %w", s, err)
		}
		r.Real = append(r.Real, phaseRow(real, r.Phases))
		r.Sim = append(r.Sim, phaseMeans(res, len(r.Phases)))
		r.RealServers = append(r.RealServers, serversPerPhase(realServers, len(r.Phases)))
		r.SimServers = append(r.SimServers, serversPerPhase(res.PhaseServers, len(r.Phases)))
		if progress != nil {
			fmt.Fprintf(progress, "rank: %v done (%d of %d, %v elapsed)\n", s, i+1, len(settings), time.Since(t0).Round(time.Second))
		}
	}
	r.Took = time.Since(t0)
	return r, nil
}

// serversPerPhase averages counters taken per phase run (phase k of n is
// run k mod n) into one per phase and iteration.
func serversPerPhase(runs []dataserver.Stats, n int) []dataserver.Stats {
	out, count := make([]dataserver.Stats, n), make([]uint64, n)
	for k, st := range runs {
		out[k%n] = out[k%n].Plus(st)
		count[k%n]++
	}
	for i, c := range count {
		out[i] = out[i].Div(c)
	}
	return out
}

func phaseRow(sr record.StaticResult, phases []string) []float64 {
	out := make([]float64, len(phases))
	for i, p := range phases {
		out[i] = sr.Phases[p]
	}
	return out
}

// Write prints the ranking: per phase, each setting's real and simulated
// mean time with its rank in each, and Spearman's rho.
func (r Ranking) Write(w io.Writer) {
	for p, name := range r.Phases {
		fmt.Fprintf(w, "%s\n%-8s %10s %5s %10s %5s\n", name, "setting", "real (s)", "rank", "sim (s)", "rank")
		realRank, simRank := rankOf(r.Real, p), rankOf(r.Sim, p)
		for i, s := range r.Settings {
			fmt.Fprintf(w, "%-8v %10.3f %5d %10.3f %5d\n", s, r.Real[i][p], realRank[i], r.Sim[i][p], simRank[i])
		}
		fmt.Fprintf(w, "Spearman rho (real vs simulator) = %.3f\n", r.Rho(p))
		if len(r.RealServers) == len(r.Settings) && len(r.SimServers) == len(r.Settings) {
			fmt.Fprintf(w, "data servers per iteration, real / sim:\n%-8s %15s %13s %15s %13s\n", "setting", "accesses", "switches", "device busy s", "read seeks")
			for i, s := range r.Settings {
				a, b := r.RealServers[i][p], r.SimServers[i][p]
				fmt.Fprintf(w, "%-8v %7d/%-7d %6d/%-6d %7.2f/%-7.2f %6d/%-6d\n", s, a.Accesses, b.Accesses, a.Switches, b.Switches,
					a.Busy.Seconds(), b.Busy.Seconds(), a.Disk.ReadMisses, b.Disk.ReadMisses)
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
