package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	Policy     string        // "" or "agios": AGIOS's rule; "settle" (ours); else a bandit policy (selection.DriverConfig.Policy)
	Shared     bool          // one choice for every I/O node (selection.DriverConfig.Shared)
	Patterns   bool          // the JLESC AGIOS selection report's pattern matching and Markov prediction (selection.DriverConfig.Patterns)
	// Sequences runs SelectSequences instead of the twelve tests: patterns
	// whose best algorithms differ, alternating, where a choice per
	// pattern can beat every static algorithm.
	Sequences bool
	IONodes   int // default 4
	Threads   int // dispatch slots per I/O node (default 2: the I/O node queues, so the algorithm matters)
	// Total is the bytes per test and operation (default 256 MiB), at
	// least MinPerProcess requests per process.
	Total  int64
	Repeat int // write-then-read passes per test (default 3)
	Seed   uint64
	// Seeds is how many seeds run, from Seed on (default 1): the
	// simulator's and the selection's.
	Seeds int
	// Workers is how many runs go in parallel (default 1).
	Workers int
	Out     string
	Command string
}

// MinPerProcess is the least number of requests each process of a
// selection test issues per pass: with one, a contiguous and a strided
// test are the same accesses.
const MinPerProcess = 4

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

// SelectRow is one test's outcome on one seed.
type SelectRow struct {
	Test    string
	Seed    uint64
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
// selection, for each seed, and writes select.csv, select_seeds.csv and
// report.html to cfg.Out. Its rows are by seed, then test.
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
	if cfg.Seeds == 0 {
		cfg.Seeds = 1
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	type test struct {
		name   string
		phases []workload.Pattern
	}
	sized := func(p workload.Pattern) workload.Pattern {
		p.TotalBytes = max(cfg.Total/(p.RequestSize*int64(p.Processes)), MinPerProcess) * p.RequestSize * int64(p.Processes)
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
	type job struct {
		test test
		seed uint64
	}
	var jobs []job
	for k := range cfg.Seeds {
		for _, tt := range tests {
			jobs = append(jobs, job{tt, cfg.Seed + uint64(k)})
		}
	}
	rows := make([]SelectRow, len(jobs))
	err := selectParallel(ctx, len(jobs), cfg.Workers, func(i int) error {
		c := cfg
		c.Seed = jobs[i].seed
		var err error
		rows[i], err = selectTest(ctx, c, jobs[i].test.name, jobs[i].test.phases)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, writeSelect(cfg, rows)
}

// selectParallel runs f(0) ... f(n-1) on workers goroutines; the first error
// is returned and the rest not started.
func selectParallel(ctx context.Context, n, workers int, f func(int) error) error {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next == n || ctx.Err() != nil {
					if first == nil {
						first = ctx.Err()
					}
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// selectTest runs one test under each algorithm and under dynamic
// selection (cfg.Seed).
func selectTest(ctx context.Context, cfg SelectConfig, name string, phases []workload.Pattern) (SelectRow, error) {
	p := name
	base := sim.Config{Patterns: phases, IONodes: cfg.IONodes, Threads: cfg.Threads, Seed: cfg.Seed, MaxTime: 30 * 24 * time.Hour}
	row := SelectRow{Test: name, Seed: cfg.Seed, Static: map[string]time.Duration{}}
	var bestBW float64
	for _, s := range cfg.Schedulers {
		c := base
		c.Scheduler = s
		res, err := sim.Run(ctx, c, sim.Hooks{})
		if err != nil {
			return row, fmt.Errorf("%s under %s: %w", p, s, err)
		}
		row.Static[s] = res.Makespan
		if row.Best == "" || res.Makespan < row.Static[row.Best] {
			row.Best, bestBW = s, res.Bandwidth
		}
	}
	dyn, changes, fromBW, err := simulateDynamic(ctx, base, cfg)
	if err != nil {
		return row, fmt.Errorf("%s, dynamic: %w", p, err)
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
	return row, nil
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
			f := selection.Figures{Bytes: o.Bytes, ReadBytes: readBytes(o), Served: o.Completed}
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

// readBytes is the bytes o read: its majority operation's, or the rest.
func readBytes(o access.Observation) int64 {
	op := min(max(o.OpBytes, 0), o.Bytes)
	if o.Op == rw.Read {
		return op
	}
	return o.Bytes - op
}

// SelectSummary is one test over every seed.
type SelectSummary struct {
	Test        string
	Min, Median float64 // of SelectRow.Late over the seeds
	Within      int     // seeds within 5% from the 20th period on
	Seeds       int
	Best        map[string]int // the seeds on which each algorithm was the best static
}

// SummariseSelect summarises rows (RunSelect's) per test, in the order of
// the tests; seedsAll is how many seeds were within 5% on every test.
func SummariseSelect(rows []SelectRow) (sum []SelectSummary, seedsAll, seeds int) {
	byTest := map[string][]SelectRow{}
	var order []string
	bySeed := map[uint64]bool{}
	for _, r := range rows {
		if _, ok := byTest[r.Test]; !ok {
			order = append(order, r.Test)
		}
		byTest[r.Test] = append(byTest[r.Test], r)
		if ok, seen := bySeed[r.Seed]; !seen || ok {
			bySeed[r.Seed] = r.Within5Pct
		}
	}
	for _, t := range order {
		rs := byTest[t]
		late := make([]float64, len(rs))
		s := SelectSummary{Test: t, Seeds: len(rs), Best: map[string]int{}}
		for k, r := range rs {
			late[k] = r.Late
			s.Best[r.Best]++
			if r.Within5Pct {
				s.Within++
			}
		}
		slices.Sort(late)
		s.Min = late[0]
		if n := len(late); n%2 == 1 {
			s.Median = late[n/2]
		} else {
			s.Median = (late[n/2-1] + late[n/2]) / 2
		}
		sum = append(sum, s)
	}
	for _, ok := range bySeed {
		if ok {
			seedsAll++
		}
	}
	return sum, seedsAll, len(bySeed)
}

func writeSelect(cfg SelectConfig, rows []SelectRow) error {
	header := []string{"test", "seed"}
	for _, s := range cfg.Schedulers {
		header = append(header, s+" (s)")
	}
	header = append(header, "best static", "dynamic (s)", "changes", "best / dynamic (makespan)", "dynamic / best from period 1 (bandwidth)", "from period 5", "from period 20", "within 5% from period 20")
	var out [][]string
	for _, r := range rows {
		line := []string{r.Test, strconv.FormatUint(r.Seed, 10)}
		for _, s := range cfg.Schedulers {
			line = append(line, f3(r.Static[s].Seconds()))
		}
		line = append(line, r.Best, f3(r.Dynamic.Seconds()), strconv.Itoa(r.Changes), f3(r.Ratio), f3(r.From[0]), f3(r.From[1]), f3(r.From[2]), strconv.FormatBool(r.Within5Pct))
		out = append(out, line)
	}
	if cfg.Out == "" {
		return nil
	}
	if err := WriteCSV(cfg.Out, "select.csv", header, out); err != nil {
		return err
	}
	sum, all, seeds := SummariseSelect(rows)
	sumHeader := []string{"test", "seeds", "within 5% from period 20", "min dynamic / best from period 20", "median", "best static (seeds)"}
	var sumRows [][]string
	for _, s := range sum {
		var best []string
		for _, n := range cfg.Schedulers {
			if s.Best[n] > 0 {
				best = append(best, fmt.Sprintf("%s %d", n, s.Best[n]))
			}
		}
		sumRows = append(sumRows, []string{s.Test, strconv.Itoa(s.Seeds), strconv.Itoa(s.Within), f3(s.Min), f3(s.Median), strings.Join(best, ", ")})
	}
	if err := WriteCSV(cfg.Out, "select_seeds.csv", sumHeader, sumRows); err != nil {
		return err
	}
	rep := &Report{Title: "Dynamic scheduler selection on the JLESC AGIOS selection report's tests", Command: cfg.Command,
		Intro: fmt.Sprintf("Each test (a shared file, written then read %d times, %d I/O nodes with %d dispatch slots each) under every algorithm and under %s choosing among them every %v, on %d seeds. From its 20th period on, dynamic's bandwidth is within 5%% of the best static algorithm's on every test for %d of %d seeds.",
			cfg.Repeat, cfg.IONodes, cfg.Threads, selectionName(cfg), cfg.Period, seeds, all, seeds),
		Sections: []Section{{Title: "Over the seeds", Tables: []Table{{Title: "Per test", Header: sumHeader, Rows: sumRows}}},
			{Title: "Makespans", Tables: []Table{{Title: "Per test and seed", Header: header, Rows: out}}}}}
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
	if cfg.Policy == selection.PolicySettle {
		how = "explore-then-commit (settle) on each I/O node, exploring in lockstep"
	} else if cfg.Policy != "" && cfg.Policy != selection.PolicyAGIOS {
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
