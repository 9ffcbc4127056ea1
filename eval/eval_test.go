package eval

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

var windows = []time.Duration{125 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}

// synthRows is a small synthetic dataset: the six Table III patterns plus
// two more scenarios; in scenario i the best window is i%7, 30% ahead of
// the others, and every (scenario, window) has n noisy per-second rows
// (plus an idle row and a FIFO row that must be ignored).
func synthRows(n int, rng *rand.Rand) []dataset.Row {
	scen := []workload.Scenario{}
	for _, p := range TableIII() {
		scen = append(scen, p.Scenario)
	}
	extra := TableIII()[0].Scenario
	extra.Processes = 256
	scen = append(scen, extra)
	extra.Op = rw.Write
	scen = append(scen, extra)
	var rows []dataset.Row
	for i, s := range scen {
		for w, win := range windows {
			mean := 100e6 * (1 + 0.05*float64(w))
			if w == i%len(windows) {
				mean = 100e6 * 1.6
			}
			for sec := 0; sec <= n; sec++ {
				r := dataset.Row{Run: dataset.Run{Scenario: s, Scheduler: "twins", Window: win}, Second: sec, Class: s.Class()}
				if sec < n { // the last second is idle
					r.Obs = access.Observation{Op: s.Op, Requests: 10, Bytes: 1, Bandwidth: mean * (1 + 0.3*rng.NormFloat64())}
					r.Obs.Bandwidth = math.Max(r.Obs.Bandwidth, 0)
				}
				rows = append(rows, r)
			}
		}
		rows = append(rows, dataset.Row{Run: dataset.Run{Scenario: s, Scheduler: "fifo"}, Obs: access.Observation{Op: s.Op, Requests: 1, Bandwidth: 1e12}})
	}
	return rows
}

