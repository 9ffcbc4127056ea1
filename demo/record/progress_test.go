package record

import (
	"math"
	"testing"
)

// phaseRuns returns n phase runs of the cycle phases, each lasting secs
// seconds, back to back from t = 2.
func phaseRuns(phases []string, n int, secs float64) []Iteration {
	var its []Iteration
	t := 2.0
	for i := range n {
		its = append(its, Iteration{Phase: phases[i%len(phases)], Start: t, Seconds: secs})
		t += secs
	}
	return its
}

func TestProgressCountsIterationsNotPhases(t *testing.T) {
	four := []string{"SS write", "SS read", "FPP write", "SC read"}
	for _, tt := range []struct {
		name    string
		meta    Meta
		runs    int
		elapsed float64
		want    Progress
	}{
		{"before the first iteration ends", Meta{Phases: four, Iterations: 48}, 3, 20,
			Progress{Iterations: 0, Planned: 48, PhaseRuns: 3, PhasesPerIteration: 4, Text: "0 of 48 iterations"}},
		// 41 iterations of 4 phases of 2.5 s: 10 s an iteration, the 42nd
		// begun 4 s ago: 7 iterations to go, less 4 s.
		{"41 of 48", Meta{Phases: four, Iterations: 48}, 41*4 + 1, 2 + 410 + 4, Progress{Iterations: 41, Planned: 48, PhaseRuns: 165,
			PhasesPerIteration: 4, MeanSeconds: 10, LeftSeconds: 66, Text: "41 of 48 iterations, about 66 s left"}},
		// The current iteration has run longer than the mean: what is left
		// is at least the iterations not yet started.
		{"a slow iteration", Meta{Phases: four, Iterations: 48}, 41 * 4, 2 + 410 + 30, Progress{Iterations: 41, Planned: 48, PhaseRuns: 164,
			PhasesPerIteration: 4, MeanSeconds: 10, LeftSeconds: 60, Text: "41 of 48 iterations, about 60 s left"}},
		{"done", Meta{Phases: four, Iterations: 2}, 8, 22, Progress{Iterations: 2, Planned: 2, PhaseRuns: 8, PhasesPerIteration: 4,
			MeanSeconds: 10, LeftSeconds: 0, Text: "2 of 2 iterations"}},
		{"simulated", Meta{Mode: "sim", Phases: four, Iterations: 120}, 4, 12, Progress{Iterations: 1, Planned: 120, PhaseRuns: 4, PhasesPerIteration: 4,
			MeanSeconds: 10, LeftSeconds: 1190, Virtual: true, Text: "1 of 120 iterations, about 20 min of virtual time left"}},
		{"limited in time", Meta{Phases: four, Iterations: 48, Limit: 60}, 8, 22, Progress{Iterations: 2, Planned: 48, PhaseRuns: 8, PhasesPerIteration: 4,
			MeanSeconds: 10, LeftSeconds: 38, Text: "2 of 48 iterations, about 38 s left"}},
		{"nearly done", Meta{Phases: four, Iterations: 2}, 7, 2 + 10 + 9.5, Progress{Iterations: 1, Planned: 2, PhaseRuns: 7, PhasesPerIteration: 4,
			MeanSeconds: 10, LeftSeconds: 0.5, Text: "1 of 2 iterations, under a second left"}},
		{"no plan", Meta{Phases: four}, 9, 30, Progress{Iterations: 2, PhaseRuns: 9, PhasesPerIteration: 4, MeanSeconds: 10, Text: "2 iterations"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ProgressOf(tt.meta, phaseRuns(tt.meta.Phases, tt.runs, 2.5), tt.elapsed)
			left, wantLeft := got.LeftSeconds, tt.want.LeftSeconds
			got.LeftSeconds, tt.want.LeftSeconds = 0, 0
			if got != tt.want {
				t.Errorf("ProgressOf:\n got %+v\nwant %+v", got, tt.want)
			}
			unknown := tt.want.Text == "0 of 48 iterations" || tt.want.Text == "2 iterations"
			if unknown != math.IsNaN(left) || !unknown && math.Abs(left-wantLeft) > 1e-9 {
				t.Errorf("LeftSeconds %v, want %v (unknown: %v)", left, wantLeft, unknown)
			}
		})
	}
}

// The dashboard's data carries the same count as the views.
func TestSinceCarriesProgress(t *testing.T) {
	r := New(Meta{Phases: []string{"W", "R"}, Iterations: 3})
	for _, it := range phaseRuns([]string{"W", "R"}, 3, 1) {
		r.AddIteration(it)
	}
	if got := r.Since(0, 0, 0, 0).Progress.Text; got != "1 of 3 iterations, about 4 s left" {
		t.Errorf("Since: progress %q, want %q", got, "1 of 3 iterations, about 4 s left")
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		secs float64
		want string
	}{{0.4, "under a second"}, {40, "40 s"}, {89, "89 s"}, {95, "2 min"}, {420, "7 min"}, {3600, "1 h"}, {4800, "1 h 20 min"}} {
		if got := Duration(tt.secs); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.secs, got, tt.want)
		}
	}
}
