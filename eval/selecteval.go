package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/selection"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// SelectConfig configures the evaluation of dynamic scheduler selection
// on the JLESC AGIOS selection report's twelve MPI-IO Test tests.
type SelectConfig struct {
	Schedulers []string      // the algorithms to choose among (default AGIOS's: mlf, to-agg, sjf, to, noop)
	Period     time.Duration // selection period (default 1 s)
	Policy     string        // "" AGIOS's rule; else a bandit policy (selection.DriverConfig.Policy)
	Shared     bool          // one choice for every I/O node (selection.DriverConfig.Shared)
	Patterns   bool          // the JLESC AGIOS selection report's pattern matching and Markov prediction (selection.DriverConfig.Patterns)
	// Sequences runs SelectSequences instead of the twelve tests: patterns
	// whose best algorithms differ, alternating, where a choice per
	// pattern can beat every static algorithm.
	Sequences bool
	IONodes   int   // default 4
	Threads   int   // dispatch slots per I/O node (default 2: the I/O node queues, so the algorithm matters)
	Total     int64 // bytes per test and operation (default 256 MiB)
	Repeat    int   // write-then-read passes per test (default 3)
	Seed      uint64
	Out       string
	Command   string
}

// SelectTests are the JLESC AGIOS selection report's twelve tests: contiguous or 1D-strided
// accesses to a shared file, requests of 32 KiB, 4 MiB or 16 MiB, 32 or
// 64 processes.
func SelectTests() []workload.Pattern {
	var out []workload.Pattern
	for _, sp := range []workload.Spatiality{workload.Contiguous, workload.Strided} {
		for _, size := range []int64{32 << 10, 4 << 20, 16 << 20} {
			for _, procs := range []int{32, 64} {
				out = append(out, workload.Pattern{Processes: procs, Layout: workload.Shared, Spatiality: sp, RequestSize: size})
			}
		}
	}
	return out
}

// SelectSequences are access patterns whose best algorithms differ (small
// contiguous requests: SJF and MLF; large ones: TO-agg), each written then
// read in turn, the sequence repeated: the case for choosing per pattern.
func SelectSequences() [][]workload.Pattern {
	p := func(procs int, sp workload.Spatiality, size int64) workload.Pattern {
		return workload.Pattern{Processes: procs, Layout: workload.Shared, Spatiality: sp, RequestSize: size}
	}
	return [][]workload.Pattern{
		{p(32, workload.Contiguous, 32<<10), p(32, workload.Contiguous, 16<<20)},
		{p(64, workload.Contiguous, 32<<10), p(64, workload.Strided, 4<<20)},
	}
}

// SelectRow is one test's outcome.
type SelectRow struct {
	Test    string
	Static  map[string]time.Duration // makespan under each algorithm
	Best    string
	Dynamic time.Duration
	Changes int
	Ratio   float64 // best static makespan / dynamic makespan
	// From is dynamic's bandwidth from its 1st, 5th and 20th period on
	// over the best static algorithm's bandwidth (0: the run was shorter).
	From [3]float64
	// Late is dynamic's bandwidth from its 20th period on over the best
	// static algorithm's bandwidth (0: the run was shorter).
	Late       float64
	Within5Pct bool // Late >= 1/1.05
}

