package eval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/eval"
)

// syntheticLog is a decision log of a logging policy that picks 1 ms with
// probability p1 and 8 ms otherwise, every round, where 1 ms earns about
// 10 and 8 ms about 20 (noise +-2), credited in the next round.
func syntheticLog(t *testing.T, rounds int, p1 float64, rng *rand.Rand) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	prev := time.Millisecond
	for r := 1; r <= rounds; r++ {
		reward := 10.0
		if prev == 8*time.Millisecond {
			reward = 20
		}
		reward += 4*rng.Float64() - 2
		w, prob := time.Millisecond, p1
		if rng.Float64() >= p1 {
			w, prob = 8*time.Millisecond, 1-p1
		}
		d := council.Decision{Round: uint64(r), Window: w, Prob: prob, Context: "SS/write", Voters: 1,
			Nodes: []council.NodeReport{{Node: 0, Window: prev, Credited: true, Reward: reward, Context: "SS/write"}}}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		prev = w
	}
	return buf.Bytes()
}

func TestOffPolicyEstimatesCoverTheTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	log := syntheticLog(t, 2000, 0.8, rng)
	samples, err := eval.ReadSamples(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1999 {
		t.Fatalf("%d samples, want 1999 (every round but the last has a next one)", len(samples))
	}
	for _, s := range samples[:50] {
		if (s.Action == time.Millisecond) != (math.Abs(s.Reward-10) <= 2) {
			t.Fatalf("sample %+v: the reward is not the one its window earned", s)
		}
	}
	for _, tc := range []struct {
		policy string
		truth  float64
	}{{"static:1ms", 10}, {"static:8ms", 20}} {
		target, err := eval.ParseTarget(tc.policy)
		if err != nil {
			t.Fatal(err)
		}
		e, err := eval.Evaluate(samples, target, 0.95, 400, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		// Every round of one window has the same propensity: the effective
		// sample size is the number of rounds that chose it.
		if math.Abs(e.ESS-float64(e.Matched)) > 1e-6*float64(e.Matched) || e.Matched < 300 {
			t.Errorf("%s: ESS %.1f of %d matched rounds, want equal and >= 300", tc.policy, e.ESS, e.Matched)
		}
		for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
			if !(iv.Lo <= tc.truth && tc.truth <= iv.Hi) || iv.Hi-iv.Lo > 4 {
				t.Errorf("%s %s: %.3f [%.3f, %.3f], want an interval narrower than 4 around %v", tc.policy, name, iv.Value, iv.Lo, iv.Hi, tc.truth)
			}
		}
	}
	if _, err := eval.ParseTarget("static:3ms"); !errors.Is(err, eval.ErrBadLog) {
		t.Errorf("static:3ms: %v, want ErrBadLog (not a TWINS window)", err)
	}
	if _, err := eval.ReadSamples(strings.NewReader(`{"round":1,"prob":1.5}`)); !errors.Is(err, eval.ErrBadLog) {
		t.Errorf("probability 1.5: %v, want ErrBadLog", err)
	}
	if _, err := eval.Evaluate(nil, eval.StaticTarget(time.Millisecond), 0.95, 100, rng); !errors.Is(err, eval.ErrBadLog) {
		t.Errorf("no samples: %v, want ErrBadLog", err)
	}
}
