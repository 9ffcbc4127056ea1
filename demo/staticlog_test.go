package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/eval"
)

// A static run's decision log records the window the I/O nodes ran, with
// probability 1, so that adaptio eval log can evaluate it: its estimate of
// that window is the run's measured mean reward per round. Before, the
// log carried the Council's own decisions (never applied: 125 µs with
// probability 1, its first exploration) and no rewarded round matched
// them.
func TestSimDemoStaticLogRecordsTheWindowRun(t *testing.T) {
	const w = 4 * time.Millisecond
	state := t.TempDir()
	cfg := smallSim(t, state)
	cfg.Static, cfg.Compare, cfg.Iterations, cfg.PhaseBytes = w, -1, 2, 256<<20
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	log := readLog(t, filepath.Join(state, SimDecisionLog))
	if len(log) < 10 {
		t.Fatalf("%d rounds logged, want >= 10", len(log))
	}
	for _, d := range log {
		if d.Window != w || d.Prob != 1 || d.Explore {
			t.Fatalf("round %d: window %v prob %v explore %v, want %v, 1, false", d.Round, d.Window, d.Prob, d.Explore, w)
		}
		for _, e := range d.Plan {
			if e.Window != w || e.Prob != 1 || e.Explore {
				t.Fatalf("round %d: plan %+v, want %v with probability 1", d.Round, e, w)
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(state, SimDecisionLog))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := eval.ReadSamples(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < len(log)/2 {
		t.Fatalf("%d samples of %d rounds, want most rounds", len(samples), len(log))
	}
	measured, _, err := eval.MeanRoundReward(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	e, err := eval.Evaluate(samples, eval.StaticTarget(w), 0.95, 100, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e.IPS.Value-measured) > 1e-6*measured || e.Unsupported != 0 {
		t.Errorf("static %v from its own log: IPS %v, unsupported %v; want the measured %v, 0", w, e.IPS.Value, e.Unsupported, measured)
	}
}

func TestStaticDecisionIsTheWindowRun(t *testing.T) {
	d := council.Decision{Round: 3, Window: 125 * time.Microsecond, Prob: 1, Explore: true, Context: "SS/write",
		Plan: []council.PlanEntry{{Op: "write", Context: "SS/write", Window: 125 * time.Microsecond, Prob: 1, Explore: true}}}
	got := staticDecision(d, 8*time.Millisecond)
	if got.Window != 8*time.Millisecond || got.Prob != 1 || got.Explore || got.Plan[0].Window != 8*time.Millisecond || got.Plan[0].Prob != 1 {
		t.Errorf("staticDecision: %+v", got)
	}
	if d.Plan[0].Window != 125*time.Microsecond {
		t.Errorf("staticDecision changed its argument's plan: %+v", d.Plan)
	}
}

// The real stack's sink writes a static run's decisions as the nodes ran
// them too, whole lines in order, however the service's writes are cut.
func TestSinkStaticWritesTheWindowRun(t *testing.T) {
	s, _ := newSink(t)
	s.trk.static = 2 * time.Millisecond
	wall := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var log []byte
	for r := uint64(1); r <= 3; r++ {
		d := council.Decision{Round: r, Window: 125 * time.Microsecond, Prob: 1, Explore: true, Context: "SS/write", Voters: 1,
			Nodes: []council.NodeReport{{Node: 1, Round: r - 1, Pattern: "SS", Op: "write", Window: 2 * time.Millisecond, Credited: true, Reward: 5}},
			Plan:  []council.PlanEntry{{Op: "write", Context: "SS/write", Window: 125 * time.Microsecond, Prob: 0.5}}}
		b, _ := json.Marshal(loggedDecision{Decision: d, Wall: &wall})
		log = append(append(log, b...), '\n')
	}
	for _, cut := range [][2]int{{0, 7}, {7, 300}, {300, len(log)}} {
		if _, err := s.Write(log[cut[0]:cut[1]]); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(s.file.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("%d lines written, want 3:\n%s", len(lines), data)
	}
	for i, l := range lines {
		var d loggedDecision
		if err := json.Unmarshal(l, &d); err != nil {
			t.Fatal(err)
		}
		if d.Wall == nil || !d.Wall.Equal(wall) {
			t.Errorf("line %d: wall-clock time %v, want %v kept", i, d.Wall, wall)
		}
		if d.Round != uint64(i+1) || d.Window != 2*time.Millisecond || d.Prob != 1 || d.Explore || d.Plan[0].Window != 2*time.Millisecond || d.Plan[0].Prob != 1 {
			t.Errorf("line %d: %+v, want round %d under 2ms with probability 1", i, d, i+1)
		}
	}
	samples, err := eval.ReadSamples(bytes.NewReader(data))
	if err != nil || len(samples) != 2 {
		t.Errorf("%d samples (%v), want 2 (every round but the last)", len(samples), err)
	}
}
