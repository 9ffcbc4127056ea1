package eval_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	eval.SkipUnderRace(t)
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

// loggedBandit is a logged contextual bandit with a known value, shaped
// like the simulated demo's logs: each round is in context "SS/write"
// (probability 0.95) or "SS/read" (0.05, rewards 30 times larger); the
// logging policy is epsilon-greedy (epsilon 0.15 over the TWINS windows,
// greedy window 8 ms for writes and 1 ms for reads), and window i of
// sched.Windows earns loggedBanditMean(ctx, i) times a uniform noise of
// +-50%. A window other than the greedy one is chosen in about 2% of a
// context's rounds: in a few rounds of the rare, heavy context.
func loggedBandit(rounds int, rng *rand.Rand) []eval.Sample {
	const eps = 0.15
	k := len(sched.Windows)
	var out []eval.Sample
	for r := range rounds {
		ctx, greedy := "SS/write", 6
		if rng.Float64() < loggedBanditReads {
			ctx, greedy = "SS/read", 3
		}
		a := greedy
		if rng.Float64() < eps {
			a = rng.IntN(k)
		}
		p := eps / float64(k)
		if a == greedy {
			p += 1 - eps
		}
		out = append(out, eval.Sample{Round: uint64(r + 1), Context: ctx, Action: sched.Windows[a], Prob: p,
			Reward: loggedBanditMean(ctx, a) * (1 + rng.Float64() - 0.5), Credits: 1})
	}
	return out
}

const loggedBanditReads = 0.05 // share of the rounds in context "SS/read"

func loggedBanditMean(ctx string, a int) float64 {
	m := 10 + float64((3*a)%7) // 10, 13, 16, 12, 15, 11, 14
	if ctx == "SS/read" {
		m *= 30
	}
	return m
}

// The doubly robust estimator's interval covers the true value of a
// static window about as often as its level says, on logs of a bandit
// with a known value (100 seeds). With its reward model fitted once, on
// every round, and held fixed in the bootstrap, the model's own error
// never entered the interval, and a rare (context, window) cell's
// rewards were corrected against their own mean: the intervals covered
// the value in 80 and 83 of the 100 seeds (IPS 93 and 94); refitting the
// model in each resample gave 90 and 90, refitting it cross-fitted 92
// and 92; with the block bootstrap (16 rounds) 92 and 93 (IPS 98 and 99,
// SNIPS 99 and 99, with their support bounds: a read window chosen fewer
// times than its propensity implies counts as partly unsupported).
func TestOffPolicyDoublyRobustIntervalsCover(t *testing.T) {
	eval.SkipUnderRace(t)
	const seeds, rounds = 100, 4000
	for _, w := range []int{1, 4} {
		truth := (1-loggedBanditReads)*loggedBanditMean("SS/write", w) + loggedBanditReads*loggedBanditMean("SS/read", w)
		covered := map[string]int{}
		for seed := range uint64(seeds) {
			rng := rand.New(rand.NewPCG(seed, 11))
			e, err := eval.Evaluate(loggedBandit(rounds, rng), eval.StaticTarget(sched.Windows[w]), 0.95, 200, rng)
			if err != nil {
				t.Fatal(err)
			}
			for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
				if iv.Lo <= truth && truth <= iv.Hi {
					covered[name]++
				}
			}
		}
		t.Logf("static %v: 95%% intervals covering the value %.1f in %d seeds: IPS %d, SNIPS %d, DR %d", sched.Windows[w], truth, seeds, covered["IPS"], covered["SNIPS"], covered["DR"])
		if covered["DR"] < 90 {
			t.Errorf("static %v: DR intervals cover the value in %d of %d seeds, want >= 90 (level 95%%)", sched.Windows[w], covered["DR"], seeds)
		}
	}
}