// RunSelect runs every test under each algorithm and under dynamic
// selection, and writes select.csv and report.html to cfg.Out.
func RunSelect(ctx context.Context, cfg SelectConfig) ([]SelectRow, error) {
	if len(cfg.Schedulers) == 0 {
		cfg.Schedulers = []string{"mlf", "to-agg", "sjf", "to", "noop"}
	}
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.IONodes == 0 {
		cfg.IONodes = 4
	}
	if cfg.Threads == 0 {
		cfg.Threads = 2
	}
	if cfg.Total == 0 {
		cfg.Total = 256 << 20
	}
	if cfg.Repeat == 0 {
		cfg.Repeat = 3
	}
	type test struct {
		name   string
		phases []workload.Pattern
	}
	sized := func(p workload.Pattern) workload.Pattern {
		p.TotalBytes = max(cfg.Total/(p.RequestSize*int64(p.Processes)), 1) * p.RequestSize * int64(p.Processes)
		p.Op = rw.Write
		return p
	}
	var tests []test
	if cfg.Sequences {
		for _, seq := range SelectSequences() {
			var phases []workload.Pattern
			var names []string
			for _, p := range seq {
				names = append(names, strings.Replace(sized(p).String(), "-write", "", 1))
			}
			for range cfg.Repeat {
				for _, p := range seq {
					phases = append(phases, sim.WriteRead(sized(p), 1)...)
				}
			}
			tests = append(tests, test{strings.Join(names, " / "), phases})
		}
	} else {
		for _, p := range SelectTests() {
			p = sized(p)
			tests = append(tests, test{strings.Replace(p.String(), "-write", "", 1), sim.WriteRead(p, cfg.Repeat)})
		}
	}
	var rows []SelectRow
	for _, tt := range tests {
		p := tt.name
		base := sim.Config{Patterns: tt.phases, IONodes: cfg.IONodes, Threads: cfg.Threads, Seed: cfg.Seed, MaxTime: 30 * 24 * time.Hour}
		row := SelectRow{Test: tt.name, Static: map[string]time.Duration{}}
		var bestBW float64
		for _, s := range cfg.Schedulers {
			c := base
			c.Scheduler = s
			res, err := sim.Run(ctx, c, sim.Hooks{})
			if err != nil {
				return nil, fmt.Errorf("%s under %s: %w", p, s, err)
			}
			row.Static[s] = res.Makespan
			if row.Best == "" || res.Makespan < row.Static[row.Best] {
				row.Best, bestBW = s, res.Bandwidth
			}
		}
		dyn, changes, fromBW, err := simulateDynamic(ctx, base, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s, dynamic: %w", p, err)
		}
		row.Dynamic, row.Changes = dyn, changes
		row.Ratio = row.Static[row.Best].Seconds() / dyn.Seconds()
		for k, bw := range fromBW {
			if bw > 0 && bestBW > 0 {
				row.From[k] = bw / bestBW
			}
		}
		row.Late = row.From[2]
		row.Within5Pct = row.Late >= 1/1.05
		rows = append(rows, row)
	}
	return rows, writeSelect(cfg, rows)
}

// fromPeriods are the periods from which a learning run is measured; it
// is judged from the last.
var fromPeriods = [3]int{1, 5, 20}

// simulateDynamic runs base with a selection.Driver on every I/O node; it
// returns the makespan, the changes made and the bandwidth (bytes per
// second, every node) from each of fromPeriods on (0 if the run was
// shorter).
func simulateDynamic(ctx context.Context, base sim.Config, cfg SelectConfig) (time.Duration, int, [3]float64, error) {
	var bytes [3]int64
	var lastAt time.Duration
	res, d, err := RunDynamic(ctx, base, selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: cfg.Schedulers}, Period: cfg.Period, Policy: cfg.Policy, Shared: cfg.Shared, Patterns: patternsIf(cfg.Patterns)},
		cfg.Seed, func(now time.Duration, o access.Observation) {
			lastAt = now
			for k, p := range fromPeriods {
				if now > time.Duration(p)*cfg.Period {
					bytes[k] += o.Bytes
				}
			}
		})
	var bw [3]float64
	if err != nil {
		return 0, 0, bw, err
	}
	for k, p := range fromPeriods {
		if from := time.Duration(p) * cfg.Period; lastAt > from && bytes[k] > 0 {
			bw[k] = float64(bytes[k]) / (lastAt - from).Seconds()
		}
	}
	return res.Makespan, d.Changes, bw, nil
}

// RunDynamic runs cfg in the simulator with every I/O node's algorithm
// chosen by a selection.Driver each period (seeded with seed); each node's
// observation is also passed to observe, if set.
func RunDynamic(ctx context.Context, cfg sim.Config, dcfg selection.DriverConfig, seed uint64, observe func(now time.Duration, o access.Observation)) (sim.Result, *selection.Driver, error) {
	rng := rand.New(rand.NewPCG(seed, 0xd1a))
	d, err := selection.NewDriver(dcfg, cfg.IONodes, rng)
	if err != nil {
		return sim.Result{}, nil, err
	}
	res, err := RunDriver(ctx, cfg, d, rng, observe)
	return res, d, err
}

