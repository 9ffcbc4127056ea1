package eval_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/eval"
)

// encodeLog writes decisions as a decision log.
func encodeLog(t testing.TB, ds []council.Decision) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, d := range ds {
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// A phase held under one window (credit by phase: the plan keeps the
// window while the pull is open, logged with probability 1) was chosen
// with the probability of the draw that opened it: its held rounds carry
// that probability, so that another window's target weighs the phase
// against that draw instead of finding it unsupported.
func TestReadSamplesHeldPhaseTakesTheOpeningDraw(t *testing.T) {
	ms := time.Millisecond
	node := func(w time.Duration) []council.NodeReport {
		return []council.NodeReport{{Node: 0, Op: "write", Context: "SS/write", Window: w, Credited: true, Reward: 10}}
	}
	entry := func(w time.Duration, p float64, held bool) []council.PlanEntry {
		return []council.PlanEntry{{Op: "write", Context: "SS/write", Window: w, Prob: p, Held: held}}
	}
	ds := []council.Decision{
		{Round: 1, Window: 4 * ms, Prob: 0.1, Context: "SS/write", Nodes: node(ms), Plan: entry(4*ms, 0.1, false)},
		{Round: 2, Window: 4 * ms, Prob: 1, Context: "SS/write", Nodes: node(4 * ms), Plan: entry(4*ms, 1, true)},
		{Round: 3, Window: 4 * ms, Prob: 1, Context: "SS/write", Nodes: node(4 * ms), Plan: entry(4*ms, 1, true)},
		{Round: 4, Window: 2 * ms, Prob: 0.7, Context: "SS/write", Nodes: node(4 * ms), Plan: entry(2*ms, 0.7, false)},
		{Round: 5, Window: 2 * ms, Prob: 1, Context: "SS/write", Nodes: node(2 * ms), Plan: entry(2*ms, 1, true)},
		{Round: 6, Window: 2 * ms, Prob: 1, Context: "SS/write", Nodes: node(2 * ms)},
	}
	samples, err := eval.ReadSamples(bytes.NewReader(encodeLog(t, ds)))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.1, 0.1, 0.1, 0.7, 0.7}
	if len(samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(samples), len(want))
	}
	for i, s := range samples {
		if s.Prob != want[i] {
			t.Errorf("round %d (%v): probability %v, want %v (the draw that opened the phase)", s.Round, s.Action, s.Prob, want[i])
		}
	}
}

// A static run's log says nothing of another window: the estimate is
// refused (no point, no interval) with the reason, where the estimators
// used to print a narrow interval around the logging window's own value.
func TestOffPolicyRefusesWithoutSupport(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	var samples []eval.Sample
	for r := range 500 {
		samples = append(samples, eval.Sample{Round: uint64(r + 1), Context: "SS/write", Action: 8 * time.Millisecond, Prob: 1, Reward: 20 + rng.NormFloat64(), Credits: 1})
	}
	e, err := eval.Evaluate(samples, eval.StaticTarget(time.Millisecond), 0.95, 100, rng)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Refused, "no support") || e.Matched != 0 {
		t.Fatalf("refused %q, matched %v: want no support", e.Refused, e.Matched)
	}
	for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
		if !math.IsNaN(iv.Lo) || !math.IsNaN(iv.Hi) || !math.IsNaN(iv.Value) {
			t.Errorf("%s %+v, want NaN: no estimate", name, iv)
		}
	}
	// The logging window itself is estimated.
	if e, err := eval.Evaluate(samples, eval.StaticTarget(8*time.Millisecond), 0.95, 100, rng); err != nil || e.Refused != "" {
		t.Fatalf("static 8ms: %v, refused %q; want an estimate", err, e.Refused)
	}
}

