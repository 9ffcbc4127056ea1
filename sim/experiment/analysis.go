package experiment

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

// ScenarioOutcome gathers the experiments of one scenario.
type ScenarioOutcome struct {
	Scenario  workload.Scenario
	Twins     map[time.Duration]time.Duration // window -> makespan
	Baselines map[string]time.Duration        // scheduler -> makespan
}

// BestWindow returns the TWINS window with the smallest makespan (ties: the smaller window).
func (s ScenarioOutcome) BestWindow() (time.Duration, time.Duration, bool) {
	return s.extreme(func(a, b time.Duration) bool { return a < b })
}

// WorstWindow returns the TWINS window with the largest makespan.
func (s ScenarioOutcome) WorstWindow() (time.Duration, time.Duration, bool) {
	return s.extreme(func(a, b time.Duration) bool { return a > b })
}

func (s ScenarioOutcome) extreme(better func(a, b time.Duration) bool) (time.Duration, time.Duration, bool) {
	ws := make([]time.Duration, 0, len(s.Twins))
	for w := range s.Twins {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	var bw, bm time.Duration
	for i, w := range ws {
		if m := s.Twins[w]; i == 0 || better(m, bm) {
			bw, bm = w, m
		}
	}
	return bw, bm, len(ws) > 0
}

// Outcomes groups a summary by scenario, in a fixed order (the grid's when
// the summary follows it). The repetitions of an experiment count as one,
// with their mean makespan (dataset.MeanOverReps).
func Outcomes(exps []dataset.Experiment) []ScenarioOutcome {
	idx := map[string]int{}
	var out []ScenarioOutcome
	for _, e := range dataset.MeanOverReps(exps) {
		k := e.Scenario.String()
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, ScenarioOutcome{Scenario: e.Scenario, Twins: map[time.Duration]time.Duration{}, Baselines: map[string]time.Duration{}})
		}
		if e.Scheduler == "twins" {
			out[i].Twins[e.Window] = e.Makespan
		} else {
			out[i].Baselines[e.Scheduler] = e.Makespan
		}
	}
	return out
}

// Findings are the papers' three qualitative findings measured on a summary.
type Findings struct {
	// Fig1 is Bez et al., FGCS 2020, Fig. 1's scenario (128 processes, shared file,
	// 32 KiB 1D-strided reads) per I/O node count.
	Fig1 []Fig1Row
	// BestWindowCount counts the scenarios where each window is the best.
	BestWindowCount map[time.Duration]int
	// DistinctBest is how many windows are the best somewhere.
	DistinctBest int
	// TwinsBeatsFIFO counts, per I/O node count, scenarios where the best
	// window is faster than FIFO, out of Scenarios.
	TwinsBeatsFIFO map[int]int
	// TwinsBeatsFIFO10 counts scenarios where the best window is at least 10% faster than FIFO.
	TwinsBeatsFIFO10 map[int]int
	Scenarios        map[int]int
}

// Fig1Row is one I/O node count of Fig. 1.
type Fig1Row struct {
	IONodes               int
	FIFO, HBRR            time.Duration
	Best, Worst           time.Duration
	BestWindow, WorstWind time.Duration
}

// Gain is how much faster the best window is than the better baseline (0.2 = 20%).
func (r Fig1Row) Gain() float64 {
	base := r.FIFO
	if r.HBRR > 0 && r.HBRR < base {
		base = r.HBRR
	}
	if base == 0 {
		return 0
	}
	return 1 - r.Best.Seconds()/base.Seconds()
}

// Fig1Pattern reports whether s is Bez et al., FGCS 2020, Fig. 1's pattern.
func Fig1Pattern(p workload.Pattern) bool {
	return p.Processes == 128 && p.Layout == workload.Shared && p.Spatiality == workload.Strided &&
		p.Op == rw.Read && p.RequestSize == 32<<10
}

// Analyse measures the findings on a summary.
func Analyse(exps []dataset.Experiment) Findings {
	f := Findings{BestWindowCount: map[time.Duration]int{}, TwinsBeatsFIFO: map[int]int{}, TwinsBeatsFIFO10: map[int]int{}, Scenarios: map[int]int{}}
	for _, o := range Outcomes(exps) {
		bw, bm, ok := o.BestWindow()
		if !ok {
			continue
		}
		f.BestWindowCount[bw]++
		if fifo, ok := o.Baselines["fifo"]; ok {
			n := o.Scenario.IONodes
			f.Scenarios[n]++
			if bm < fifo {
				f.TwinsBeatsFIFO[n]++
			}
			if bm.Seconds() <= 0.9*fifo.Seconds() {
				f.TwinsBeatsFIFO10[n]++
			}
		}
		if Fig1Pattern(o.Scenario.Pattern) {
			ww, wm, _ := o.WorstWindow()
			f.Fig1 = append(f.Fig1, Fig1Row{IONodes: o.Scenario.IONodes, FIFO: o.Baselines["fifo"], HBRR: o.Baselines["hbrr"],
				Best: bm, Worst: wm, BestWindow: bw, WorstWind: ww})
		}
	}
	sort.Slice(f.Fig1, func(i, j int) bool { return f.Fig1[i].IONodes < f.Fig1[j].IONodes })
	f.DistinctBest = len(f.BestWindowCount)
	return f
}

// Report writes the findings as text.
func (f Findings) Report(w io.Writer) {
	fmt.Fprintln(w, "Finding 1: 128 processes, shared file, 32 KiB 1D-strided reads (Bez et al., FGCS 2020, Fig. 1)")
	fmt.Fprintf(w, "  %-8s %9s %9s %9s %-8s %9s %-8s %8s %s\n", "I/O nodes", "FIFO s", "HBRR s", "best s", "window", "worst s", "window", "gain", "worst slower than FIFO")
	for _, r := range f.Fig1 {
		fmt.Fprintf(w, "  %-9d %9.2f %9.2f %9.2f %-8v %9.2f %-8v %7.1f%% %v\n", r.IONodes, r.FIFO.Seconds(), r.HBRR.Seconds(),
			r.Best.Seconds(), r.BestWindow, r.Worst.Seconds(), r.WorstWind, 100*r.Gain(), r.Worst > r.FIFO)
	}
	fmt.Fprintf(w, "Finding 2: best window per scenario (%d of %d windows are the best somewhere)\n", f.DistinctBest, len(sched.Windows))
	for _, win := range sched.Windows {
		fmt.Fprintf(w, "  %-8v %d\n", win, f.BestWindowCount[win])
	}
	fmt.Fprintln(w, "Finding 3: scenarios where the best TWINS window beats FIFO, per I/O node count")
	ns := make([]int, 0, len(f.Scenarios))
	for n := range f.Scenarios {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		fmt.Fprintf(w, "  %d I/O nodes: %d of %d faster, %d of %d by >= 10%%\n", n, f.TwinsBeatsFIFO[n], f.Scenarios[n], f.TwinsBeatsFIFO10[n], f.Scenarios[n])
	}
}
