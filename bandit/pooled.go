package bandit

import (
	"math"
	"math/rand/v2"
)

// pooled is Gaussian Thompson sampling whose arms share their noise: arm
// a's mean is believed N(Q_a, Exploration^2 * s_a^2 / W_a) with
//
//	s_a^2 = (V_a + nu*P + s0^2) / (W_a + nu),  nu = min(Pool, D),
//
// where P = sum_b V_b / D is the context's pooled variance of one reward
// (D = sum_b (W_b - 1) over arms with more than one reward: its degrees of
// freedom), V_a the arm's own sum of squared deviations and s0 = Spread *
// scale thompson's weak prior. It is the arm's own variance shrunk toward
// the pooled one, each weighted by its degrees of freedom (the pooled
// estimate capped at Pool), as in a hierarchical model of the variances.
//
// Why: the windows (or forwarder counts) of one access pattern are measured
// through the same machine, so their noise is similar, while thompson's
// per-arm variance from 3 to 5 rewards is itself noisy. An arm whose first
// rewards happened to lie close together (three of a bimodal arm's common
// values, without its rare high one) got a posterior far narrower than its
// noise and, with the width narrowed (Exploration < 1), was never drawn
// again. Borrowing the variance the other arms show keeps such an arm's
// posterior as wide as the context's noise until its own rewards say
// otherwise.
//
// Options.LogFloor > 0 adds a floor of pulls growing like log t: an arm with
// fewer than LogFloor*ln(t/k) rewards (t: the context's rewards, k: its
// arms) whose mean is within two of its standard errors of the greedy
// arm's (the pooled data's, with the prior as one reward: plausibleSEs) is
// pulled, the fewest first, so that no arm that may be the best is starved
// for good whatever its early rewards; the pulls it costs grow only
// logarithmically, as UCB's do. The plausibility
// test keeps arms clearly worse from being pulled in bursts: without it every
// arm at the floor crossed it at the same step (t = k*exp(n/LogFloor)), and
// on a 5-arm machine 4 of the 10 pulls of one bin were forced.
//
// Why 2: on the MareNostrum 4 FORGE file floors of 2, 3, 4 and 6 were within
// 0.01 of each other (the sum of the cold and shared worst patterns 1.959,
// 1.961, 1.968, 1.965), and 4 was first taken. But a context whose windows
// all lie within the noise (the real demo's 1 s shared strided reads, 7
// windows within 10 to 15%, about 40 rounds in a run) keeps every window
// plausible, and 4*ln(40/7) = 7 pulls each is more than the context has:
// 62 of the 77 read plans of a run's last half were the floor's, round robin
// over the windows, and the reads gained 1.5% over the default window where
// thompson-warm gained 3 to 25%. At 2 (12 of 73 and 21 of 76 forced in the
// next two runs) the unseen files keep their worst patterns above 0.95
// (noisy 0.959, six-arms-few-reps 0.971; MareNostrum 4 0.978;
// docs/performance.md, "Do the policies hold on machines they were not
// tuned on?").
// Arms without data, the warm-up and a prior are handled as in thompson.
type pooled struct{}

// pool returns the context's pooled variance of one reward and its degrees
// of freedom (0, 0 when no arm has two rewards).
func (pooled) pool(c *core) (v, df float64) {
	for _, st := range c.arms {
		if st.N > 1 && st.W > 1 {
			v += st.V
			df += st.W - 1
		}
	}
	if df <= 0 {
		return 0, 0
	}
	return v / df, df
}

func (p pooled) sds(c *core) []float64 {
	pv, pdf := p.pool(c)
	nu := math.Min(c.opt.Pool, pdf)
	s0 := c.opt.Spread * c.scaleOr1()
	out := make([]float64, c.k())
	for a := range out {
		st := c.stat(a)
		v := (st.V + nu*pv + s0*s0) / (st.W + nu)
		out[a] = c.opt.Exploration * math.Sqrt(v/st.W)
	}
	return out
}

// plausible is how many of its standard errors (plausibleSEs) an arm's
// mean may lie below the greedy arm's for the log floor to pull it.
const plausible = 2

// plausibleSEs returns each arm's standard error for the log floor's
// plausibility test, or nil while no arm has two rewards: its own and the
// pooled variance as in sds, but the pool weighted by all its degrees of
// freedom (not capped at Pool) and thompson's weak prior (Spread) by one
// reward's, not narrowed. The prior stays a floor under a context whose
// rewards happen to be equal; it no longer outweighs the data. Why: sds
// counts the prior, a guess that one reward varies by a third of the
// largest, as one reward against at most Pool + W - 1 of data, which keeps
// it several times the measured variance where rewards vary by a few
// percent. In a real demo run (reads twice a phase: rewards within 6 to 10%
// of their mean) every window then stayed "plausible" after 3 pulls, and
// the floor pulled the 1, 2, 4 and 8 ms windows (10 to 20% below the
// leader) in the run's last half; replayed with this test, only 1 ms was
// forced (docs/performance.md, "Does learning beat the default window on
// the demo?"). Sampling keeps sds.
func (p pooled) plausibleSEs(c *core) []float64 {
	pv, pdf := p.pool(c)
	if pdf <= 0 {
		return nil
	}
	s0 := c.opt.Spread * c.scaleOr1()
	out := make([]float64, c.k())
	for a := range out {
		st := c.stat(a)
		out[a] = math.Sqrt((st.V + pdf*pv + s0*s0) / (st.W + pdf) / st.W)
	}
	return out
}

// forced returns the arms one of which is chosen without sampling, or
// nil: thompson's (prior, arms without data, warm-up), then the log
// floor: among the arms with fewer than LogFloor*ln(t/k) rewards that may
// still be the best (estimate within plausible standard errors of the
// greedy arm's), those with the fewest rewards. One is drawn uniformly.
func (p pooled) forced(c *core) []int {
	if f := (thompson{}).forced(c); len(f) > 0 {
		return f
	}
	if c.opt.LogFloor <= 0 || c.t < 1 || c.prior != nil {
		return nil
	}
	need := c.opt.LogFloor * math.Log(float64(c.t)/float64(c.k()))
	var se []float64
	top := c.stat(c.best()).Q
	return fewest(c, func(a int) bool {
		st := c.stat(a)
		if float64(st.N) >= need {
			return false
		}
		if se == nil {
			if se = p.plausibleSEs(c); se == nil {
				se = p.sds(c)
				for i := range se {
					se[i] /= c.opt.Exploration
				}
			}
		}
		return st.Q+plausible*se[a] >= top
	})
}

func (p pooled) choose(c *core, rng *rand.Rand) (int, bool) {
	if a := drawFrom(p.forced(c), rng); a >= 0 {
		return a, a != c.best()
	}
	sd := p.sds(c)
	b, bv := 0, math.Inf(-1)
	for a := range c.arms {
		v := c.stat(a).Q + sd[a]*rng.NormFloat64()
		if v > bv {
			b, bv = a, v
		}
	}
	return b, b != c.best()
}

func (p pooled) prob(c *core, arm int) float64 { return p.probs(c)[arm] }

func (p pooled) probs(c *core) []float64 {
	if f := p.forced(c); len(f) > 0 {
		return uniformOn(c.k(), f)
	}
	return gaussProbs(c, p.sds(c))
}
