package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/sched"
)

// ErrBadLog is returned for a decision log that cannot be evaluated.
var ErrBadLog = errors.New("eval log")

// Sample is one logged step of the Council as a contextual bandit: the
// window a round chose (Action) for the context that governed it, with the
// probability the decision rule gave it (Prob, the propensity), and the
// reward that window earned in the next round: the mean of that round's
// credited rewards observed under it.
type Sample struct {
	Round   uint64
	Context string
	Action  time.Duration
	Prob    float64
	Reward  float64
	Credits int // I/O nodes whose reward under Action the next round credited
}

// ReadSamples turns a Council decision log (one council.Decision per line)
// into samples. A round whose decision has no context (nobody voted), no
// propensity, or whose next round credited no reward under its window
// gives no sample.
func ReadSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	var prev *council.Decision
	err := eachLogLine(r, ErrBadLog, func(line int, d *council.Decision) error {
		if d.Prob < 0 || d.Prob > 1 || math.IsNaN(d.Prob) {
			return fmt.Errorf("%w: decision log line %d: probability %v outside [0, 1]", ErrBadLog, line, d.Prob)
		}
		if prev != nil && prev.Context != "" && prev.Prob > 0 && d.Round == prev.Round+1 {
			var sum float64
			n := 0
			for _, nr := range d.Nodes {
				if nr.Credited && nr.Window == prev.Window {
					sum += nr.Reward
					n++
				}
			}
			if n > 0 {
				out = append(out, Sample{Round: prev.Round, Context: prev.Context, Action: prev.Window, Prob: prev.Prob, Reward: sum / float64(n), Credits: n})
			}
		}
		prev = d
		return nil
	})
	return out, err
}

// Target is a policy to evaluate offline: a static window, or a learning
// policy of package bandit run as the Council runs it, one bandit per
// context over the TWINS windows (sched.Windows), learning along the log.
type Target struct {
	Name   string
	window time.Duration // static: the window; 0 for a learning policy
	policy string        // learning: the bandit policy's name
}

// StaticTarget is the target that always chooses w.
func StaticTarget(w time.Duration) Target {
	return Target{Name: "static " + w.String(), window: w}
}

// LearningTarget is the bandit policy name (see bandit.Names) with its
// default options, one per context. Replayed on a log, at each round it
// gives every window the probability its current state gives it, then
// draws one and learns the round's logged reward if it drew the logged
// window, else the mean logged reward of the window it drew over the
// rounds before (see replay.learn), once per credited I/O node as the
// Council credits each node's report.
func LearningTarget(name string) (Target, error) {
	if _, err := bandit.NewContextual(name, len(sched.Windows), bandit.Options{}); err != nil {
		return Target{}, fmt.Errorf("%w: policy %q: want static:WINDOW or one of %v", ErrBadLog, name, bandit.Names())
	}
	return Target{Name: name, policy: name}, nil
}

// Learning reports whether t learns along the log (a bandit policy).
func (t Target) Learning() bool { return t.policy != "" }

// ParseTarget reads "static:8ms" (one of sched.Windows) or a bandit
// policy's name ("egreedy", "thompson-warm", ...).
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return LearningTarget(s)
	}
	if kind != "static" {
		return Target{}, fmt.Errorf("%w: policy %q: want static:WINDOW (e.g. static:8ms) or one of %v", ErrBadLog, s, bandit.Names())
	}
	w, err := time.ParseDuration(arg)
	if err != nil || !slices.Contains(sched.Windows, w) {
		return Target{}, fmt.Errorf("%w: policy %q: the window must be one of %v", ErrBadLog, s, sched.Windows)
	}
	return StaticTarget(w), nil
}

// replay is one pass of a target over a log: its state and randomness.
type replay struct {
	t     Target
	bands *bandit.Contextual // learning targets
	rng   *rand.Rand
	probs []float64
	seen  rewardMeans // learning targets: the rounds replayed so far
}

func (t Target) start(rng *rand.Rand) *replay {
	r := &replay{t: t, rng: rng, probs: make([]float64, len(sched.Windows)), seen: rewardMeans{}}
	if t.Learning() {
		r.bands, _ = bandit.NewContextual(t.policy, len(sched.Windows), bandit.Options{}) // validated by LearningTarget
	}
	return r
}

// distribution is the probability the target gives each of sched.Windows
// in ctx, in its current state.
func (r *replay) distribution(ctx string) []float64 {
	if !r.t.Learning() {
		for i, w := range sched.Windows {
			r.probs[i] = 0
			if w == r.t.window {
				r.probs[i] = 1
			}
		}
		return r.probs
	}
	return r.bands.Policy(ctx).(bandit.Distribution).Probs()
}

