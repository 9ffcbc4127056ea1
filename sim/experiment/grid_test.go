package experiment

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

func TestGridDeterministicAndResumable(t *testing.T) {
	base := sim.Config{Interval: 100 * time.Millisecond}
	keep := func(s workload.Scenario) bool {
		return s.Processes == 128 && s.IONodes <= 2 && s.RequestSize == 256<<10
	}
	opts := func(dir string, workers int, resume bool) GridOptions {
		return GridOptions{Out: dir, Workers: workers, Resume: resume, Base: base, Seed: 7, TotalBytes: 64 << 20,
			Windows: []time.Duration{250 * time.Microsecond, 2 * time.Millisecond}, Scenarios: keep}
	}
	read := func(dir string) (string, string) {
		o, err := os.ReadFile(filepath.Join(dir, dataset.ObservationsFile))
		if err != nil {
			t.Fatal(err)
		}
		s, err := os.ReadFile(filepath.Join(dir, dataset.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		return string(o), string(s)
	}
	d1, d2, d3 := t.TempDir(), t.TempDir(), t.TempDir()
	st, err := RunGrid(context.Background(), opts(d1, 1, false))
	if err != nil {
		t.Fatal(err)
	}
	if want := 12 * 4; st.Runs != want { // 12 scenarios x (2 windows + fifo + hbrr)
		t.Fatalf("ran %d experiments, want %d", st.Runs, want)
	}
	if _, err := os.Stat(filepath.Join(d1, ReadyFile)); err != nil {
		t.Errorf("no READY file: %v", err)
	}
	if _, err := RunGrid(context.Background(), opts(d2, 3, false)); err != nil {
		t.Fatal(err)
	}
	o1, s1 := read(d1)
	o2, s2 := read(d2)
	if o1 != o2 || s1 != s2 {
		t.Fatal("1 and 3 workers wrote different datasets")
	}
	exps, err := dataset.LoadSummary(d1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.LoadObservations(d1)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		total += r.Obs.Bytes
		if r.Class != r.Scenario.Class() {
			t.Fatalf("row of %s labelled %v", r.Key(), r.Class)
		}
	}
	var want int64
	for _, e := range exps {
		want += e.Bytes
	}
	if total != want {
		t.Errorf("observation rows hold %d bytes, summaries %d", total, want)
	}

	// Interrupted run: the summary lost its last 5 experiments, the
	// observations hold rows of one of them; resume completes it.
	lines := strings.SplitAfter(s1, "\n")
	cut := strings.Join(lines[:len(lines)-6], "")
	if err := os.WriteFile(filepath.Join(d3, dataset.SummaryFile), []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d3, dataset.ObservationsFile), []byte(o1), 0o644); err != nil {
		t.Fatal(err)
	}
	st3, err := RunGrid(context.Background(), opts(d3, 2, true))
	if err != nil {
		t.Fatal(err)
	}
	if st3.Runs != 5 || st3.Skipped != st.Runs-5 {
		t.Errorf("resume ran %d and kept %d, want 5 and %d", st3.Runs, st3.Skipped, st.Runs-5)
	}
	o3, s3 := read(d3)
	if o3 != o1 || s3 != s1 {
		t.Error("resumed dataset differs from an uninterrupted one")
	}
}

// TestGridRepeat: with Repeat 2 repetition 0 holds exactly the rows and
// experiments of the grid without repetitions, repetition 1 is another
// seeded run of the same experiments, both files carry the rep column, and
// resuming a one-repetition grid with Repeat 2 gives the same bytes as a
// fresh two-repetition grid.
func TestGridRepeat(t *testing.T) {
	keep := func(s workload.Scenario) bool {
		return s.Processes == 128 && s.IONodes == 2 && s.RequestSize == 256<<10 && s.Layout == workload.Shared
	}
	opts := func(dir string, repeat int, resume bool) GridOptions {
		return GridOptions{Out: dir, Workers: 2, Repeat: repeat, Resume: resume, Base: sim.Config{Interval: 100 * time.Millisecond},
			Seed: 7, TotalBytes: 32 << 20, Windows: []time.Duration{250 * time.Microsecond}, Baselines: []string{"fifo"}, Scenarios: keep}
	}
	one, two, resumed := t.TempDir(), t.TempDir(), t.TempDir()
	for _, c := range []struct {
		dir    string
		repeat int
	}{{one, 1}, {two, 2}, {resumed, 1}} {
		if _, err := RunGrid(context.Background(), opts(c.dir, c.repeat, false)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := RunGrid(context.Background(), opts(resumed, 2, true))
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 8 || st.Skipped != 8 {
		t.Errorf("resume with Repeat 2 ran %d and kept %d, want 8 and 8", st.Runs, st.Skipped)
	}
	for _, f := range []string{dataset.ObservationsFile, dataset.SummaryFile} {
		a, err := os.ReadFile(filepath.Join(two, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(resumed, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: resumed to 2 repetitions differs from a fresh grid of 2", f)
		}
		head, _, _ := strings.Cut(string(a), "\n")
		if !strings.HasSuffix(head, ",rep") {
			t.Errorf("%s header %q lacks the rep column", f, head)
		}
	}
	rows1, err := dataset.LoadObservations(one)
	if err != nil {
		t.Fatal(err)
	}
	rows2, err := dataset.LoadObservations(two)
	if err != nil {
		t.Fatal(err)
	}
	byRep := map[int][]dataset.Row{}
	for _, r := range rows2 {
		byRep[r.Rep] = append(byRep[r.Rep], r)
	}
	if len(byRep) != 2 || !slices.Equal(byRep[0], rows1) {
		t.Fatalf("repetition 0 (%d rows) differs from the grid without repetitions (%d rows); repetitions %d", len(byRep[0]), len(rows1), len(byRep))
	}
	exps, err := dataset.LoadSummary(two)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, e := range exps[8:] {
		if e.Rep != 1 {
			t.Fatalf("%s: rep %d, want 1", e.Key(), e.Rep)
		}
		if e0 := exps[slices.IndexFunc(exps, func(x dataset.Experiment) bool { return x.Key() == e.Base().Key() })]; e0.Makespan != e.Makespan {
			differ++
		}
	}
	if differ == 0 {
		t.Error("repetition 1 has the makespans of repetition 0: its seed reaches nothing")
	}
}

// A grid that cannot run (a total smaller than one request per process)
// is refused before any file is written.
func TestGridRefusedBeforeWritingAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grid")
	_, err := RunGrid(context.Background(), GridOptions{Out: dir, TotalBytes: 16 << 20, Workers: 1})
	if !errors.Is(err, sim.ErrBadConfig) {
		t.Fatalf("grid with 16 MiB per experiment: %v, want ErrBadConfig", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the grid's directory exists after a refused run (%v)", err)
	}
}
