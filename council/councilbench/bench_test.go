package councilbench

import (
	"context"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/sched"
)

func TestRunSmall(t *testing.T) {
	// The measured period is 25 intervals of wall-clock time; how many
	// rounds close in it depends on the machine's load, so the test asserts
	// what a result must satisfy, not a count of rounds (the rate is
	// BenchmarkTimeToDecision768's and adaptio council bench's to measure).
	res, err := Run(context.Background(), Config{Announcers: 24, Conns: 2, Interval: 40 * time.Millisecond, Duration: time.Second, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds < 1 || res.Samples < 1 || res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.Max || res.ProcessingPerRound <= 0 {
		t.Fatalf("implausible result %+v", res)
	}
	// Every measured round's decision reaches every Announcer: about one
	// sample per Announcer per round (the last round may be cut short).
	if res.Samples > 24*(res.Rounds+1) {
		t.Fatalf("%d samples for %d rounds of 24 Announcers", res.Samples, res.Rounds)
	}
}

func TestSourcePatterns(t *testing.T) {
	now := time.Now()
	for node := range 3 {
		s := newSource(node)
		o := s.CloseInterval(now)
		if err := o.Validate(); err != nil || o.Idle() {
			t.Fatalf("node %d: %+v: %v", node, o, err)
		}
		// File per process: one handle per process; shared file: one handle.
		if want := []int{o.Processes, 1, 1}[node]; o.FileHandles != want {
			t.Errorf("node %d (%v): %d file handles, want %d", node, access.Classes[node], o.FileHandles, want)
		}
		if got := o.Window; got != sched.DefaultWindow {
			t.Errorf("node %d: window %v before any decision, want %v", node, got, sched.DefaultWindow)
		}
	}
}

// BenchmarkTimeToDecision768 runs the seed-000 scale (768 I/O nodes) in
// process for a few rounds and reports the time to decision.
func BenchmarkTimeToDecision768(b *testing.B) {
	for b.Loop() {
		res, err := Run(context.Background(), Config{Announcers: 768, Interval: 200 * time.Millisecond, Duration: 2 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.P50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(res.P99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(res.ProcessingPerRound.Microseconds())/1000, "council-ms/round")
	}
}

// BenchmarkTimeToDecision10000 is the 10,000-node target, in process.
func BenchmarkTimeToDecision10000(b *testing.B) {
	for b.Loop() {
		res, err := Run(context.Background(), Config{Announcers: 10000, Interval: time.Second, Duration: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.P50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(res.P99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(res.ProcessingPerRound.Microseconds())/1000, "council-ms/round")
	}
}
