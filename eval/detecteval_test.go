package eval

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// TestCountDecisions: a hand-checked case. Scenario SS (shared strided) is
// best at 2 ms, SC at 125 µs; both perform 100 at 1 ms.
func TestCountDecisions(t *testing.T) {
	ss := TableIII()[0].Scenario // shared strided read, 8 I/O nodes
	sc := WithClass(ss, access.SC)
	mk := func(s workload.Scenario, bw map[time.Duration]float64) []dataset.Experiment {
		var out []dataset.Experiment
		for w, v := range bw {
			out = append(out, dataset.Experiment{Run: dataset.Run{Scenario: s, Scheduler: "twins", Window: w}, Bandwidth: v})
		}
		return out
	}
	perf := PerfFromSummary(append(
		mk(ss, map[time.Duration]float64{Static: 50, Baseline: 100, 2 * time.Millisecond: 150}),
		mk(sc, map[time.Duration]float64{Static: 120, Baseline: 100, 2 * time.Millisecond: 80})...))
	if w, _ := perf.Best(ss.String()); w != 2*time.Millisecond {
		t.Fatalf("best window of SS = %v", w)
	}
	row := func(s workload.Scenario) dataset.Row {
		return dataset.Row{Run: dataset.Run{Scenario: s, Scheduler: "twins", Window: Baseline}, Class: s.Class(),
			Obs: access.Observation{Requests: 1, Op: rw.Read}}
	}
	rows := []dataset.Row{row(ss), row(ss), row(sc), {Run: dataset.Run{Scenario: ss, Scheduler: "fifo"}, Obs: access.Observation{Requests: 1}}}
	// A detector that always answers SC.
	alwaysSC := Decider{Name: "sc", Choose: func(r dataset.Row) (time.Duration, bool) { return perf.Best(WithClass(r.Scenario, access.SC).String()) }}
	ds := []Decider{
		{Name: "oracle", Choose: func(r dataset.Row) (time.Duration, bool) { return perf.Best(r.Scenario.String()) }},
		{Name: "static", Choose: func(dataset.Row) (time.Duration, bool) { return Static, true }},
		alwaysSC,
	}
	got := CountDecisions(rows, perf, ds)
	want := []struct{ imp, dec int }{
		{3, 0}, // oracle: SS 150 > 100 twice, SC 120 > 100
		{1, 2}, // static: SS 50 < 100 twice, SC 120 > 100
		{1, 2}, // always SC picks 125 µs everywhere: as static
	}
	for i, w := range want {
		c := got[i]
		if c.Rows != 3 || c.Improved["read"][8] != w.imp || c.Decreased["read"][8] != w.dec {
			t.Errorf("%s: rows %d improved %v decreased %v, want 3 rows, %d and %d", c.Decider, c.Rows, c.Improved, c.Decreased, w.imp, w.dec)
		}
	}
	// Relative performance of static: (50/150 + 50/150 + 120/120) / 3.
	if r := got[1].RelPerf; r < (1.0/3+1.0/3+1)/3-1e-12 || r > (1.0/3+1.0/3+1)/3+1e-12 {
		t.Errorf("static performance / oracle = %v", r)
	}
}

// TestPerfFromSummaryRepetitions: the repetitions of an experiment count
// once, at bytes over their mean makespan.
func TestPerfFromSummaryRepetitions(t *testing.T) {
	s := TableIII()[0].Scenario
	mk := func(w time.Duration, rep int, makespan time.Duration) dataset.Experiment {
		return dataset.Experiment{Run: dataset.Run{Scenario: s, Scheduler: "twins", Window: w, Rep: rep}, Makespan: makespan,
			Bytes: 600, Bandwidth: 600 / makespan.Seconds()}
	}
	// 1 ms: 2 s and 4 s (mean 3 s, 200 B/s); 2 ms: 2.5 s once (240 B/s),
	// though its repetition alone is slower than 1 ms's first.
	perf := PerfFromSummary([]dataset.Experiment{mk(Baseline, 0, 2*time.Second), mk(2*time.Millisecond, 0, 2500*time.Millisecond), mk(Baseline, 1, 4*time.Second)})
	m := perf[s.String()]
	if len(m) != 2 || m[Baseline] != 200 || m[2*time.Millisecond] != 240 {
		t.Fatalf("perf %v, want 1ms 200 and 2ms 240", m)
	}
	if w, _ := perf.Best(s.String()); w != 2*time.Millisecond {
		t.Fatalf("best window %v, want 2ms", w)
	}
}
