package eval

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ForgeConfig configures the bandit evaluation on the FORGE measurements.
type ForgeConfig struct {
	Config         // Steps 0 means 200
	Path    string // FORGE results file
	Out     string // output directory (created)
	Specs   []Spec // policies (nil: DefaultSpecs(Neighbors))
	Command string // recorded in the report
	// Neighbors is the number of nearest known patterns a new pattern's
	// prior comes from in the shared evaluation (default 3).
	Neighbors int
}

// ForgeSummary condenses one policy on FORGE, learning alone (cold) and
// from its neighbours (shared).
type ForgeSummary struct {
	Label                    string
	ColdFirst, ColdLast      Stats // performance of the first and last bins over contexts
	SharedFirst, SharedLast  Stats
	ColdFirstPrec, ColdLastP Stats
}

// ForgeResult is the outcome of EvaluateForge.
type ForgeResult struct {
	Envs      []*Env
	Skipped   []string
	Specs     []Spec
	Cold      [][]Curve // [spec][env]
	Shared    [][]Curve
	Summaries []ForgeSummary
}

// EvaluateForge runs every spec on the FORGE environments, cold and shared
// (see SimulateShared).
func EvaluateForge(ctx context.Context, envs []*Env, cfg ForgeConfig) (*ForgeResult, error) {
	if cfg.Steps == 0 {
		cfg.Steps = 200
	}
	if cfg.Neighbors == 0 {
		cfg.Neighbors = 3
	}
	if cfg.Specs == nil {
		cfg.Specs = DefaultSpecs(cfg.Neighbors)
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	r := &ForgeResult{Envs: envs, Specs: cfg.Specs}
	for _, s := range cfg.Specs {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "FORGE: %s on %d patterns, %d steps, %d repetitions, cold and shared\n", s.Label, len(envs), cfg.Steps, cfg.Reps)
		}
		cold, warm, err := SimulateShared(ctx, envs, s, cfg.Config)
		if err != nil {
			return nil, err
		}
		r.Cold = append(r.Cold, cold)
		r.Shared = append(r.Shared, warm)
		sum := ForgeSummary{Label: s.Label}
		sum.ColdFirst, sum.ColdLast, sum.ColdFirstPrec, sum.ColdLastP = curveStats(cold)
		sum.SharedFirst, sum.SharedLast, _, _ = curveStats(warm)
		r.Summaries = append(r.Summaries, sum)
	}
	return r, nil
}

// curveStats returns first- and last-bin performance and precision over curves.
func curveStats(cs []Curve) (first, last, firstPrec, lastPrec Stats) {
	var f, l, fp, lp []float64
	for _, c := range cs {
		p0, f0 := c.First()
		p1, f1 := c.Last()
		f, l, fp, lp = append(f, f0), append(l, f1), append(fp, p0), append(lp, p1)
	}
	return Summarise(f), Summarise(l), Summarise(fp), Summarise(lp)
}