// A decision with a plan gives each direction its own window, context and
// probability: ReadSamples pairs each I/O node's credited reward with its
// direction's plan entry, and a round of reads and writes gives a sample
// per direction with its share of the round.
func TestReadSamplesFollowsThePlan(t *testing.T) {
	ms := time.Millisecond
	node := func(i int, op string, w time.Duration, reward float64) council.NodeReport {
		return council.NodeReport{Node: i, Op: op, Context: "SS/" + op, Window: w, Credited: true, Reward: reward}
	}
	plan := func(rd, wr time.Duration, prd, pwr float64) []council.PlanEntry {
		return []council.PlanEntry{{Op: "read", Context: "SS/read", Window: rd, Prob: prd}, {Op: "write", Context: "SS/write", Window: wr, Prob: pwr}}
	}
	decisions := []council.Decision{
		{Round: 1, Window: 8 * ms, Prob: 0.9, Context: "SS/write", Nodes: []council.NodeReport{node(0, "write", ms, 5)}, Plan: plan(ms, 8*ms, 0.5, 0.9)},
		// Round 1's decision: writes ran 8 ms, the reads the read plan's 1 ms
		// (not the decision's 8 ms); a node that did not apply it is left out.
		{Round: 2, Window: 2 * ms, Prob: 0.05, Context: "SS/read", Nodes: []council.NodeReport{
			node(0, "write", 8*ms, 10), node(1, "write", 8*ms, 12), node(2, "read", ms, 100), node(3, "read", 4*ms, 1000)}, Plan: plan(2*ms, 8*ms, 0.05, 0.8), Credit: council.CreditRound},
		// Round 3's log predates Decision.Credit: each node was a pull.
		{Round: 3, Window: 8 * ms, Prob: 0.9, Context: "SS/write", Nodes: []council.NodeReport{node(0, "read", 2*ms, 300)}},
	}
	var buf bytes.Buffer
	for _, d := range decisions {
		if err := json.NewEncoder(&buf).Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	samples, err := eval.ReadSamples(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := []eval.Sample{
		{Round: 1, Context: "SS/write", Action: 8 * ms, Prob: 0.9, Reward: 11, Credits: 2, Share: 2.0 / 3, Pulls: 1},
		{Round: 1, Context: "SS/read", Action: ms, Prob: 0.5, Reward: 100, Credits: 1, Share: 1.0 / 3, Pulls: 1},
		{Round: 2, Context: "SS/read", Action: 2 * ms, Prob: 0.05, Reward: 300, Credits: 1, Share: 1, Pulls: 1},
	}
	if !slices.Equal(samples, want) {
		t.Fatalf("samples:\n%+v\nwant\n%+v", samples, want)
	}
}

// supportLog is a logged bandit with two contexts: "SS/write" (90% of the
// rounds; the logging policy picks 1 ms with probability 0.8, else 8 ms;
// they earn 10 and 20, noise +-2) and "SS/read" (10%; the logging policy
// always picks 2 ms, which earns 100 +-50; 8 ms would earn 130 +-10, but
// the log never chose it there).
func supportLog(rounds int, rng *rand.Rand) []eval.Sample {
	var out []eval.Sample
	for r := range rounds {
		s := eval.Sample{Round: uint64(r + 1), Context: "SS/write", Action: time.Millisecond, Prob: 0.8, Credits: 1}
		switch {
		case rng.Float64() < 0.1:
			s.Context, s.Action, s.Prob, s.Reward = "SS/read", 2*time.Millisecond, 1, 100+100*rng.Float64()-50
		case rng.Float64() < 0.8:
			s.Reward = 10 + 4*rng.Float64() - 2
		default:
			s.Action, s.Prob, s.Reward = 8*time.Millisecond, 0.2, 20+4*rng.Float64()-2
		}
		out = append(out, s)
	}
	return out
}

// Where the target chooses a window the log never chose in a context,
// IPS and SNIPS are not identified: the estimate reports that context's
// mass as unsupported, and their intervals bound it by the context's
// logged rewards, so that they contain the value (here 0.9*20 + 0.1*130
// = 31), where the bootstrap alone gave an interval around IPS's 18 (the
// unsupported reads counted as earning nothing) and SNIPS's 20 (as
// earning the writes' mean), and DR's model, the reads' mean, a narrow
// interval around 28.
func TestOffPolicyUnsupportedWindowWidensTheInterval(t *testing.T) {
	const truth = 0.9*20 + 0.1*130
	covered := map[string]int{}
	const seeds = 20
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 21))
		e, err := eval.Evaluate(supportLog(2000, rng), eval.StaticTarget(8*time.Millisecond), 0.95, 200, rng)
		if err != nil {
			t.Fatal(err)
		}
		for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
			if iv.Lo <= truth && truth <= iv.Hi {
				covered[name]++
			}
		}
		if seed > 0 {
			continue
		}
		t.Logf("IPS %.3g [%.3g, %.3g], SNIPS %.3g [%.3g, %.3g], DR %.3g [%.3g, %.3g]; support %+v",
			e.IPS.Value, e.IPS.Lo, e.IPS.Hi, e.SNIPS.Value, e.SNIPS.Lo, e.SNIPS.Hi, e.DR.Value, e.DR.Lo, e.DR.Hi, e.Support)
		if len(e.Support) != 2 || e.Support[1].Context != "SS/read" || e.Support[1].Unsupported != 1 || e.Support[0].Unsupported > 0.1 {
			t.Errorf("support %+v, want SS/write mostly supported and SS/read not at all", e.Support)
		}
		if math.Abs(e.Unsupported-e.Support[1].Rounds/float64(e.Samples)) > 0.02 {
			t.Errorf("unsupported %.3f in all, want about the reads' share of the rounds %.3f", e.Unsupported, e.Support[1].Rounds/float64(e.Samples))
		}
		// The points value the unsupported reads at their context's mean
		// logged reward (100): 0.9*20 + 0.1*100 = 28, inside the intervals.
		for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
			if math.Abs(iv.Value-28) > 1.5 || iv.Value < iv.Lo || iv.Value > iv.Hi {
				t.Errorf("%s %.3f [%.3f, %.3f], want a point about 28 inside its interval", name, iv.Value, iv.Lo, iv.Hi)
			}
		}
		if e.IPS.Hi-e.IPS.Lo > 15 {
			t.Errorf("IPS interval [%.3f, %.3f] wider than the reads' reward range allows (0.1 * 100 + noise)", e.IPS.Lo, e.IPS.Hi)
		}
	}
	for _, name := range []string{"IPS", "SNIPS", "DR"} {
		if covered[name] < seeds {
			t.Errorf("%s covers the value %v in %d of %d seeds, want all", name, truth, covered[name], seeds)
		}
	}
}

