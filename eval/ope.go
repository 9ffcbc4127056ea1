package eval

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

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
				out = append(out, Sample{Round: prev.Round, Context: prev.Context, Action: prev.Window, Prob: prev.Prob, Reward: sum / float64(n)})
			}
		}
		prev = d
		return nil
	})
	return out, err
}

// Target is a policy to evaluate offline: the window it would choose in a
// context.
type Target struct {
	Name   string
	Choose func(context string) time.Duration
}

// StaticTarget is the target that always chooses w.
func StaticTarget(w time.Duration) Target {
	return Target{Name: "static " + w.String(), Choose: func(string) time.Duration { return w }}
}

// ParseTarget reads "static:8ms" (one of sched.Windows).
func ParseTarget(s string) (Target, error) {
	kind, arg, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || kind != "static" {
		return Target{}, fmt.Errorf("%w: policy %q: want static:WINDOW (e.g. static:8ms)", ErrBadLog, s)
	}
	w, err := time.ParseDuration(arg)
	if err != nil || !slices.Contains(sched.Windows, w) {
		return Target{}, fmt.Errorf("%w: policy %q: the window must be one of %v", ErrBadLog, s, sched.Windows)
	}
	return StaticTarget(w), nil
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
	Target  string
	Samples int // logged rounds
	Matched int // rounds where the logged window is the target's
	// ESS is the effective sample size of the importance weights,
	// (sum w)^2 / sum w^2: few rounds with large weights (small
	// propensities) make it small, and the estimate unreliable.
	ESS   float64
	IPS   Interval
	SNIPS Interval
	DR    Interval
}

// Evaluate estimates t's value from samples, with level (e.g. 0.95)
// intervals from resamples bootstrap resamples drawn with rng.
func Evaluate(samples []Sample, t Target, level float64, resamples int, rng *rand.Rand) (Estimate, error) {
	if len(samples) == 0 {
		return Estimate{}, fmt.Errorf("%w: no usable round (a log with propensities and credited rewards is needed)", ErrBadLog)
	}
	if !(level > 0 && level < 1) || resamples < 10 {
		return Estimate{}, fmt.Errorf("%w: confidence level %v and %d resamples, want (0, 1) and >= 10", ErrBadLog, level, resamples)
	}
	q := rewardModel(samples)
	e := Estimate{Target: t.Name, Samples: len(samples)}
	var sw, sw2 float64
	for _, s := range samples {
		if s.Action == t.Choose(s.Context) {
			e.Matched++
			sw += 1 / s.Prob
			sw2 += 1 / (s.Prob * s.Prob)
		}
	}
	if sw2 > 0 {
		e.ESS = sw * sw / sw2
	}
	ips, snips, dr := estimate(samples, nil, t, q)
	idx := make([]int, len(samples))
	var bi, bs, bd []float64
	for range resamples {
		for k := range idx {
			idx[k] = rng.IntN(len(samples))
		}
		a, b, c := estimate(samples, idx, t, q)
		bi, bs, bd = append(bi, a), append(bs, b), append(bd, c)
	}
	e.IPS = interval(ips, bi, level)
	e.SNIPS = interval(snips, bs, level)
	e.DR = interval(dr, bd, level)
	return e, nil
}

// rewardModel is the doubly robust estimator's model of the reward: the
// mean logged reward of each (context, window), else of the context.
func rewardModel(samples []Sample) func(ctx string, w time.Duration) float64 {
	type key struct {
		ctx string
		w   time.Duration
	}
	sum, n := map[key]float64{}, map[key]int{}
	for _, s := range samples {
		for _, k := range []key{{s.Context, s.Action}, {s.Context, -1}} {
			sum[k] += s.Reward
			n[k]++
		}
	}
	return func(ctx string, w time.Duration) float64 {
		if k := (key{ctx, w}); n[k] > 0 {
			return sum[k] / float64(n[k])
		}
		if k := (key{ctx, -1}); n[k] > 0 {
			return sum[k] / float64(n[k])
		}
		return 0
	}
}

// estimate computes the three estimators over samples[idx] (all samples
// when idx is nil).
func estimate(samples []Sample, idx []int, t Target, q func(string, time.Duration) float64) (ips, snips, dr float64) {
	n := len(samples)
	if idx != nil {
		n = len(idx)
	}
	var wsum float64
	for k := range n {
		s := samples[k]
		if idx != nil {
			s = samples[idx[k]]
		}
		a := t.Choose(s.Context)
		w := 0.0
		if s.Action == a {
			w = 1 / s.Prob
		}
		ips += w * s.Reward
		wsum += w
		dr += q(s.Context, a) + w*(s.Reward-q(s.Context, s.Action))
	}
	if wsum > 0 {
		snips = ips / wsum
	}
	return ips / float64(n), snips, dr / float64(n)
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