// RunDriver is RunDynamic with a driver the caller made (for one whose
// knowledge bases it restored) and its random source.
func RunDriver(ctx context.Context, cfg sim.Config, d *selection.Driver, rng *rand.Rand, observe func(now time.Duration, o access.Observation)) (sim.Result, error) {
	cfg.Scheduler = d.Current(0)
	s, err := sim.New(cfg, nil)
	if err != nil {
		return sim.Result{}, err
	}
	for n := range cfg.IONodes {
		if err := s.Switch(n, d.Current(n)); err != nil {
			return sim.Result{}, err
		}
	}
	if d.Patterns(0) != nil {
		s.SetTrace(func(ev sim.NodeEvent) {
			if ev.Kind == sim.NodeArrive {
				d.Request(ev.Node, selection.Request{File: ev.FileID, Offset: ev.Offset, Length: ev.Length, Write: ev.Op == rw.Write})
			}
		})
	}
	res, err := s.Run(ctx, sim.Hooks{OnNodeInterval: func(s *sim.Sim, now time.Duration, obs []access.Observation) error {
		var sum selection.Figures
		for _, o := range obs {
			if observe != nil {
				observe(now, o)
			}
			f := selection.Figures{Bytes: o.Bytes, Served: o.Completed}
			if d.Shared() {
				sum.Bytes += f.Bytes
				sum.Served += f.Served
				continue
			}
			if next, change := d.Interval(o.Node, now, f, rng); change {
				if err := s.Switch(o.Node, next); err != nil {
					return err
				}
			}
		}
		if d.Shared() {
			if next, change := d.Interval(0, now, sum, rng); change {
				for n := range obs {
					if err := s.Switch(n, next); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}})
	return res, err
}

func writeSelect(cfg SelectConfig, rows []SelectRow) error {
	header := []string{"test"}
	for _, s := range cfg.Schedulers {
		header = append(header, s+" (s)")
	}
	header = append(header, "best static", "dynamic (s)", "changes", "best / dynamic (makespan)", "dynamic / best from period 1 (bandwidth)", "from period 5", "from period 20", "within 5% from period 20")
	var out [][]string
	met := 0
	for _, r := range rows {
		line := []string{r.Test}
		for _, s := range cfg.Schedulers {
			line = append(line, f3(r.Static[s].Seconds()))
		}
		line = append(line, r.Best, f3(r.Dynamic.Seconds()), strconv.Itoa(r.Changes), f3(r.Ratio), f3(r.From[0]), f3(r.From[1]), f3(r.From[2]), strconv.FormatBool(r.Within5Pct))
		out = append(out, line)
		if r.Within5Pct {
			met++
		}
	}
	if cfg.Out == "" {
		return nil
	}
	if err := WriteCSV(cfg.Out, "select.csv", header, out); err != nil {
		return err
	}
	rep := &Report{Title: "Dynamic scheduler selection on the JLESC AGIOS selection report's tests", Command: cfg.Command,
		Intro: fmt.Sprintf("Each test (a shared file, written then read %d times, %d I/O nodes with %d dispatch slots each) under every algorithm and under %s choosing among them every %v. From its 20th period on, dynamic's bandwidth is within 5%% of the best static algorithm's on %d of %d tests.",
			cfg.Repeat, cfg.IONodes, cfg.Threads, selectionName(cfg), cfg.Period, met, len(rows)),
		Sections: []Section{{Title: "Makespans", Tables: []Table{{Title: "Per test", Header: header, Rows: out}}}}}
	return rep.WriteHTML(filepath.Join(cfg.Out, "report.html"))
}

// patternsIf is the pattern matcher's default configuration, or nil.
func patternsIf(on bool) *selection.KBConfig {
	if !on {
		return nil
	}
	return &selection.KBConfig{}
}

// selectionName says how dynamic selection chose in cfg.
func selectionName(cfg SelectConfig) string {
	how := "AGIOS's armed bandit on each I/O node"
	if cfg.Policy != "" {
		how = cfg.Policy + " on each I/O node"
	}
	if cfg.Shared {
		how = strings.Replace(how, "on each I/O node", "making one choice for every I/O node", 1)
	}
	if cfg.Patterns {
		how += ", with pattern matching and the Markov chain's prediction"
	}
	return how
}