// learn lets a learning target draw its window for s and learn its reward:
// the logged one if it drew the logged window, else the mean logged reward
// of the window it drew in s's context over the rounds replayed before s
// (of the context's windows if it has none yet; nothing is learnt before
// the context has a round). The model is causal: a replay never learns
// from rounds after the one it is in.
func (r *replay) learn(s Sample) {
	if !r.t.Learning() {
		return
	}
	defer r.seen.add(s)
	p := r.bands.Policy(s.Context)
	a, _ := p.(bandit.Chooser).Choose(r.rng)
	reward, ok := s.Reward, sched.Windows[a] == s.Action
	if !ok {
		reward, ok = r.seen.mean(s.Context, sched.Windows[a])
	}
	if !ok {
		return
	}
	for range max(s.Credits, 1) {
		p.Update(a, reward)
	}
}

// rewardMeans are running means of logged rewards per (context, window)
// and per context (window -1).
type rewardMeans map[ctxWindow]meanOf

type ctxWindow struct {
	ctx string
	w   time.Duration
}

type meanOf struct {
	sum float64
	n   int
}

func (m rewardMeans) add(s Sample) {
	for _, k := range []ctxWindow{{s.Context, s.Action}, {s.Context, -1}} {
		v := m[k]
		v.sum += s.Reward
		v.n++
		m[k] = v
	}
}

// mean is the mean logged reward of w in ctx, else of ctx.
func (m rewardMeans) mean(ctx string, w time.Duration) (float64, bool) {
	for _, k := range []ctxWindow{{ctx, w}, {ctx, -1}} {
		if v := m[k]; v.n > 0 {
			return v.sum / float64(v.n), true
		}
	}
	return 0, false
}

// Interval is an estimate with a confidence interval.
type Interval struct {
	Value, Lo, Hi float64
}

// Estimate is the value of a target policy estimated from a log: the mean
// reward per round it would have earned, by inverse propensity scoring
// (IPS), self-normalised IPS and the doubly robust estimator, each with a
// bootstrap confidence interval.
type Estimate struct {
	Target   string
	Learning bool // the target is a learning policy
	Samples  int  // logged rounds
	// Matched is the expected number of rounds where the target would
	// have chosen the logged window (for a static target, the rounds that
	// chose its window).
	Matched float64
	// ESS is the effective sample size of the importance weights,
	// (sum w)^2 / sum w^2: few rounds with large weights (small
	// propensities) make it small, and the estimate unreliable.
	ESS   float64
	IPS   Interval
	SNIPS Interval
	DR    Interval
}

// EvaluateOptions tune Evaluate.
type EvaluateOptions struct {
	Level     float64   // confidence level of the intervals (default 0.95)
	Resamples int       // bootstrap resamples (default 1000 for a static target, 200 for a learning one)
	Workers   int       // replays run in parallel (results do not depend on it; 0: 1)
	Progress  io.Writer // progress lines every 2 s (nil: none)
}

// Evaluate estimates t's value from samples, with level (e.g. 0.95)
// intervals from resamples bootstrap resamples drawn with rng.
func Evaluate(samples []Sample, t Target, level float64, resamples int, rng *rand.Rand) (Estimate, error) {
	return EvaluateWith(samples, t, EvaluateOptions{Level: level, Resamples: resamples}, rng)
}