func TestTwinsEnvs(t *testing.T) {
	d, err := TwinsEnvs(synthRows(40, rand.New(rand.NewPCG(1, 1))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Windows, windows) {
		t.Fatalf("windows %v, want %v", d.Windows, windows)
	}
	if len(d.Envs) != 8 {
		t.Fatalf("%d environments, want 8", len(d.Envs))
	}
	for i, p := range TableIII() {
		e := d.Env(p.Scenario)
		if e == nil {
			t.Fatalf("pattern %s missing", p.Name)
		}
		if e.Best != i%len(windows) || e.Horizon != 40 {
			t.Errorf("pattern %s: best %d horizon %d, want %d and 40 (means %v)", p.Name, e.Best, e.Horizon, i%len(windows), e.Means)
		}
	}
	if _, err := TwinsEnvs(nil); !errors.Is(err, ErrNoData) {
		t.Fatalf("TwinsEnvs(nil) = %v, want ErrNoData", err)
	}
}

// TestHandChecked: two arms measured {1} and {1, 5} (means 1 and 3).
// "greedy" starts on arm 0 (all estimates zero, ties lowest), gets reward 1
// and never leaves it: precision 0, performance 1/3 in every bin.
// "ucb1" tries arm 0 then arm 1, then follows its bound deterministically.
func TestHandChecked(t *testing.T) {
	e, err := NewEnv("x", []string{"a", "b"}, [][]float64{{1}, {1, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Best != 1 || e.Means[1] != 3 || e.Relative(0) != 1.0/3 {
		t.Fatalf("env best %d means %v relative %v", e.Best, e.Means, e.Relative(0))
	}
	c, err := Simulate(e, Spec{Label: "g", Policy: "greedy"}, Config{Reps: 3, Bin: 2, Steps: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := Curve{Env: "x", Spec: "g", Steps: 5, Bin: 2, Precision: []float64{0, 0, 0}, Performance: []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	// Binning and averaging by hand: steps 0..2 with arms 1, 0, 1 in one
	// repetition and 1, 1, 1 in another.
	a := newAccum(3)
	for _, arms := range [][]int{{1, 0, 1}, {1, 1, 1}} {
		for s, arm := range arms {
			a.add(s, e, arm)
		}
	}
	got := a.curve("x", "h", 2)
	wantP := []float64{3.0 / 4, 1}
	wantF := []float64{(1 + 1.0/3 + 1 + 1) / 4, 1}
	for b := range wantP {
		if math.Abs(got.Precision[b]-wantP[b]) > 1e-12 || math.Abs(got.Performance[b]-wantF[b]) > 1e-12 {
			t.Fatalf("bins %v %v, want %v %v", got.Precision, got.Performance, wantP, wantF)
		}
	}
	if p, f := got.Head(100); math.Abs(p-(3.0/4+1)/2) > 1e-12 || math.Abs(f-(wantF[0]+1)/2) > 1e-12 {
		t.Fatalf("Head(100) = %v %v", p, f)
	}
}

func TestSummarise(t *testing.T) {
	tests := []struct {
		in   []float64
		want Stats
	}{
		{[]float64{3, 1, 2}, Stats{1, 2, 2, 3}},
		{[]float64{4, 1, 2, 3}, Stats{1, 2.5, 2.5, 4}},
		{[]float64{7}, Stats{7, 7, 7, 7}},
	}
	for _, tt := range tests {
		if got := Summarise(tt.in); got != tt.want {
			t.Errorf("Summarise(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if s := Summarise(nil); !math.IsNaN(s.Median) {
		t.Errorf("Summarise(nil) = %+v, want NaN", s)
	}
}

// TestPrecisionRises: on synthetic data with a clear best window, the
// papers' egreedy and Thompson sampling choose it more often in the last bin
// than in the first.
func TestPrecisionRises(t *testing.T) {
	d, err := TwinsEnvs(synthRows(120, rand.New(rand.NewPCG(2, 2))))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []Spec{{Label: "e", Policy: "egreedy"}, {Label: "t", Policy: "thompson"}} {
		for _, e := range d.Envs[:3] {
			c, err := Simulate(e, spec, Config{Reps: 30, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			p0, _ := c.First()
			p1, f1 := c.Last()
			if p1 < p0+0.3 || p1 < 0.5 || f1 < 0.85 {
				t.Errorf("%s on %s: precision %.2f -> %.2f, last performance %.2f; want a rise of 0.3 to >= 0.5 and performance >= 0.85", spec.Policy, e.Key, p0, p1, f1)
			}
		}
	}
}

// TestParallelDeterministic: results do not depend on the number of workers.
func TestParallelDeterministic(t *testing.T) {
	d, err := TwinsEnvs(synthRows(30, rand.New(rand.NewPCG(3, 3))))
	if err != nil {
		t.Fatal(err)
	}
	specs := DefaultSpecs(0)[:3]
	a, err := SimulateAll(context.Background(), d.Envs, specs, Config{Reps: 5, Workers: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	b, err := SimulateAll(context.Background(), d.Envs, specs, Config{Reps: 5, Workers: 3, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("1 and 3 workers gave different curves")
	}
}

// TestSharedHelps: contexts whose neighbours share their best arm start
// better with sharing than cold.
func TestSharedHelps(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var envs []*Env
	for i := range 12 {
		best := 2
		if i >= 6 {
			best = 0
		}
		samples := make([][]float64, 4)
		for a := range samples {
			m := 100.0
			if a == best {
				m = 150
			}
			for range 5 {
				samples[a] = append(samples[a], m*(1+0.1*rng.NormFloat64()))
			}
		}
		e, err := NewEnv(string(rune('a'+i)), []string{"1", "2", "4", "8"}, samples)
		if err != nil {
			t.Fatal(err)
		}
		e.Features = []float64{float64(i / 6 * 10), float64(i % 6)}
		envs = append(envs, e)
	}
	for _, p := range []string{"egreedy", "thompson"} {
		cold, warm, err := SimulateShared(context.Background(), envs, Spec{Label: p, Policy: p, Options: bandit.Options{Neighbors: 2}}, Config{Reps: 10, Steps: 30, Workers: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		cf, _, _, _ := curveStats(cold)
		wf, _, _, _ := curveStats(warm)
		if wf.Mean < cf.Mean+0.05 || wf.Mean < 0.9 {
			t.Errorf("%s: first-bin performance cold %.3f, shared %.3f; want shared >= 0.9 and ahead", p, cf.Mean, wf.Mean)
		}
	}
}

func TestEvaluateBanditWrites(t *testing.T) {
	d, err := TwinsEnvs(synthRows(30, rand.New(rand.NewPCG(5, 5))))
	if err != nil {
		t.Fatal(err)
	}
	cfg := BanditConfig{Config: Config{Reps: 4, Workers: 2, Seed: 1}, Specs: DefaultSpecs(0)[:2]}
	r, err := EvaluateBandit(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Summaries) != 2 || len(r.Fig4) != 6 || len(r.Fig4[0]) != len(PaperEpsilons) {
		t.Fatalf("summaries %d, fig4 %d x %d", len(r.Summaries), len(r.Fig4), len(r.Fig4[0]))
	}
	dir := t.TempDir()
	if err := r.Write(dir, "adaptio eval bandit", cfg.Config); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"curves.csv", "fig4.csv", "fig5.csv", "table2.csv", "table4.csv", "summary.csv", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f, err, len(b))
		}
		if f == "report.html" {
			s := string(b)
			if strings.Count(s, "<svg") < 6 || strings.Contains(s, "src=\"http") || strings.Contains(s, "href=\"http") {
				t.Fatalf("report.html: %d SVGs or loads from the network", strings.Count(s, "<svg"))
			}
		}
	}
}

// TestInterleaved: every pattern of an interleaved run gets its full curve
// and learns as it does alone.
func TestInterleaved(t *testing.T) {
	d, err := TwinsEnvs(synthRows(60, rand.New(rand.NewPCG(6, 6))))
	if err != nil {
		t.Fatal(err)
	}
	envs := d.Envs[:3]
	cs, err := SimulateInterleaved(envs, Spec{Label: "t", Policy: "thompson"}, Config{Reps: 10, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if c.Env != envs[i].Key || c.Bins() != 6 {
			t.Fatalf("curve %d: env %s, %d bins; want %s and 6", i, c.Env, c.Bins(), envs[i].Key)
		}
		p0, _ := c.First()
		if p, _ := c.Last(); p < 0.5 || p < p0+0.2 {
			t.Errorf("%s: precision %.2f -> %.2f interleaved, want a rise of 0.2 to >= 0.5", c.Env, p0, p)
		}
	}
}

// TestThompsonAheadEarly: on the synthetic scenarios, tuned Thompson sampling
// picks the best window more often than the papers' epsilon-greedy over the
// first 100 observations (the sim-data target, checked on known data).
func TestThompsonAheadEarly(t *testing.T) {
	d, err := TwinsEnvs(synthRows(100, rand.New(rand.NewPCG(7, 7))))
	if err != nil {
		t.Fatal(err)
	}
	specs := []Spec{{Label: "e", Policy: "egreedy"}, {Label: "t", Policy: "thompson", Options: bandit.Options{Exploration: 0.35}}}
	cs, err := SimulateAll(context.Background(), d.Envs, specs, Config{Reps: 20, Seed: 3, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var head [2]float64
	for s := range specs {
		for _, c := range cs[s] {
			p, _ := c.Head(100)
			head[s] += p / float64(len(cs[s]))
		}
	}
	if head[1] < head[0]+0.1 {
		t.Fatalf("precision over the first 100 observations: egreedy %.3f, thompson %.3f; want thompson ahead by 0.1", head[0], head[1])
	}
}

// TestTwinsEnvsPoolsRepetitions: rows of a second repetition of the grid
// add reward samples to the same environments and lengthen the horizon.
func TestTwinsEnvsPoolsRepetitions(t *testing.T) {
	rows := synthRows(40, rand.New(rand.NewPCG(1, 1)))
	again := synthRows(30, rand.New(rand.NewPCG(2, 2)))
	for i := range again {
		again[i].Rep = 1
	}
	d, err := TwinsEnvs(append(rows, again...))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Envs) != 8 {
		t.Fatalf("%d environments, want 8 (repetitions are not scenarios)", len(d.Envs))
	}
	for _, e := range d.Envs {
		if e.Horizon != 70 {
			t.Errorf("%s: horizon %d, want 40+30", e.Key, e.Horizon)
		}
	}
}

// TestTwinsEnvsLeavesOutPartialIntervals: an experiment's last, shorter
// interval is not a sample (its bandwidth, bytes over a fraction of a
// second, would make arm 0 the best by itself), unless the experiment has
// no full interval.
func TestTwinsEnvsLeavesOutPartialIntervals(t *testing.T) {
	s := TableIII()[0].Scenario
	short := s
	short.Processes = 256
	var rows []dataset.Row
	add := func(sc workload.Scenario, w time.Duration, sec int, iv time.Duration, bw float64) {
		rows = append(rows, dataset.Row{Run: dataset.Run{Scenario: sc, Scheduler: "twins", Window: w}, Second: sec,
			Obs: access.Observation{Op: sc.Op, Requests: 10, Bytes: 1, Interval: iv, Bandwidth: bw}})
	}
	for w, win := range windows[:2] {
		for sec := range 10 {
			add(s, win, sec, time.Second, 100e6*float64(1+w)) // arm 1 is twice arm 0
		}
		add(short, win, 0, 300*time.Millisecond, 100e6*float64(2-w)) // arm 0 is twice arm 1
	}
	add(s, windows[0], 10, 4*time.Millisecond, 100e9) // the last 4 ms, 1,000 times arm 0's second
	d, err := TwinsEnvs(rows)
	if err != nil {
		t.Fatal(err)
	}
	e := d.Env(s)
	if e.Best != 1 || e.Horizon != 10 || e.Means[0] != 100e6 {
		t.Fatalf("best %d horizon %d means %v, want arm 1, 10 samples each and arm 0 at 1e8 (the partial interval left out)", e.Best, e.Horizon, e.Means)
	}
	if e := d.Env(short); e == nil || e.Best != 0 || e.Horizon != 1 {
		t.Fatalf("an experiment shorter than an interval: %+v, want its one partial interval per arm (best arm 0)", e)
	}
}