// RunForge loads cfg.Path, evaluates and writes CSVs and report.html to cfg.Out.
func RunForge(ctx context.Context, cfg ForgeConfig) (*ForgeResult, error) {
	rows, err := LoadForge(cfg.Path)
	if err != nil {
		return nil, err
	}
	envs, skipped, err := ForgeEnvs(rows)
	if err != nil {
		return nil, err
	}
	r, err := EvaluateForge(ctx, envs, cfg)
	if err != nil {
		return nil, err
	}
	r.Skipped = skipped
	if cfg.Log != nil {
		for _, k := range skipped {
			fmt.Fprintf(cfg.Log, "eval forge: pattern %s skipped: not measured with every forwarder count %v\n", k, envs[0].Arms)
		}
		if len(envs[0].Arms) < 2 {
			fmt.Fprintf(cfg.Log, "eval forge: warning: %s has one forwarder count (%v): there is nothing to choose, every policy scores 1.000\n", cfg.Path, envs[0].Arms)
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return r, r.Write(cfg.Out, cfg.Command, cfg)
}

// Write writes forge_curves.csv, forge_summary.csv and report.html to dir.
func (r *ForgeResult) Write(dir, command string, cfg ForgeConfig) error {
	var rows [][]string
	for i, s := range r.Specs {
		for _, mode := range []struct {
			n  string
			cs []Curve
		}{{"cold", r.Cold[i]}, {"shared", r.Shared[i]}} {
			for _, c := range mode.cs {
				for b := range c.Precision {
					rows = append(rows, []string{s.Label, mode.n, c.Env, strconv.Itoa((b + 1) * c.Bin), f3(c.Precision[b]), f3(c.Performance[b])})
				}
			}
		}
	}
	if err := WriteCSV(dir, "forge_curves.csv", []string{"policy", "mode", "pattern", "step", "precision", "performance"}, rows); err != nil {
		return err
	}
	steps, bin, reps := cfg.Steps, cfg.Bin, cfg.Reps
	if steps == 0 {
		steps = 200
	}
	if bin == 0 {
		bin = 10
	}
	if reps == 0 {
		reps = 100
	}
	t := Table{Title: "Performance (chosen arm's mean bandwidth over the best arm's) over the FORGE patterns",
		Note: "Paper's egreedy(0.15): about 0.75 of the best in the first bin, median 0.96 in the last. Targets: last-bin median >= 0.995 and worst pattern >= 0.95; first-bin mean >= 0.85. " +
			"Cold: every pattern learns alone from zero. Shared: a pattern learns after all others were learned, starting from the prior of its nearest neighbours (features: log2 clients, log2 processes, 2*layout, 2*spatiality, log2 request size).",
		Header: []string{"policy", "cold first-bin mean", "cold first-bin median", "cold last-bin median", "cold last-bin min", "shared first-bin mean", "shared first-bin median", "shared last-bin median", "shared last-bin min", "cold last-bin precision median"}}
	for _, s := range r.Summaries {
		t.Rows = append(t.Rows, []string{s.Label, f3(s.ColdFirst.Mean), f3(s.ColdFirst.Median), f3(s.ColdLast.Median), f3(s.ColdLast.Min),
			f3(s.SharedFirst.Mean), f3(s.SharedFirst.Median), f3(s.SharedLast.Median), f3(s.SharedLast.Min), f3(s.ColdLastP.Median)})
	}
	if err := WriteCSV(dir, "forge_summary.csv", t.Header, t.Rows); err != nil {
		return err
	}
	ops := map[string]bool{}
	for _, e := range r.Envs {
		ops[e.Group] = true
	}
	kinds := strings.Join(slices.Sorted(maps.Keys(ops)), " and ")
	intro := fmt.Sprintf("%d %s patterns of %s (context = clients, processes, layout, spatiality, request size); arms = forwarders %v (direct: no forwarder); reward = one of the measured bandwidths of the arm, drawn at random; %d steps, bins of %d, %d repetitions.",
		len(r.Envs), kinds, filepath.Base(cfg.Path), r.Envs[0].Arms, steps, bin, reps)
	if len(r.Skipped) > 0 {
		intro += fmt.Sprintf(" %d patterns skipped for a missing forwarder count: %s.", len(r.Skipped), strings.Join(r.Skipped, ", "))
	}
	if len(r.Envs[0].Arms) < 2 {
		intro += " Warning: one forwarder count only, nothing to choose: every policy scores 1.000."
	}
	rep := &Report{Title: "adaptio: bandits on real FORGE measurements (" + filepath.Base(cfg.Path) + ")", Command: command, Intro: intro}
	sec := Section{Title: "Summary", Tables: []Table{t}}
	var cold, shared, worst []Series
	for i, s := range r.Specs {
		cold = append(cold, meanSeries(s.Label, r.Cold[i], false))
		shared = append(shared, meanSeries(s.Label, r.Shared[i], false))
		worst = append(worst, meanSeries(s.Label, r.Cold[i], true))
	}
	for _, f := range []struct {
		title string
		s     []Series
	}{{"Cold: mean performance over patterns", cold}, {"Shared: mean performance over patterns", shared}, {"Cold: worst pattern's performance", worst}} {
		svg, err := LinePlot(f.title, "step", "performance", f.s, 0, 1.01)
		if err != nil {
			return err
		}
		sec.Figures = append(sec.Figures, svg)
	}
	rep.Sections = append(rep.Sections, sec)
	return rep.WriteHTML(filepath.Join(dir, "report.html"))
}

// meanSeries is the mean (or, worst, the minimum) performance per bin over curves.
func meanSeries(name string, cs []Curve, worst bool) Series {
	s := Series{Name: name}
	for b := range cs[0].Performance {
		v := 0.0
		if worst {
			v = math.Inf(1)
		}
		for _, c := range cs {
			if worst {
				v = math.Min(v, c.Performance[b])
			} else {
				v += c.Performance[b] / float64(len(cs))
			}
		}
		s.X = append(s.X, float64((b+1)*cs[0].Bin))
		s.Y = append(s.Y, v)
	}
	return s
}
