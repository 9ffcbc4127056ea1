package eval

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/dataset"
)

// PaperEpsilons are the exploration rates of Bez et al., FGCS 2020, Fig. 4.
var PaperEpsilons = []float64{0.05, 0.10, 0.15, 0.30, 0.50, 0.70}

// DefaultSpecs is every policy evaluated beside the papers' epsilon-greedy
// (first). neighbors > 0 enables learning shared across contexts where an
// evaluation supports it.
func DefaultSpecs(neighbors int) []Spec {
	o := func(x bandit.Options) bandit.Options { x.Neighbors = neighbors; return x }
	return []Spec{
		{Label: "egreedy eps=0.15 (papers)", Policy: "egreedy", Options: o(bandit.Options{Epsilon: 0.15})},
		{Label: "egreedy-decay", Policy: "egreedy-decay", Options: o(bandit.Options{})},
		{Label: "egreedy-step 0.1", Policy: "egreedy-step", Options: o(bandit.Options{})},
		{Label: "egreedy-window 100", Policy: "egreedy-window", Options: o(bandit.Options{})},
		{Label: "ucb1", Policy: "ucb1", Options: o(bandit.Options{})},
		{Label: "ucb1 c=0.03", Policy: "ucb1", Options: o(bandit.Options{Exploration: 0.03})},
		{Label: "ucb1-discounted 0.99", Policy: "ucb1-discounted", Options: o(bandit.Options{})},
		{Label: "softmax", Policy: "softmax", Options: o(bandit.Options{})},
		{Label: "softmax T=0.01", Policy: "softmax", Options: o(bandit.Options{Temperature: 0.01})},
		{Label: "thompson", Policy: "thompson", Options: o(bandit.Options{})},
		{Label: "thompson c=0.35", Policy: "thompson", Options: o(bandit.Options{Exploration: 0.35})},
		{Label: "thompson floor=0.01", Policy: "thompson", Options: o(bandit.Options{Floor: 0.01})},
		{Label: "thompson-warm", Policy: "thompson-warm", Options: o(bandit.Options{})},
		{Label: "thompson-warm-fav", Policy: "thompson-warm-fav", Options: o(bandit.Options{})},
		{Label: "thompson-pool", Policy: "thompson-pool", Options: o(bandit.Options{})},
		{Label: "thompson-pool-fav", Policy: "thompson-pool-fav", Options: o(bandit.Options{})},
	}
}

// BanditConfig configures the offline evaluation of Bez et al., FGCS 2020, V-B on the
// simulator's dataset.
type BanditConfig struct {
	Config
	Data     string    // dataset directory (observations.csv)
	Out      string    // output directory (created)
	Specs    []Spec    // policies (nil: DefaultSpecs(0))
	Epsilons []float64 // Fig. 4 (nil: PaperEpsilons)
	Command  string    // command line, recorded in the report
	// Neighbors > 0 also evaluates every policy with learning shared across
	// scenarios (SimulateShared with that many neighbours; ScenarioFeatures).
	Neighbors int
}

// PolicySummary condenses one policy's evaluation over all scenarios.
type PolicySummary struct {
	Label           string
	LastPerf        Stats // last-bin performance over scenarios
	LastPrec        Stats // last-bin precision over scenarios
	Head100Prec     Stats // precision over the first 100 observations
	Head100Perf     Stats
	ImproveRead     Stats // precision improvement first->last bin, % (Table II)
	ImproveWrite    Stats
	ImproveAll      Stats
	ImproveSkipped  int       // scenarios with first-bin precision 0 (improvement undefined)
	PatternPrec     []float64 // last-bin precision of A-F (NaN if absent)
	PatternPerf     []float64 // last-bin performance of A-F
	PatternPerfMin  float64
	InterleavedPrec []float64 // Fig. 5: last-bin precision of A-F interleaved
}

// BanditResult is the outcome of EvaluateBandit.
type BanditResult struct {
	Data      *TwinsData
	Specs     []Spec
	Epsilons  []float64
	Patterns  []Pattern
	PatEnvs   []*Env    // environments of Patterns (nil if absent)
	Fig4      [][]Curve // [pattern][epsilon]; nil row when the pattern is absent
	Curves    [][]Curve // [spec][env]
	Shared    [][]Curve // [spec][env] with learning shared across scenarios (nil if not evaluated)
	Fig5      [][]Curve // [spec][present pattern]
	Summaries []PolicySummary
	// SharedSummaries condense Shared (pattern columns refer to it; no Fig. 5).
	SharedSummaries []PolicySummary
}

