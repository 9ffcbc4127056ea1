package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func pattern(procs int, l workload.Layout, sp workload.Spatiality, op rw.Op, size, total int64) workload.Pattern {
	return workload.Pattern{Processes: procs, Layout: l, Spatiality: sp, Op: op, RequestSize: size, TotalBytes: total}
}

func TestEveryByteIsServedAndObserved(t *testing.T) {
	pats := []workload.Pattern{
		pattern(128, workload.Shared, workload.Strided, rw.Read, 32<<10, 64<<20),
		pattern(64, workload.FilePerProcess, workload.Contiguous, rw.Write, 256<<10, 64<<20),
		pattern(32, workload.Shared, workload.Contiguous, rw.Write, 100<<10, 32<<20), // crosses stripes unaligned
	}
	for _, p := range pats {
		for _, sc := range []string{"twins", "fifo", "hbrr", "twins+elevator", "fifo+file-concurrency"} {
			t.Run(p.String()+"/"+sc, func(t *testing.T) {
				cfg := Config{Patterns: []workload.Pattern{p}, IONodes: 4, Scheduler: sc, Interval: 100 * time.Millisecond}
				if name, ok := strings.CutSuffix(sc, "+elevator"); ok {
					cfg.Scheduler, cfg.Elevator = name, true
				}
				if name, ok := strings.CutSuffix(sc, "+file-concurrency"); ok {
					cfg.Scheduler, cfg.FileConcurrency = name, 2
				}
				var obsBytes, obsReqs int64
				var class access.Class
				res, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
					if len(obs) != 4 {
						t.Fatalf("got %d observations, want one per I/O node (4)", len(obs))
					}
					for i, o := range obs {
						if o.Node != i {
							t.Fatalf("observation %d is of node %d", i, o.Node)
						}
						if err := o.Validate(); err != nil {
							t.Fatal(err)
						}
						obsBytes += o.Bytes
						obsReqs += o.Requests
						if o.Requests > 0 && o.FileHandles > 0 {
							class = p.Class()
						}
					}
					return 0, false
				}})
				if err != nil {
					t.Fatal(err)
				}
				want := p.BytesPerProcess() * int64(p.Processes)
				if res.Bytes != want || obsBytes != want {
					t.Errorf("bytes: result %d, observations %d, want %d", res.Bytes, obsBytes, want)
				}
				if wantReq := int64(p.RequestsPerProcess() * p.Processes); obsReqs != wantReq || res.Requests != uint64(wantReq) {
					t.Errorf("requests: observed %d, completed %d, want %d", obsReqs, res.Requests, wantReq)
				}
				if res.Makespan <= 0 || res.Bandwidth <= 0 {
					t.Errorf("makespan %v bandwidth %v, want > 0", res.Makespan, res.Bandwidth)
				}
				if class != p.Class() {
					t.Errorf("no observation with I/O")
				}
			})
		}
	}
}