// A window the logging policy chose once, in a forced first exploration
// with probability 1, and never again (a near-deterministic log, as
// thompson-warm's): its importance weights account for one round of the
// target's thousands, and nearly all its mass is unsupported: the
// estimate is refused.
func TestOffPolicyAlmostNeverChosenWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	var samples []eval.Sample
	for r := range 3000 {
		s := eval.Sample{Round: uint64(r + 1), Context: "SS/write", Action: 8 * time.Millisecond, Prob: 1, Reward: 20 + 4*rng.Float64() - 2, Credits: 1}
		if r == 0 {
			s.Action, s.Reward = time.Millisecond, 10+4*rng.Float64()-2
		}
		samples = append(samples, s)
	}
	e, err := eval.Evaluate(samples, eval.StaticTarget(time.Millisecond), 0.95, 200, rng)
	if err != nil {
		t.Fatal(err)
	}
	if e.Unsupported < 0.99 || len(e.Support) != 1 || e.Support[0].Unsupported < 0.99 {
		t.Errorf("unsupported %v, %+v; want >= 0.99", e.Unsupported, e.Support)
	}
	// Nearly all of it unsupported: refused, with no point and no interval.
	if e.Refused == "" || !strings.Contains(e.Refused, "too little support") {
		t.Errorf("refused %q, want too little support", e.Refused)
	}
	for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
		if !math.IsNaN(iv.Value) || !math.IsNaN(iv.Lo) || !math.IsNaN(iv.Hi) {
			t.Errorf("%s %v, want no estimate (NaN)", name, iv)
		}
	}
	// The logging policy's own window is fully supported: no widening.
	e, err = eval.Evaluate(samples, eval.StaticTarget(8*time.Millisecond), 0.95, 200, rng)
	if err != nil {
		t.Fatal(err)
	}
	if e.Unsupported > 0.001 || e.IPS.Hi-e.IPS.Lo > 0.5 {
		t.Errorf("static 8ms: unsupported %v, IPS [%.3f, %.3f]; want 0 and a narrow interval around 20", e.Unsupported, e.IPS.Lo, e.IPS.Hi)
	}
}