// Every interval holds its own point, whatever the support: logs of two
// contexts where the logging policy explores a context's windows with
// probabilities from 0.02 to 0.5 and leaves some never chosen, targets
// static and learning.
func TestOffPolicyIntervalsHoldTheirPoints(t *testing.T) {
	windows := []time.Duration{time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond}
	targets := []eval.Target{eval.StaticTarget(time.Millisecond), eval.StaticTarget(8 * time.Millisecond)}
	if l, err := eval.LearningTarget("egreedy"); err == nil {
		targets = append(targets, l)
	}
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 17))
		explore := []float64{0.02, 0.1, 0.3, 0.5}[seed%4]
		var samples []eval.Sample
		for r := range 600 {
			ctx, pick := "SS/write", 0
			if rng.Float64() < 0.3 {
				ctx = "SS/read"
			}
			prob := 1 - explore
			if rng.Float64() < explore {
				pick, prob = 1+rng.IntN(2), explore/2
			}
			if ctx == "SS/read" && seed%2 == 1 {
				pick, prob = 0, 1 // the reads never explore: 2 and 8 ms unsupported there
			}
			reward := 10 * float64(pick+1) * (1 + 0.4*rng.Float64() - 0.2) // positive, as bandwidths are
			if ctx == "SS/read" {
				reward *= 4
			}
			samples = append(samples, eval.Sample{Round: uint64(r + 1), Context: ctx, Action: windows[pick], Prob: prob, Reward: reward, Credits: 1})
		}
		for _, tg := range targets {
			e, err := eval.EvaluateWith(samples, tg, eval.EvaluateOptions{Resamples: 40}, rng)
			if err != nil {
				t.Fatal(err)
			}
			if e.Refused != "" {
				continue
			}
			for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
				if !(iv.Lo <= iv.Value && iv.Value <= iv.Hi) {
					t.Errorf("seed %d, %s, %s: %.3f outside its interval [%.3f, %.3f] (unsupported %.1f%%)", seed, tg.Name, name, iv.Value, iv.Lo, iv.Hi, 100*e.Unsupported)
				}
			}
		}
	}
}

// A log whose last line is cut is read up to the line before, with a
// warning naming the line; a whole log is left as it is.
func TestTrimCutLine(t *testing.T) {
	ds := []council.Decision{
		{Round: 1, Window: time.Millisecond, Prob: 1, Context: "SS/write"},
		{Round: 2, Window: time.Millisecond, Prob: 1, Context: "SS/write"},
	}
	whole := encodeLog(t, ds)
	if got, warn := eval.TrimCutLine(whole); warn != "" || !bytes.Equal(got, whole) {
		t.Fatalf("whole log: warning %q, changed %v", warn, !bytes.Equal(got, whole))
	}
	cut := whole[:len(whole)-10]
	got, warn := eval.TrimCutLine(cut)
	if !strings.Contains(warn, "line 2 is cut") || !strings.Contains(warn, "up to line 1") {
		t.Errorf("warning %q, want line 2 cut, read up to line 1", warn)
	}
	if first := whole[:bytes.IndexByte(whole, '\n')+1]; !bytes.Equal(got, first) {
		t.Errorf("trimmed to %q, want the first line", got)
	}
	if _, err := eval.ReadSamples(bytes.NewReader(cut)); err == nil {
		t.Error("ReadSamples read a cut line without error: the trim is what makes it readable")
	}
}

// FuzzReadSamples feeds decision logs, trimmed of a cut last line, to
// the readers: they return samples or an error, never panic, and every
// sample has a propensity in (0, 1].
func FuzzReadSamples(f *testing.F) {
	ms := time.Millisecond
	f.Add(encodeLog(f, []council.Decision{
		{Round: 1, Window: ms, Prob: 0.5, Context: "SS/write", Plan: []council.PlanEntry{{Op: "write", Context: "SS/write", Window: ms, Prob: 0.5}}},
		{Round: 2, Window: ms, Prob: 1, Context: "SS/write", Nodes: []council.NodeReport{{Op: "write", Window: ms, Credited: true, Reward: 3}},
			Plan: []council.PlanEntry{{Op: "write", Context: "SS/write", Window: ms, Prob: 1, Held: true}}},
	}))
	f.Add([]byte("{\"round\":1,\"win_ns\":1000000,\"prob\":0.5,\"context\":\"SS/write\"}\n{\"round\":2,\"pr"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		data, _ := eval.TrimCutLine(b)
		samples, err := eval.ReadSamples(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range samples {
			if !(s.Prob > 0 && s.Prob <= 1) {
				t.Fatalf("sample %+v: propensity outside (0, 1]", s)
			}
		}
		_, _, _ = eval.MeanRoundReward(bytes.NewReader(data))
	})
}