func hashRun(t *testing.T, cfg Config) [32]byte {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	run := dataset.Run{Scenario: workload.Scenario{Pattern: cfg.Patterns[0], IONodes: cfg.IONodes}, Scheduler: cfg.Scheduler}
	for sec := 0; ; sec++ {
		obs, done, err := s.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if err := w.Row(dataset.Row{Run: run, Second: sec, Obs: o}); err != nil {
				t.Fatal(err)
			}
		}
		if done {
			break
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := s.Result()
	buf.WriteString(r.Makespan.String())
	return sha256.Sum256(buf.Bytes())
}

func TestSameSeedSameBytes(t *testing.T) {
	cfg := Config{Patterns: []workload.Pattern{pattern(256, workload.Shared, workload.Strided, rw.Write, 32<<10, 64<<20)},
		IONodes: 8, Interval: 50 * time.Millisecond, Seed: 42}
	a, b := hashRun(t, cfg), hashRun(t, cfg)
	if a != b {
		t.Fatalf("two runs with the same seed differ: %x vs %x", a, b)
	}
	cfg.Seed = 43
	if c := hashRun(t, cfg); c == a {
		t.Errorf("seed 43 gave the same output as seed 42: the seed reaches nothing")
	}
}

func TestGridDeterministicAndResumable(t *testing.T) {
	base := Config{Interval: 100 * time.Millisecond}
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

func TestHooksChangeTheWindow(t *testing.T) {
	cfg := Config{Patterns: []workload.Pattern{pattern(64, workload.Shared, workload.Strided, rw.Read, 32<<10, 32<<20)},
		IONodes: 2, Interval: 20 * time.Millisecond}
	var seen []time.Duration
	calls := 0
	_, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
		calls++
		seen = append(seen, obs[0].Window)
		return 4 * time.Millisecond, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 3 {
		t.Fatalf("OnInterval called %d times, want several", calls)
	}
	if seen[0] != time.Millisecond || seen[len(seen)-1] != 4*time.Millisecond {
		t.Errorf("windows observed %v, want 1ms first and 4ms after the change", seen)
	}

	// Per node, through the Sim.
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWindow(1, 250*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got := s.Window(1); got != 250*time.Microsecond {
		t.Errorf("node 1 window %v, want 250µs", got)
	}
	if got := s.Window(0); got != time.Millisecond {
		t.Errorf("node 0 window %v, want 1ms (unchanged)", got)
	}
	if err := s.SetWindow(5, time.Millisecond); !errors.Is(err, ErrBadConfig) {
		t.Errorf("node 5 of 2: got %v, want ErrBadConfig", err)
	}
	if err := s.Switch(0, "fifo"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 32<<20 {
		t.Errorf("after a switch, %d bytes moved, want %d", res.Bytes, 32<<20)
	}
}

func TestWriteThenRead(t *testing.T) {
	p := pattern(32, workload.FilePerProcess, workload.Contiguous, rw.Write, 64<<10, 16<<20)
	res, err := Run(context.Background(), Config{Patterns: WriteRead(p, 2), IONodes: 2}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 4 {
		t.Fatalf("%d phases, want 4", len(res.Phases))
	}
	var sum time.Duration
	for _, ph := range res.Phases {
		sum += ph
	}
	if sum != res.Makespan {
		t.Errorf("phases add to %v, makespan %v", sum, res.Makespan)
	}
	if res.Bytes != 4*(16<<20) {
		t.Errorf("moved %d bytes, want %d", res.Bytes, 4*(16<<20))
	}
}

// The simulator stripes a file as the daemon's backends do
// (backend.Layout on the file's name), with each piece's offset in its
// server's object.
func TestSplit(t *testing.T) {
	cfg := Config{StripeBytes: 64 << 10, Servers: 4, Patterns: []workload.Pattern{{Processes: 8, Layout: workload.FilePerProcess}}}
	s := &Sim{cfg: cfg, layout: backend.Layout{StripeSize: 64 << 10, StripeCount: 4}}
	for f := range 8 {
		s.firsts = append(s.firsts, s.layout.FirstServer(cfg.Patterns[0].FileName(f), 4))
	}
	if slices.Min(s.firsts) == slices.Max(s.firsts) {
		t.Errorf("8 files all start on server %d", s.firsts[0])
	}
	tests := []struct {
		name      string
		file      int
		off, size int64
		want      []piece // with server as the offset from the file's first
	}{
		{"inside one stripe", 3, 32 << 10, 32 << 10, []piece{{0, 32 << 10, 32 << 10}}},
		{"one stripe per server", 0, 0, 256 << 10, []piece{{0, 0, 64 << 10}, {1, 0, 64 << 10}, {2, 0, 64 << 10}, {3, 0, 64 << 10}}},
		{"two rounds: a piece per stripe", 5, 0, 512 << 10, []piece{{0, 0, 64 << 10}, {1, 0, 64 << 10}, {2, 0, 64 << 10}, {3, 0, 64 << 10}, {0, 64 << 10, 64 << 10}, {1, 64 << 10, 64 << 10}, {2, 64 << 10, 64 << 10}, {3, 64 << 10, 64 << 10}}},
		{"second round", 3, 256 << 10, 64 << 10, []piece{{0, 64 << 10, 64 << 10}}},
		{"unaligned across two", 3, 60 << 10, 8 << 10, []piece{{0, 60 << 10, 4 << 10}, {1, 0, 4 << 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Clone(tt.want)
			for i := range want {
				want[i].server = (want[i].server + s.firsts[tt.file]) % 4
			}
			got := slices.Clone(s.split(tt.file, tt.off, tt.size))
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			// The daemon's view of the same bytes: the same servers and lengths.
			bp := s.layout.Split(nil, 4, s.layout.FirstServer(cfg.Patterns[0].FileName(tt.file), 4), tt.off, tt.size)
			if len(bp) != len(got) {
				t.Fatalf("backend.Layout has %d pieces, the simulator %d", len(bp), len(got))
			}
			for i := range bp {
				if bp[i].Server != got[i].server || bp[i].Length != got[i].length || s.layout.Local(bp[i].Offset) != got[i].local {
					t.Errorf("piece %d: backend %+v, simulator %+v", i, bp[i], got[i])
				}
			}
		})
	}
}

func TestEventQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var q eventQueue
	type ev struct {
		t   int64
		seq int
	}
	var want []ev
	for i := range 5000 {
		t := rng.Int64N(100)
		q.push(t, evIONArrive, int32(i))
		want = append(want, ev{t, i})
	}
	slices.SortStableFunc(want, func(a, b ev) int { return int(a.t - b.t) })
	for i := range want {
		e := q.pop()
		if e.t != want[i].t || int(e.id) != want[i].seq {
			t.Fatalf("pop %d: got (t %d, id %d), want (t %d, id %d)", i, e.t, e.id, want[i].t, want[i].seq)
		}
	}
	if q.len() != 0 {
		t.Errorf("%d events left", q.len())
	}
}

func TestConfigErrors(t *testing.T) {
	p := pattern(8, workload.Shared, workload.Contiguous, rw.Read, 4096, 1<<20)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no pattern", Config{}},
		{"bad pattern", Config{Patterns: []workload.Pattern{{Processes: 1}}}},
		{"negative I/O nodes", Config{Patterns: []workload.Pattern{p}, IONodes: -1}},
		{"too many servers", Config{Patterns: []workload.Pattern{p}, Servers: 300}},
		{"bad disk", Config{Patterns: []workload.Pattern{p}, Disk: disk.Config{Kind: "tape", CapacityBytes: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nil); !errors.Is(err, ErrBadConfig) {
				t.Errorf("got %v, want ErrBadConfig", err)
			}
		})
	}
	if _, err := New(Config{Patterns: []workload.Pattern{p}, Scheduler: "nope"}, nil); !errors.Is(err, sched.ErrUnknownAlgo) {
		t.Errorf("unknown scheduler: got %v, want sched.ErrUnknownAlgo", err)
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
		return GridOptions{Out: dir, Workers: 2, Repeat: repeat, Resume: resume, Base: Config{Interval: 100 * time.Millisecond},
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

// TestOutcomesAverageRepetitions: Outcomes (and so the findings and the
// figures) count the repetitions of an experiment once, at their mean
// makespan.
func TestOutcomesAverageRepetitions(t *testing.T) {
	sc := workload.Grid(false)[0]
	mk := func(sched string, w time.Duration, rep int, makespan time.Duration) dataset.Experiment {
		return dataset.Experiment{Run: dataset.Run{Scenario: sc, Scheduler: sched, Window: w, Rep: rep}, Makespan: makespan, Bytes: 1}
	}
	out := Outcomes([]dataset.Experiment{
		mk("twins", time.Millisecond, 0, 2*time.Second), mk("twins", 2*time.Millisecond, 0, 3*time.Second), mk("fifo", 0, 0, 5*time.Second),
		mk("twins", time.Millisecond, 1, 6*time.Second), mk("twins", 2*time.Millisecond, 1, 3*time.Second), mk("fifo", 0, 1, 7*time.Second),
	})
	if len(out) != 1 {
		t.Fatalf("%d outcomes, want 1", len(out))
	}
	o := out[0]
	if o.Twins[time.Millisecond] != 4*time.Second || o.Twins[2*time.Millisecond] != 3*time.Second || o.Baselines["fifo"] != 6*time.Second {
		t.Fatalf("outcome %+v, want mean makespans 1ms 4s, 2ms 3s, fifo 6s", o)
	}
	if w, _, _ := o.BestWindow(); w != 2*time.Millisecond {
		t.Errorf("best window %v, want 2ms (repetition 0 alone would say 1ms)", w)
	}
}

// A grid that cannot run (a total smaller than one request per process)
// is refused before any file is written.
func TestGridRefusedBeforeWritingAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "grid")
	_, err := RunGrid(context.Background(), GridOptions{Out: dir, TotalBytes: 16 << 20, Workers: 1})
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("grid with 16 MiB per experiment: %v, want ErrBadConfig", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the grid's directory exists after a refused run (%v)", err)
	}
}
