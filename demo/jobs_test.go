package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkJobsRun checks a two-job run's report against its decision log:
// both jobs moved bytes, the decisions the report lists are the log's,
// and the Council told each job's pattern, which the page shows.
func checkJobsRun(t *testing.T, rep JobsReport, state, page string) {
	t.Helper()
	if len(rep.Jobs) != 2 || rep.Jobs[0].ID != JobStrided || rep.Jobs[1].ID != JobFPP {
		t.Fatalf("jobs %+v", rep.Jobs)
	}
	for _, j := range rep.Jobs {
		if j.Bytes <= 0 || j.Bandwidth <= 0 {
			t.Errorf("job %s moved %d bytes (%v B/s)", j.ID, j.Bytes, j.Bandwidth)
		}
	}
	if rep.Jain <= 0.5 || rep.Jain > 1 || rep.Total != rep.Jobs[0].Bandwidth+rep.Jobs[1].Bandwidth {
		t.Errorf("total %v, Jain %v", rep.Total, rep.Jain)
	}
	log := readLog(t, filepath.Join(state, JobsDecisionLog))
	if len(log) == 0 || len(log) != len(rep.Decisions) {
		t.Fatalf("%d decisions logged, %d in the report", len(log), len(rep.Decisions))
	}
	seen := map[string]bool{} // each job's pattern, as the Council detected it
	for i, d := range log {
		if rep.Decisions[i].Window != d.Window || rep.Decisions[i].Context != d.Context {
			t.Fatalf("decision %d: report %+v, log window %v context %q", i, rep.Decisions[i], d.Window, d.Context)
		}
		for _, n := range d.Nodes {
			for _, j := range n.Jobs {
				if j.Context != "" {
					seen[j.ID+" "+j.Context] = true
				}
			}
		}
	}
	if !seen[JobStrided+" SS/write"] || !seen[JobFPP+" FPP/read"] {
		t.Fatalf("jobs' patterns in the log: %v; want the strided job's SS/write and the readers' FPP/read", seen)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{JobStrided, JobFPP, "Jain", "strided SS/write", "fpp FPP/read"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report page lacks %q", want)
		}
	}
}

func TestJobsDemoSim(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	cfg := Config{Sim: true, Jobs: 2, Iterations: 16, Processes: 32, PhaseBytes: 64 << 20, StateDir: filepath.Join(dir, "state"),
		Report: filepath.Join(dir, "jobs.html"), Out: &out}
	rep, err := RunJobs(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "sim" || rep.Elapsed != 8*time.Second {
		t.Errorf("mode %s, %v of virtual time; want sim, 8s", rep.Mode, rep.Elapsed)
	}
	checkJobsRun(t, rep, cfg.StateDir, cfg.Report)
	if !strings.Contains(out.String(), "Jain's index") || !strings.Contains(out.String(), "job fpp") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// TestJobsDemoReal runs the two jobs on the real stack, briefly: the
// strided job's one iteration (a shared 4 MiB file written and read
// back) against the readers, two daemons with their QoS gates.
func TestJobsDemoReal(t *testing.T) {
	if testing.Short() {
		t.Skip("the real stack: -short")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	cfg := Config{Jobs: 2, Iterations: 1, Processes: 16, Nodes: 2, PhaseBytes: 4 << 20, FPPBytes: 8 << 20, Interval: 100 * time.Millisecond,
		ServerTimeScale: 4, StateDir: filepath.Join(dir, "state"), Report: filepath.Join(dir, "jobs.html"), Out: &out, HTTP: ""}
	rep, err := RunJobs(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "real" {
		t.Errorf("mode %s", rep.Mode)
	}
	checkJobsRun(t, rep, cfg.StateDir, cfg.Report)
	// The live view showed each decision with both jobs.
	if !strings.Contains(out.String(), "strided: SS/") || !strings.Contains(out.String(), "fpp: FPP/read") {
		t.Errorf("live view:\n%s", out.String())
	}
}

func TestJobsConfig(t *testing.T) {
	for _, c := range []Config{{Jobs: 3}, {Jobs: 2, Backend: t.TempDir()}, {Jobs: -1}} {
		if _, err := RunJobs(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := Run(context.Background(), Config{Jobs: 2, Sim: true, StateDir: t.TempDir(), Report: "-"}); err == nil {
		t.Error("Run ran the two-job scenario")
	}
}