// EvaluateBandit runs the whole offline evaluation on data.
func EvaluateBandit(ctx context.Context, data *TwinsData, cfg BanditConfig) (*BanditResult, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if cfg.Specs == nil {
		cfg.Specs = DefaultSpecs(0)
	}
	if cfg.Epsilons == nil {
		cfg.Epsilons = PaperEpsilons
	}
	r := &BanditResult{Data: data, Specs: cfg.Specs, Epsilons: cfg.Epsilons, Patterns: TableIII()}
	var present []*Env
	for _, p := range r.Patterns {
		e := data.Env(p.Scenario)
		r.PatEnvs = append(r.PatEnvs, e)
		if e != nil {
			present = append(present, e)
		}
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	// Fig. 4: the papers' policy at every epsilon on A-F.
	logf("fig. 4: egreedy at %d epsilons on %d of the 6 patterns", len(cfg.Epsilons), len(present))
	var epsSpecs []Spec
	for _, eps := range cfg.Epsilons {
		epsSpecs = append(epsSpecs, Spec{Label: "eps=" + strconv.FormatFloat(eps, 'f', 2, 64), Policy: "egreedy", Options: bandit.Options{Epsilon: eps}})
	}
	fig4, err := SimulateAll(ctx, present, epsSpecs, cfg.Config)
	if err != nil {
		return nil, err
	}
	r.Fig4 = make([][]Curve, len(r.Patterns))
	j := 0
	for i, e := range r.PatEnvs {
		if e == nil {
			continue
		}
		for s := range epsSpecs {
			r.Fig4[i] = append(r.Fig4[i], fig4[s][j])
		}
		j++
	}
	// Every policy on every scenario.
	logf("all scenarios: %d policies x %d scenarios x %d repetitions", len(cfg.Specs), len(data.Envs), cfg.Reps)
	if r.Curves, err = SimulateAll(ctx, data.Envs, cfg.Specs, cfg.Config); err != nil {
		return nil, err
	}
	if cfg.Neighbors > 0 {
		logf("all scenarios, learning shared with the %d nearest scenarios", cfg.Neighbors)
		for _, s := range cfg.Specs {
			s.Options.Neighbors = cfg.Neighbors
			_, warm, err := SimulateShared(ctx, data.Envs, s, cfg.Config)
			if err != nil {
				return nil, err
			}
			r.Shared = append(r.Shared, warm)
		}
	}
	// Fig. 5: A-F interleaved.
	logf("fig. 5: %d policies on the patterns interleaved", len(cfg.Specs))
	r.Fig5 = make([][]Curve, len(cfg.Specs))
	if len(present) > 0 {
		err = parallel(ctx, len(cfg.Specs), cfg.Config, "interleaved runs", func(i int) error {
			var err error
			r.Fig5[i], err = SimulateInterleaved(present, cfg.Specs[i], cfg.Config)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	for i, s := range cfg.Specs {
		r.Summaries = append(r.Summaries, r.summarise(s.Label, r.Curves[i], r.Fig5[i]))
		if r.Shared != nil {
			r.SharedSummaries = append(r.SharedSummaries, r.summarise(s.Label+" + shared", r.Shared[i], nil))
		}
	}
	return r, nil
}

func (r *BanditResult) summarise(label string, curves, fig5 []Curve) PolicySummary {
	ps := PolicySummary{Label: label, PatternPerfMin: math.NaN()}
	var lastPerf, lastPrec, hp, hf, imR, imW, imA []float64
	for j, c := range curves {
		p, f := c.Last()
		lastPerf = append(lastPerf, f)
		lastPrec = append(lastPrec, p)
		a, b := c.Head(100)
		hp = append(hp, a)
		hf = append(hf, b)
		p0, _ := c.First()
		if p0 == 0 {
			ps.ImproveSkipped++
			continue
		}
		im := 100 * (p - p0) / p0
		imA = append(imA, im)
		if r.Data.Envs[j].Group == "read" {
			imR = append(imR, im)
		} else {
			imW = append(imW, im)
		}
	}
	ps.LastPerf, ps.LastPrec = Summarise(lastPerf), Summarise(lastPrec)
	ps.Head100Prec, ps.Head100Perf = Summarise(hp), Summarise(hf)
	ps.ImproveRead, ps.ImproveWrite, ps.ImproveAll = Summarise(imR), Summarise(imW), Summarise(imA)
	k := 0
	for _, e := range r.PatEnvs {
		prec, perf, inter := math.NaN(), math.NaN(), math.NaN()
		if e != nil {
			for j, env := range r.Data.Envs {
				if env == e {
					prec, perf = curves[j].Last()
				}
			}
			if fig5 != nil {
				inter, _ = fig5[k].Last()
			}
			k++
			if math.IsNaN(ps.PatternPerfMin) || perf < ps.PatternPerfMin {
				ps.PatternPerfMin = perf
			}
		}
		ps.PatternPrec = append(ps.PatternPrec, prec)
		ps.PatternPerf = append(ps.PatternPerf, perf)
		ps.InterleavedPrec = append(ps.InterleavedPrec, inter)
	}
	return ps
}

// RunBandit loads cfg.Data, evaluates and writes CSVs and report.html to cfg.Out.
func RunBandit(ctx context.Context, cfg BanditConfig) (*BanditResult, error) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "loading %s\n", cfg.Data)
	}
	rows, err := dataset.LoadObservations(cfg.Data)
	if err != nil {
		return nil, err
	}
	data, err := TwinsEnvs(rows)
	if err != nil {
		return nil, err
	}
	rows = nil
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "%d scenarios x %d windows (%d skipped for a missing window)\n", len(data.Envs), len(data.Windows), len(data.Skipped))
	}
	r, err := EvaluateBandit(ctx, data, cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return r, r.Write(cfg.Out, cfg.Command, cfg.Config)
}

