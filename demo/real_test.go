package demo

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func TestRealDemoShortReportAgreesWithDecisionLog(t *testing.T) {
	state := t.TempDir()
	// Phases long enough that the run outlasts the Announcers' first
	// report (a second): 4 phases of 8 MiB can end within it.
	cfg := Config{Iterations: 1, Processes: 16, PhaseBytes: 24 << 20, FPPBytes: 24 << 20, StateDir: state, Mix: true, Compare: -1,
		Report: filepath.Join(t.TempDir(), "report.html"), Seed: 5, HTTP: "127.0.0.1:0"}
	// While it runs, the dashboard also serves the Council's /status.
	status := make(chan int, 1)
	cfg.OnDashboard = func(url string) {
		go func() {
			code := 0
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				resp, err := http.Get(url + "status")
				if err == nil {
					resp.Body.Close()
					if code = resp.StatusCode; code == http.StatusOK {
						break
					}
				}
			}
			status <- code
		}()
	}
	rec, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Iterations) != 4 {
		t.Fatalf("%d phases completed, want 4", len(rec.Iterations))
	}
	for _, it := range rec.Iterations {
		want := int64(24 << 20)
		if strings.HasSuffix(it.Phase, "read") {
			want *= DefaultReadPasses // each read phase reads its file again
		}
		if it.Bytes != want || it.Seconds <= 0 {
			t.Errorf("%s: %d bytes in %v s, want %d bytes", it.Phase, it.Bytes, it.Seconds, want)
		}
	}
	s := reportSummary(t, cfg.Report)
	if s.Mode != "real" || s.Iterations != 1 || s.PhaseRuns != 4 {
		t.Errorf("report: mode %q, %d iterations, %d phase runs; want real, 1, 4", s.Mode, s.Iterations, s.PhaseRuns)
	}
	log := readLog(t, filepath.Join(state, RealDecisionLog))
	if len(log) != s.Seconds {
		t.Errorf("%d seconds in the report, %d rounds in the decision log", s.Seconds, len(log))
	}
	checkAgainstLog(t, s, log, 0)
	// The phases file and the decision log judge and label the run as
	// eval labels would any application's.
	pf, err := os.Open(filepath.Join(state, RealPhases))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	phases, err := eval.ReadPhases(pf)
	if err != nil || len(phases) != 4 {
		t.Fatalf("phases file: %d phases (%v), want 4", len(phases), err)
	}
	for i, p := range phases {
		if p.Name != rec.Iterations[i].Phase {
			t.Errorf("phase %d: %q, want %q", i, p.Name, rec.Iterations[i].Phase)
		}
	}
	lf, err := os.Open(filepath.Join(state, RealDecisionLog))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	rows, err := eval.LabelledRows(phases, lf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Obs.Requests <= 0 || r.Obs.ReqAvg <= 0 || r.Class.String() != strings.Fields(phases[r.Rep].Name)[0] {
			t.Errorf("labelled row %+v of phase %q: want requests, features and the phase's class", r, phases[r.Rep].Name)
		}
	}
	if code := <-status; code != http.StatusOK {
		t.Errorf("GET /status on the dashboard: %d, want 200", code)
	}
}

func TestRealDemoStaticComparisonOnRealStack(t *testing.T) {
	cfg := Config{Iterations: 1, Processes: 8, PhaseBytes: 2 << 20, StateDir: t.TempDir(), Compare: 1, CompareReal: true,
		Report: filepath.Join(t.TempDir(), "report.html"), Seed: 9}
	rec, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Meta.StaticOn != "real" || len(rec.Static) != len(sched.Windows) {
		t.Fatalf("static comparison on %q with %d windows, want real, %d", rec.Meta.StaticOn, len(rec.Static), len(sched.Windows))
	}
	confirmed := 0
	for i, s := range rec.Static {
		if s.Window != sched.Windows[i] || len(s.Phases) != 2 || s.Total <= 0 {
			t.Errorf("static row %d: %+v; want window %v, 2 phases, a positive total", i, s, sched.Windows[i])
		}
		// A window run again averages 2 iterations a phase (a standard
		// error), the others 1 (none).
		if s.Confirmed != (len(s.SE) == 2) {
			t.Errorf("static row %v: confirmed %v with standard errors %v; want both or neither", s.Window, s.Confirmed, s.SE)
		}
		if s.Confirmed {
			confirmed++
		}
	}
	// Every window best in a phase or the cycle, after the runs again, was
	// run again itself.
	for _, w := range record.Winners(rec.Static) {
		if i := slices.Index(sched.Windows, w); !rec.Static[i].Confirmed {
			t.Errorf("%v is best in a phase or the cycle and was not run again", w)
		}
	}
	if confirmed < 1 {
		t.Error("no window was run again")
	}
	page, err := os.ReadFile(cfg.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<tr class="learn">`) || !strings.Contains(string(page), "After learning, one cycle of the experiment takes") ||
		!strings.Contains(string(page), "each static window run on this machine after learning") {
		t.Error("report compares no learning row with the static windows run on the same stack")
	}
	if !strings.Contains(string(page), report.ConfirmedMark+"</td>") || !strings.Contains(string(page), "were run again") {
		t.Error("report does not mark the windows run again")
	}
}

// A static run warms its fresh stack up with one iteration it does not
// count: the learning run is judged on its last iterations, and a fresh
// stack's first iteration is its slowest.
func TestStaticRunDropsItsWarmUp(t *testing.T) {
	cfg := Config{Processes: 8, PhaseBytes: 2 << 20, Compare: 2, Seed: 9}.WithDefaults()
	run, err := staticRealRun(context.Background(), cfg, sched.DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	phases := len(cfg.Phases())
	if len(run.Iterations) != cfg.Compare*phases {
		t.Fatalf("%d phase runs counted, want %d (Compare %d x %d phases)", len(run.Iterations), cfg.Compare*phases, cfg.Compare, phases)
	}
	for _, it := range run.Iterations {
		if it.K <= staticWarmUp {
			t.Errorf("phase run %d (%s) of iteration %d counted: the warm-up must not be", it.N, it.Phase, it.K)
		}
	}
	if len(run.Servers) != len(run.Iterations) {
		t.Errorf("%d data-server records for %d phase runs", len(run.Servers), len(run.Iterations))
	}
}

// Each I/O node's part of a phase: its block of processes ends with the
// last of them, and moves their bytes, each process by its own end.
func TestNodeSpans(t *testing.T) {
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: 1 << 10, TotalBytes: 8 << 10}
	ph := fwdbench.Phase{Bytes: 8 << 10, ProcessEnds: []time.Duration{time.Second, 3 * time.Second, 2 * time.Second, 500 * time.Millisecond}}
	got := nodeSpans(ph, p, 2)
	want := []record.NodeSpan{{Seconds: 3, Bytes: 4 << 10, Ends: []float64{1, 3}}, {Seconds: 2, Bytes: 4 << 10, Ends: []float64{2, 0.5}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("nodeSpans = %+v, want %+v", got, want)
	}
	// A phase of two read passes moved twice the pattern's bytes.
	ph.Bytes = 16 << 10
	for i, s := range nodeSpans(ph, p, 2) {
		if s.Bytes != 8<<10 {
			t.Errorf("two passes: node %d moved %d bytes, want %d", i, s.Bytes, 8<<10)
		}
	}
	if nodeSpans(ph, p, 1) != nil || nodeSpans(fwdbench.Phase{}, p, 2) != nil {
		t.Fatal("one node, or no process ends: want no node parts")
	}
}