// arLog is a log of consecutive rounds whose rewards share a slowly
// varying state, as consecutive seconds of one run do (the phase, the data
// servers' caches): the logging policy picks 1 ms or 8 ms with
// probability 0.5, which earn 10 and 20 plus z, an AR(1) process with
// coefficient phi and stationary standard deviation sd, plus noise +-2.
func arLog(rounds int, phi, sd float64, rng *rand.Rand) []eval.Sample {
	z := sd * rng.NormFloat64()
	var out []eval.Sample
	for r := range rounds {
		z = phi*z + sd*math.Sqrt(1-phi*phi)*rng.NormFloat64()
		s := eval.Sample{Round: uint64(r + 1), Context: "SS/write", Action: time.Millisecond, Prob: 0.5, Reward: 10 + z + 4*rng.Float64() - 2, Credits: 1}
		if rng.Float64() < 0.5 {
			s.Action, s.Reward = 8*time.Millisecond, s.Reward+10
		}
		out = append(out, s)
	}
	return out
}

// With rewards correlated over consecutive rounds, resampling rounds
// independently makes the intervals too narrow; resampling blocks of
// consecutive rounds (eval.BlockLength: 13 rounds of 2,000) widens them
// to about their level.
func TestOffPolicyBlockBootstrapCoversDependentRounds(t *testing.T) {
	eval.SkipUnderRace(t)
	const seeds, rounds = 100, 2000
	if got := eval.BlockLength(rounds); got != 13 {
		t.Errorf("BlockLength(%d) = %d, want 13", rounds, got)
	}
	const truth = 20 // static 8 ms, over the process's stationary law
	for _, block := range []int{1, 0} {
		covered := map[string]int{}
		for seed := range uint64(seeds) {
			rng := rand.New(rand.NewPCG(seed, 31))
			e, err := eval.EvaluateWith(arLog(rounds, 0.8, 5, rng), eval.StaticTarget(8*time.Millisecond), eval.EvaluateOptions{Resamples: 200, Block: block}, rng)
			if err != nil {
				t.Fatal(err)
			}
			for name, iv := range map[string]eval.Interval{"IPS": e.IPS, "SNIPS": e.SNIPS, "DR": e.DR} {
				if iv.Lo <= truth && truth <= iv.Hi {
					covered[name]++
				}
			}
		}
		t.Logf("block %d: 95%% intervals covering the value in %d seeds: IPS %d, SNIPS %d, DR %d", block, seeds, covered["IPS"], covered["SNIPS"], covered["DR"])
		if block == 0 {
			for _, name := range []string{"IPS", "SNIPS", "DR"} {
				if covered[name] < 88 {
					t.Errorf("block bootstrap: %s covers the value in %d of %d seeds, want >= 88", name, covered[name], seeds)
				}
			}
		}
	}
}

// The HTML report states the unsupported part of each policy, in all and
// per context, and draws intervals that leave their point outside.
func TestOffPolicyReportStatesSupport(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 21))
	e, err := eval.Evaluate(supportLog(1000, rng), eval.StaticTarget(8*time.Millisecond), 0.95, 100, rng)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eval.OffPolicyReport("adaptio eval log", "decisions.jsonl", e.Samples, 0.95, []eval.Estimate{e}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ope.html")
	if err := r.WriteHTML(path); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Block != 10 {
		t.Errorf("block %d, want 10", e.Block)
	}
	for _, want := range []string{"unsupported", "SS/read 100.0%", "SS/write 0.0%", "blocks of 10 consecutive rounds"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
