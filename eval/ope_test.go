package eval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/sched"
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
			t.Errorf("%s: ESS %.1f of %.0f matched rounds, want equal and >= 300", tc.policy, e.ESS, e.Matched)
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

// uniformLog is a decision log of a logging policy that picks each of the
// TWINS windows with probability 1/7, where window i earns 10 + i (noise
// +-2), credited in the next round to one I/O node.
func uniformLog(t *testing.T, rounds int, rng *rand.Rand) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	prev := sched.Windows[0]
	for r := 1; r <= rounds; r++ {
		reward := 10 + float64(slices.Index(sched.Windows, prev)) + 4*rng.Float64() - 2
		w := sched.Windows[rng.IntN(len(sched.Windows))]
		d := council.Decision{Round: uint64(r), Window: w, Prob: 1 / float64(len(sched.Windows)), Context: "SS/read", Voters: 1,
			Nodes: []council.NodeReport{{Node: 0, Window: prev, Credited: true, Reward: reward, Context: "SS/read"}}}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		prev = w
	}
	return buf.Bytes()
}

// A learning target estimated from a uniform log: the interval covers the
// mean reward per round the policy earns when it runs online on the same
// rewards, and a static target's estimate is unchanged by the learning
// machinery (its distribution is its window).
func TestOffPolicyLearningTargetCoversOnlineRuns(t *testing.T) {
	const rounds = 600
	rng := rand.New(rand.NewPCG(5, 6))
	samples, err := eval.ReadSamples(bytes.NewReader(uniformLog(t, rounds, rng)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"egreedy", "ucb1", "thompson-warm"} {
		target, err := eval.ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		if !target.Learning() {
			t.Fatalf("%s: not a learning target", name)
		}
		e, err := eval.Evaluate(samples, target, 0.95, 100, rand.New(rand.NewPCG(7, 8)))
		if err != nil {
			t.Fatal(err)
		}
		// The truth: the policy run online, rounds-1 rewards, mean of 40 runs.
		var truth float64
		const runs = 40
		for run := range runs {
			p, err := bandit.New(name, len(sched.Windows), bandit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(run), 9))
			var sum float64
			for range rounds - 1 {
				a := p.Select(r).Arm
				reward := 10 + float64(a) + 4*r.Float64() - 2
				p.Update(a, reward)
				sum += reward
			}
			truth += sum / float64(rounds-1) / runs
		}
		if truth < 14 {
			t.Fatalf("%s online: %.3f, want a policy that learns (best window earns 16)", name, truth)
		}
		for est, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
			if !(iv.Lo <= truth && truth <= iv.Hi) {
				t.Errorf("%s %s: %.3f [%.3f, %.3f], want it to cover the online value %.3f", name, est, iv.Value, iv.Lo, iv.Hi, truth)
			}
		}
	}
	if _, err := eval.ParseTarget("nosuch"); !errors.Is(err, eval.ErrBadLog) || !strings.Contains(err.Error(), "egreedy") {
		t.Errorf("nosuch: %v, want ErrBadLog listing the policies", err)
	}
}