// EvaluateWith is Evaluate with options: each bootstrap resample replays
// the log (a learning target in the rounds' order, from its initial state).
func EvaluateWith(samples []Sample, t Target, o EvaluateOptions, rng *rand.Rand) (Estimate, error) {
	if o.Level == 0 {
		o.Level = 0.95
	}
	if o.Resamples == 0 {
		o.Resamples = 1000
		if t.Learning() {
			o.Resamples = 200
		}
	}
	level, resamples := o.Level, o.Resamples
	if len(samples) == 0 {
		return Estimate{}, fmt.Errorf("%w: no usable round (a log with propensities and credited rewards is needed)", ErrBadLog)
	}
	if !(level > 0 && level < 1) || resamples < 10 {
		return Estimate{}, fmt.Errorf("%w: confidence level %v and %d resamples, want (0, 1) and >= 10", ErrBadLog, level, resamples)
	}
	q := rewardModel(samples)
	e := Estimate{Target: t.Name, Learning: t.Learning(), Samples: len(samples)}
	seed := rng.Uint64()
	// A learning target's replay depends on its own draws: its point
	// estimate is the mean of several replays of the whole log.
	replays := 1
	if t.Learning() {
		replays = learningReplays
	}
	// Every replay's rounds and seed are drawn first, so that the
	// replays can run in parallel and the result not depend on how.
	jobs := make([][]int, replays+resamples) // nil: the whole log
	for i := replays; i < len(jobs); i++ {
		idx := make([]int, len(samples))
		for k := range idx {
			idx[k] = rng.IntN(len(samples))
		}
		if t.Learning() {
			slices.Sort(idx) // a learning target replays the rounds in their order
		}
		jobs[i] = idx
	}
	out := make([]estimates, len(jobs))
	if err := parallel(context.Background(), len(jobs), Config{Workers: max(1, o.Workers), Log: o.Progress}, t.Name+" replays", func(i int) error {
		out[i] = estimate(samples, jobs[i], t.start(rand.New(rand.NewPCG(seed, uint64(i)))), q)
		return nil
	}); err != nil {
		return Estimate{}, err
	}
	var v estimates
	for _, x := range out[:replays] {
		v.ips += x.ips / float64(replays)
		v.snips += x.snips / float64(replays)
		v.dr += x.dr / float64(replays)
		v.matched += x.matched / float64(replays)
		v.ess += x.ess / float64(replays)
	}
	e.Matched, e.ESS = v.matched, v.ess
	var bi, bs, bd []float64
	for _, b := range out[replays:] {
		bi, bs, bd = append(bi, b.ips), append(bs, b.snips), append(bd, b.dr)
	}
	ips, snips, dr := v.ips, v.snips, v.dr
	e.IPS = interval(ips, bi, level)
	e.SNIPS = interval(snips, bs, level)
	e.DR = interval(dr, bd, level)
	return e, nil
}

// rewardModel is the doubly robust estimator's model of the reward: the
// mean logged reward of each (context, window), else of the context.
func rewardModel(samples []Sample) func(ctx string, w time.Duration) float64 {
	m := rewardMeans{}
	for _, s := range samples {
		m.add(s)
	}
	return func(ctx string, w time.Duration) float64 {
		v, _ := m.mean(ctx, w)
		return v
	}
}

// learningReplays is how many replays of the whole log a learning
// target's point estimate averages.
const learningReplays = 16

// estimates are the three estimators' values over one replay, with the
// expected matched rounds and the importance weights' effective size.
type estimates struct {
	ips, snips, dr, matched, ess float64
}

// estimate replays samples[idx] (all samples when idx is nil), in that
// order, through r.
func estimate(samples []Sample, idx []int, r *replay, q func(string, time.Duration) float64) estimates {
	n := len(samples)
	if idx != nil {
		n = len(idx)
	}
	var e estimates
	var wsum, wsum2 float64
	for k := range n {
		s := samples[k]
		if idx != nil {
			s = samples[idx[k]]
		}
		pi := r.distribution(s.Context)
		var pa, model float64
		for i, w := range sched.Windows {
			if pi[i] == 0 {
				continue
			}
			model += pi[i] * q(s.Context, w)
			if w == s.Action {
				pa = pi[i]
			}
		}
		w := pa / s.Prob
		e.matched += pa
		e.ips += w * s.Reward
		wsum += w
		wsum2 += w * w
		e.dr += model + w*(s.Reward-q(s.Context, s.Action))
		r.learn(s)
	}
	if wsum > 0 {
		e.snips = e.ips / wsum
	}
	if wsum2 > 0 {
		e.ess = wsum * wsum / wsum2
	}
	e.ips /= float64(n)
	e.dr /= float64(n)
	return e
}

// interval is the percentile bootstrap interval around v.
func interval(v float64, boot []float64, level float64) Interval {
	slices.Sort(boot)
	lo := boot[int(math.Floor((1-level)/2*float64(len(boot)-1)))]
	hi := boot[int(math.Ceil((1+level)/2*float64(len(boot)-1)))]
	return Interval{Value: v, Lo: lo, Hi: hi}
}

// MeanRoundReward is the measured value of a run: the mean over its rounds
// of the mean credited reward, from its decision log (for a run under a
// static window, the value Evaluate estimates for that window).
func MeanRoundReward(r io.Reader) (float64, int, error) {
	var sum float64
	n := 0
	first := true
	err := eachLogLine(r, ErrBadLog, func(_ int, d *council.Decision) error {
		// The first round's rewards were earned before any decision, as
		// ReadSamples, which pairs a decision with the next round, has it.
		if first {
			first = false
			return nil
		}
		var s float64
		k := 0
		for _, nr := range d.Nodes {
			if nr.Credited {
				s += nr.Reward
				k++
			}
		}
		if k > 0 {
			sum += s / float64(k)
			n++
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: no round with a credited reward", ErrBadLog)
	}
	return sum / float64(n), n, nil
}
