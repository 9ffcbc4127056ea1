package eval

import (
	"cmp"
	"context"
	"fmt"
	"io"
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
	// Variants, if set, replaces Policy, Period and Shared: each variant
	// of dynamic selection runs on every test and seed, against the same
	// static runs (simulated once).
	Variants []SelectVariant
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
	// Workers is how many simulations run in parallel (default 1): each
	// static run and each dynamic run is one, the longest started first.
	Workers int
	// Progress, if set, receives a line as runs finish (at most one
	// every 10 s, and the last).
	Progress io.Writer
	Out      string
	Command  string
}

// SelectVariant is one configuration of dynamic selection.
type SelectVariant struct {
	Policy string        // as SelectConfig.Policy
	Period time.Duration // as SelectConfig.Period (default 1 s)
	Shared bool          // as SelectConfig.Shared
}

// String names v ("settle 1s", "thompson 4s shared").
func (v SelectVariant) String() string {
	p := v.Policy
	if p == "" {
		p = selection.PolicyAGIOS
	}
	s := p + " " + v.Period.String()
	if v.Shared {
		s += " shared"
	}
	return s
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

// SelectRow is one test's outcome on one seed under one variant.
type SelectRow struct {
	Test    string
	Seed    uint64
	Variant string                   // SelectVariant.String()
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

// variants is cfg's variants: Variants, or the one of Policy, Period and
// Shared; periods default to 1 s.
func (cfg SelectConfig) variants() []SelectVariant {
	vs := slices.Clone(cfg.Variants)
	if len(vs) == 0 {
		vs = []SelectVariant{{Policy: cfg.Policy, Period: cfg.Period, Shared: cfg.Shared}}
	}
	for k := range vs {
		if vs[k].Period == 0 {
			vs[k].Period = time.Second
		}
	}
	return vs
}

// RunSelect runs every test under each algorithm and under each variant
// of dynamic selection, for each seed, and writes select.csv,
// select_seeds.csv and report.html to cfg.Out. Its rows are by variant,
// seed, then test.
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
	variants := cfg.variants()
	type test struct {
		name   string
		phases []workload.Pattern
		bytes  int64 // moved by the test: the cost of its runs, roughly
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
			var bytes int64
			for _, p := range seq {
				names = append(names, strings.Replace(sized(p).String(), "-write", "", 1))
			}
			for range cfg.Repeat {
				for _, p := range seq {
					phases = append(phases, sim.WriteRead(sized(p), 1)...)
					bytes += 2 * sized(p).TotalBytes
				}
			}
			tests = append(tests, test{strings.Join(names, " / "), phases, bytes})
		}
	} else {
		for _, p := range SelectTests() {
			p = sized(p)
			tests = append(tests, test{strings.Replace(p.String(), "-write", "", 1), sim.WriteRead(p, cfg.Repeat), 2 * int64(cfg.Repeat) * p.TotalBytes})
		}
	}
	// One job per simulation: each static algorithm once per test and
	// seed, each variant's dynamic run; the largest tests first, so that
	// the workers finish together.
	type job struct {
		test, seed int
		static     string // the algorithm, or "" for a dynamic run
		variant    int
	}
	var jobs []job
	for k := range cfg.Seeds {
		for t := range tests {
			for _, s := range cfg.Schedulers {
				jobs = append(jobs, job{t, k, s, 0})
			}
			for v := range variants {
				jobs = append(jobs, job{t, k, "", v})
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(tests[b.test].bytes, tests[a.test].bytes) })
	static := make([]map[string]sim.Result, len(tests)*cfg.Seeds)
	for k := range static {
		static[k] = map[string]sim.Result{}
	}
	type dynamic struct {
		makespan time.Duration
		changes  int
		bw       [3]float64
	}
	dyn := make([]dynamic, len(tests)*cfg.Seeds*len(variants))
	var mu sync.Mutex
	progress := newSelectProgress(cfg.Progress, len(jobs))
	err := selectParallel(ctx, len(jobs), cfg.Workers, func(i int) error {
		j := jobs[i]
		tt := tests[j.test]
		base := sim.Config{Patterns: tt.phases, IONodes: cfg.IONodes, Threads: cfg.Threads, Seed: cfg.Seed + uint64(j.seed), MaxTime: 30 * 24 * time.Hour}
		if j.static != "" {
			base.Scheduler = j.static
			res, err := sim.Run(ctx, base, sim.Hooks{})
			if err != nil {
				return fmt.Errorf("%s under %s: %w", tt.name, j.static, err)
			}
			mu.Lock()
			static[j.seed*len(tests)+j.test][j.static] = res
			mu.Unlock()
		} else {
			v := variants[j.variant]
			c := cfg
			c.Seed, c.Policy, c.Period, c.Shared = base.Seed, v.Policy, v.Period, v.Shared
			m, changes, bw, err := simulateDynamic(ctx, base, c)
			if err != nil {
				return fmt.Errorf("%s, dynamic (%s): %w", tt.name, v, err)
			}
			dyn[(j.variant*cfg.Seeds+j.seed)*len(tests)+j.test] = dynamic{m, changes, bw}
		}
		progress.done()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var rows []SelectRow
	for v := range variants {
		for k := range cfg.Seeds {
			for t, tt := range tests {
				st := static[k*len(tests)+t]
				d := dyn[(v*cfg.Seeds+k)*len(tests)+t]
				row := SelectRow{Test: tt.name, Seed: cfg.Seed + uint64(k), Variant: variants[v].String(), Static: map[string]time.Duration{}, Dynamic: d.makespan, Changes: d.changes}
				var bestBW float64
				for _, s := range cfg.Schedulers {
					row.Static[s] = st[s].Makespan
					if row.Best == "" || st[s].Makespan < row.Static[row.Best] {
						row.Best, bestBW = s, st[s].Bandwidth
					}
				}
				row.Ratio = row.Static[row.Best].Seconds() / d.makespan.Seconds()
				for i, bw := range d.bw {
					if bw > 0 && bestBW > 0 {
						row.From[i] = bw / bestBW
					}
				}
				row.Late = row.From[2]
				row.Within5Pct = row.Late >= 1/1.05
				rows = append(rows, row)
			}
		}
	}
	return rows, writeSelect(cfg, rows)
}

// selectProgress writes how many runs are done, and the time they took,
// at most every 10 s.
type selectProgress struct {
	w           io.Writer
	mu          sync.Mutex
	n, total    int
	start, last time.Time
}

func newSelectProgress(w io.Writer, total int) *selectProgress {
	now := time.Now()
	return &selectProgress{w: w, total: total, start: now, last: now}
}

func (p *selectProgress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	now := time.Now()
	if now.Sub(p.last) < 10*time.Second && p.n < p.total {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	left := ""
	if p.n < p.total {
		// The largest tests run first: this overstates what is left.
		left = fmt.Sprintf(", at most about %v left", (time.Duration(float64(el) / float64(p.n) * float64(p.total-p.n))).Round(time.Second))
	}
	fmt.Fprintf(p.w, "eval select: %d of %d runs done in %v%s\n", p.n, p.total, el.Round(time.Second), left)
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
			f := selection.FiguresOf(o)
			if d.Shared() {
				sum = sum.Add(f)
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

// SelectSummary is one test over every seed.
type SelectSummary struct {
	Test        string
	Min, Median float64 // of SelectRow.Late over the seeds
	Within      int     // seeds within 5% from the 20th period on
	Seeds       int
	Best        map[string]int // the seeds on which each algorithm was the best static
}

// SelectVariantSummary is one variant over every test and seed.
type SelectVariantSummary struct {
	Variant string
	Tests   []SelectSummary // in the order of the tests
	// SeedsAll is how many of the Seeds seeds were within 5% on every
	// test.
	SeedsAll, Seeds int
}

// SummariseSelect summarises rows (RunSelect's) per variant, then per
// test, in the order of the rows.
func SummariseSelect(rows []SelectRow) []SelectVariantSummary {
	var out []SelectVariantSummary
	byVariant := map[string][]SelectRow{}
	var variants []string
	for _, r := range rows {
		if _, ok := byVariant[r.Variant]; !ok {
			variants = append(variants, r.Variant)
		}
		byVariant[r.Variant] = append(byVariant[r.Variant], r)
	}
	for _, v := range variants {
		out = append(out, summariseVariant(v, byVariant[v]))
	}
	return out
}

func summariseVariant(variant string, rows []SelectRow) SelectVariantSummary {
	byTest := map[string][]SelectRow{}
	var order []string
	bySeed := map[uint64]bool{}
	var seeds []uint64
	for _, r := range rows {
		if _, ok := byTest[r.Test]; !ok {
			order = append(order, r.Test)
		}
		byTest[r.Test] = append(byTest[r.Test], r)
		ok, seen := bySeed[r.Seed]
		if !seen {
			seeds = append(seeds, r.Seed)
		}
		bySeed[r.Seed] = r.Within5Pct && (ok || !seen)
	}
	out := SelectVariantSummary{Variant: variant, Seeds: len(seeds)}
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
		out.Tests = append(out.Tests, s)
	}
	for _, seed := range seeds {
		if bySeed[seed] {
			out.SeedsAll++
		}
	}
	return out
}

func writeSelect(cfg SelectConfig, rows []SelectRow) error {
	header := []string{"variant", "test", "seed"}
	for _, s := range cfg.Schedulers {
		header = append(header, s+" (s)")
	}
	header = append(header, "best static", "dynamic (s)", "changes", "best / dynamic (makespan)", "dynamic / best from period 1 (bandwidth)", "from period 5", "from period 20", "within 5% from period 20")
	var out [][]string
	for _, r := range rows {
		line := []string{r.Variant, r.Test, strconv.FormatUint(r.Seed, 10)}
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
	sumHeader := []string{"variant", "test", "seeds", "within 5% from period 20", "min dynamic / best from period 20", "median", "best static (seeds)"}
	var sumRows [][]string
	var outcome []string
	for _, vs := range SummariseSelect(rows) {
		for _, s := range vs.Tests {
			var best []string
			for _, n := range cfg.Schedulers {
				if s.Best[n] > 0 {
					best = append(best, fmt.Sprintf("%s %d", n, s.Best[n]))
				}
			}
			sumRows = append(sumRows, []string{vs.Variant, s.Test, strconv.Itoa(s.Seeds), strconv.Itoa(s.Within), f3(s.Min), f3(s.Median), strings.Join(best, ", ")})
		}
		outcome = append(outcome, fmt.Sprintf("%s: %d of %d seeds", vs.Variant, vs.SeedsAll, vs.Seeds))
	}
	if err := WriteCSV(cfg.Out, "select_seeds.csv", sumHeader, sumRows); err != nil {
		return err
	}
	var hows []string
	for _, v := range cfg.variants() {
		c := cfg
		c.Policy, c.Shared = v.Policy, v.Shared
		hows = append(hows, fmt.Sprintf("%s choosing every %v", selectionName(c), v.Period))
	}
	rep := &Report{Title: "Dynamic scheduler selection on the JLESC AGIOS selection report's tests", Command: cfg.Command,
		Intro: fmt.Sprintf("Each test (a shared file, written then read %d times, %d I/O nodes with %d dispatch slots each) under every algorithm and under dynamic selection (%s), on %d seeds. Seeds on which dynamic's bandwidth from its 20th period on is within 5%% of the best static algorithm's on every test: %s.",
			cfg.Repeat, cfg.IONodes, cfg.Threads, strings.Join(hows, "; "), cfg.Seeds, strings.Join(outcome, "; ")),
		Sections: []Section{{Title: "Over the seeds", Tables: []Table{{Title: "Per variant and test", Header: sumHeader, Rows: sumRows}}},
			{Title: "Makespans", Tables: []Table{{Title: "Per variant, test and seed", Header: header, Rows: out}}}}}
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
