package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// The twelve workloads cover both layouts and operations with every
// request size, and every request size meets every process count.
func TestTuneWorkloadsLatinSquare(t *testing.T) {
	ws := TuneWorkloads()
	if len(ws) != 12 {
		t.Fatalf("%d workloads, want 12", len(ws))
	}
	meets := map[[2]int64]bool{}
	names := map[string]bool{}
	for _, w := range ws {
		meets[[2]int64{w.RequestSize, int64(w.PerClient)}] = true
		names[w.Name()] = true
	}
	if len(meets) != 9 || len(names) != 12 {
		t.Errorf("%d (size, processes) pairs, want 9; %d names, want 12", len(meets), len(names))
	}
	if got := (TuneWorkload{Layout: workload.Shared, Op: rw.Read, RequestSize: 32 << 10, PerClient: 64}).Name(); got != "shared-read-32k-64ppc" {
		t.Errorf("name %q", got)
	}
	p := ws[2].Pattern(4, 1<<30)
	if p.Processes != 4*ws[2].PerClient || p.TotalBytes%(p.RequestSize*int64(p.Processes)) != 0 || p.TotalBytes > 1<<30 {
		t.Errorf("pattern %+v: want whole requests per process, at most 1 GiB", p)
	}
}

// Convergence is the end of the first whole second from which the next
// 10 s and the rest (at least 30 s) reach the target on average.
func TestConverge(t *testing.T) {
	var o tuneRunOut
	for i := range 100 {
		v := 100.0
		if i < 10 {
			v = 10
		}
		o.bw = append(o.bw, v)
		o.end = append(o.end, time.Duration(i+1)*time.Second+300*time.Millisecond)
	}
	start := 300 * time.Millisecond
	if c := o.converge(start, start+100*time.Second, 95); c != 11*time.Second {
		t.Errorf("converged at %v, want 11s", c)
	}
	if c := o.converge(start, start+100*time.Second, 90); c != 10*time.Second {
		t.Errorf("converged at %v with one slow second in the next 10 averaged in, want 10s", c)
	}
	if c := o.converge(start, start+100*time.Second, 101); c != -1 {
		t.Errorf("converged at %v to a target never met, want -1", c)
	}
}

// A small evaluation runs end to end: every tuner gets figures, the best
// static setting is at least the defaults, and the report is written.
func TestRunTuneSmall(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("simulates about 30 minutes of I/O")
	}
	out := t.TempDir()
	r, err := RunTune(context.Background(), TuneConfig{Phase: time.Minute, Workloads: []int{2, 6}, Sequence: []int{2, 6, 2},
		Grid: [2][]int{{4, 64}, {2, 64}}, TrainFor: 2 * time.Minute, Workers: 2, Seed: 1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steady) != 2 || len(r.Phases) != 3 || !r.Phases[2].Revisit || r.Phases[1].Revisit {
		t.Fatalf("%d steady workloads, %d phases (revisits %v %v %v)", len(r.Steady), len(r.Phases), r.Phases[0].Revisit, r.Phases[1].Revisit, r.Phases[2].Revisit)
	}
	for _, s := range r.Steady {
		if s.Best < s.Default || len(s.Runs) != 4 {
			t.Errorf("%s: best %.0f below the defaults' %.0f, or %d tuners", s.Workload, s.Best, s.Default, len(s.Runs))
		}
	}
	sum := r.Summary()
	if names := []string{sum[0].Tuner, sum[1].Tuner, sum[2].Tuner, sum[3].Tuner}; !slices.Equal(names, tuners) {
		t.Errorf("summary of %v, want %v", names, tuners)
	}
	if r.TrainSteps < 100 {
		t.Errorf("the DQN trained for %d steps", r.TrainSteps)
	}
	for _, f := range []string{"report.html", "tune-steady.csv", "tune-phases.csv", "tune-summary.csv"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