func statRow(name string, s Stats) []string {
	return []string{name, f1(s.Min), f1(s.Median), f1(s.Mean), f1(s.Max)}
}

// Write writes the CSVs and report.html of a bandit evaluation to dir.
func (r *BanditResult) Write(dir, command string, cfg Config) error {
	// Per-scenario curves.
	var rows [][]string
	for i, s := range r.Specs {
		for j, c := range r.Curves[i] {
			for b := range c.Precision {
				rows = append(rows, []string{s.Label, r.Data.Envs[j].Key, strconv.Itoa((b + 1) * c.Bin), f3(c.Precision[b]), f3(c.Performance[b])})
			}
		}
	}
	if err := WriteCSV(dir, "curves.csv", []string{"policy", "scenario", "observations", "precision", "performance"}, rows); err != nil {
		return err
	}
	// Fig. 4.
	rows = nil
	horizon := "each scenario runs for as many steps as its least-measured window has observations (Bez et al., FGCS 2020: \"limited by the amount of measurements\"); draws are with replacement"
	if cfg.Steps > 0 {
		horizon = fmt.Sprintf("each scenario runs for %d steps, drawing measurements with replacement", cfg.Steps)
	}
	rep := &Report{Title: "adaptio: offline evaluation of the bandits on the simulator's dataset (Bez et al., FGCS 2020, V-B)", Command: command,
		Intro: fmt.Sprintf("%d scenarios, arms = TWINS windows %v; reward = a random per-second bandwidth measured for (scenario, window); %d repetitions; bins of %d observations; %s. Precision = share of choices of the window with the highest mean bandwidth; performance = mean bandwidth of the chosen window over the best window's. \"+ shared\": a scenario learned after all others, starting from the prior of its nearest scenarios.",
			len(r.Data.Envs), r.Data.Windows, cfg.Reps, cfg.Bin, horizon)}
	sec := Section{Title: "Fig. 4: precision per bin of the papers' epsilon-greedy, patterns A-F"}
	for i, p := range r.Patterns {
		if r.Fig4[i] == nil {
			sec.Text += "Pattern " + p.Name + " (" + p.Scenario.String() + ") is not in the dataset. "
			continue
		}
		var ser []Series
		for k, c := range r.Fig4[i] {
			ser = append(ser, BinSeries(c.Spec, c, false))
			for b := range c.Precision {
				rows = append(rows, []string{p.Name, p.Scenario.String(), strconv.FormatFloat(r.Epsilons[k], 'f', 2, 64), strconv.Itoa((b + 1) * c.Bin), f3(c.Precision[b]), f3(c.Performance[b])})
			}
		}
		svg, err := LinePlot("Pattern "+p.Name+": "+p.Scenario.String(), "observations", "precision", ser, 0, 1)
		if err != nil {
			return err
		}
		sec.Figures = append(sec.Figures, svg)
	}
	if err := WriteCSV(dir, "fig4.csv", []string{"pattern", "scenario", "epsilon", "observations", "precision", "performance"}, rows); err != nil {
		return err
	}
	rep.Sections = append(rep.Sections, sec)

	// Summary across policies.
	sum := Table{Title: "Targets: every policy over all scenarios",
		Note:   "Targets: last-bin performance >= 0.98 on each of A-F and median >= 0.99 over all scenarios (paper: >= 0.92 on A-F); precision over the first 100 observations above the papers' epsilon-greedy.",
		Header: []string{"policy", "last-bin perf median", "last-bin perf min", "last-bin perf min A-F", "last-bin precision median", "precision first 100 (mean)", "performance first 100 (mean)"}}
	rows = nil
	for _, s := range append(slices.Clone(r.Summaries), r.SharedSummaries...) {
		row := []string{s.Label, f3(s.LastPerf.Median), f3(s.LastPerf.Min), f3(s.PatternPerfMin), f3(s.LastPrec.Median), f3(s.Head100Prec.Mean), f3(s.Head100Perf.Mean)}
		sum.Rows = append(sum.Rows, row)
		rows = append(rows, row)
	}
	if err := WriteCSV(dir, "summary.csv", sum.Header, rows); err != nil {
		return err
	}
	// Table II.
	t2 := Table{Title: "Table II: precision improvement from the first to the last bin (%), all scenarios",
		Note:   "Paper (egreedy, 1,008 scenarios): READ 26.37 / 184.06 / 216.10 / 582.35; WRITE 64.13 / 253.89 / 272.39 / 553.90; Total 26.37 / 226.82 / 244.24 / 582.35. Scenarios whose first-bin precision is 0 are left out (improvement undefined); their number is given.",
		Header: []string{"policy / operation", "min", "median", "mean", "max"}}
	rows = nil
	for _, s := range append(slices.Clone(r.Summaries), r.SharedSummaries...) {
		for _, x := range []struct {
			n string
			s Stats
		}{{"READ", s.ImproveRead}, {"WRITE", s.ImproveWrite}, {"Total", s.ImproveAll}} {
			row := statRow(s.Label+" / "+x.n, x.s)
			t2.Rows = append(t2.Rows, row)
			rows = append(rows, append(row, strconv.Itoa(s.ImproveSkipped)))
		}
	}
	if err := WriteCSV(dir, "table2.csv", []string{"policy / operation", "min", "median", "mean", "max", "skipped"}, rows); err != nil {
		return err
	}
	// Table IV and Fig. 5 numbers.
	t4 := Table{Title: "Table IV: last-bin precision and performance of A-F (and Fig. 5: last-bin precision interleaved)",
		Note:   "Paper (egreedy 0.15): precision A-F 0.88 0.88 0.49 0.87 0.59 0.59; performance 0.99 0.96 0.96 0.97 0.98 0.92.",
		Header: []string{"policy", "metric", "A", "B", "C", "D", "E", "F"}}
	rows = nil
	for _, s := range append(slices.Clone(r.Summaries), r.SharedSummaries...) {
		for _, m := range []struct {
			n string
			v []float64
		}{{"precision", s.PatternPrec}, {"performance", s.PatternPerf}, {"precision interleaved", s.InterleavedPrec}} {
			row := []string{s.Label, m.n}
			for _, v := range m.v {
				row = append(row, f3(v))
			}
			t4.Rows = append(t4.Rows, row)
			rows = append(rows, row)
		}
	}
	if err := WriteCSV(dir, "table4.csv", t4.Header, rows); err != nil {
		return err
	}
	rep.Sections = append(rep.Sections, Section{Title: "Summary, Table II and Table IV", Tables: []Table{sum, t2, t4}})

	// Per-policy curves on A-F (separate and interleaved).
	rows = nil
	for i, s := range r.Specs {
		sec := Section{Title: "Policy " + s.Label + ": A-F separately and interleaved (Fig. 5)"}
		var sep, inter []Series
		k := 0
		for pi, p := range r.Patterns {
			e := r.PatEnvs[pi]
			if e == nil {
				continue
			}
			for j, env := range r.Data.Envs {
				if env == e {
					sep = append(sep, BinSeries(p.Name, r.Curves[i][j], false))
				}
			}
			if r.Fig5[i] != nil {
				c := r.Fig5[i][k]
				inter = append(inter, BinSeries(p.Name, c, false))
				for b := range c.Precision {
					rows = append(rows, []string{s.Label, p.Name, strconv.Itoa((b + 1) * c.Bin), f3(c.Precision[b]), f3(c.Performance[b])})
				}
			}
			k++
		}
		if len(sep) == 0 {
			continue
		}
		a, err := LinePlot(s.Label+": A-F separately", "observations", "precision", sep, 0, 1)
		if err != nil {
			return err
		}
		b, err := LinePlot(s.Label+": A-F interleaved at random", "observations of the pattern", "precision", inter, 0, 1)
		if err != nil {
			return err
		}
		sec.Figures = append(sec.Figures, a, b)
		rep.Sections = append(rep.Sections, sec)
	}
	if err := WriteCSV(dir, "fig5.csv", []string{"policy", "pattern", "observations", "precision", "performance"}, rows); err != nil {
		return err
	}
	return rep.WriteHTML(filepath.Join(dir, "report.html"))
}
