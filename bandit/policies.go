package bandit

import (
	"math"
	"math/rand/v2"
)

// egreedy is epsilon-greedy (Bez et al., FGCS 2020, Algorithm 1 lines 14-18): with
// probability epsilon a uniformly random arm, otherwise the greedy arm.
type egreedy struct {
	greedy bool // epsilon 0
	decay  bool // epsilon_t = Epsilon/(1+Decay*t)
}

func (e egreedy) eps(c *core) float64 {
	switch {
	case e.greedy:
		return 0
	case e.decay:
		return c.opt.Epsilon / (1 + c.opt.Decay*float64(c.t))
	}
	return c.opt.Epsilon
}

// choose breaks ties between greedy arms at random (the random number is
// drawn only when there is a tie), so the arms' order does not decide
// which one a cold start tries first.
func (e egreedy) choose(c *core, rng *rand.Rand) (int, bool) {
	if eps := e.eps(c); eps > 0 && rng.Float64() < eps {
		return rng.IntN(c.k()), true
	}
	if ties := c.bestSet(); len(ties) > 1 {
		return ties[rng.IntN(len(ties))], false
	}
	return c.best(), false
}

func (e egreedy) prob(c *core, arm int) float64 {
	eps := e.eps(c)
	p := eps / float64(c.k())
	ties := c.bestSet()
	for _, b := range ties {
		if b == arm {
			p += (1 - eps) / float64(len(ties))
		}
	}
	return p
}

// ucb is UCB1 (Auer et al. 2002) on rewards divided by the largest reward
// seen, so it is unit-free: arms without data first (one of them drawn
// uniformly at random, so that the arms' order does not decide which),
// then argmax Q/scale + c*sqrt(2 ln n / n_a), n the total weight,
// deterministically.
type ucb struct{}

// untried returns the arms without data, in index order (none while a
// prior orders the first pull).
func (ucb) untried(c *core) []int {
	if c.t == 0 && c.prior != nil {
		return nil
	}
	var out []int
	for a := range c.arms {
		if c.stat(a).W <= 0 {
			out = append(out, a)
		}
	}
	return out
}

func (u ucb) pick(c *core) int {
	if c.t == 0 && c.prior != nil {
		return c.best()
	}
	var n float64
	for a := range c.arms {
		n += c.stat(a).W
	}
	s := c.scaleOr1()
	b, bv := 0, math.Inf(-1)
	for a := range c.arms {
		st := c.stat(a)
		v := st.Q/s + c.opt.Exploration*math.Sqrt(2*math.Log(math.Max(n, 1))/st.W)
		if v > bv {
			b, bv = a, v
		}
	}
	return b
}

func (u ucb) choose(c *core, rng *rand.Rand) (int, bool) {
	a := drawFrom(u.untried(c), rng)
	if a < 0 {
		a = u.pick(c)
	}
	return a, a != c.best()
}

func (u ucb) prob(c *core, arm int) float64 {
	if set := u.untried(c); len(set) > 0 {
		return uniformOn(c.k(), set)[arm]
	}
	if arm == u.pick(c) {
		return 1
	}
	return 0
}

// drawFrom returns one of set drawn uniformly with rng (drawing only when
// there is a choice), or -1 for an empty set.
func drawFrom(set []int, rng *rand.Rand) int {
	switch len(set) {
	case 0:
		return -1
	case 1:
		return set[0]
	}
	return set[rng.IntN(len(set))]
}

// uniformOn returns the probabilities of k arms when one of set is drawn
// uniformly.
func uniformOn(k int, set []int) []float64 {
	out := make([]float64, k)
	for _, a := range set {
		out[a] = 1 / float64(len(set))
	}
	return out
}

// thompson is Gaussian Thompson sampling: arm a's mean is believed
// N(Q_a, sigma_a^2/W_a), sigma_a^2 = (V_a + s0^2)/(W_a + 1) with s0 = Spread*scale
// a weak prior variance, the width scaled by Options.Exploration. Arms without
// data are tried first, then arms with fewer than Options.Warmup rewards
// (fewest first); among arms equally placed, one drawn uniformly at random,
// so that no order of the arms (a file's columns, a list of windows)
// changes what is learnt.
//
// Why a warm-up: with the width narrowed (Exploration < 1, which the
// offline evaluation needs to settle on the best of close windows within a
// scenario's horizon), one low first reward of an arm whose rewards are
// bimodal (a TWINS window with some seconds at a plateau) puts its mean
// several narrowed widths below the others, and it is never drawn again.
// Under an unknown variance the posterior of a mean after n rewards is a
// Student t with n-1 degrees of freedom (infinite variance below n = 4): a
// Gaussian of the sample variance understates the uncertainty most for the
// first few rewards. thompson-warm does not sample before every arm has 3
// (2 to 5 tried offline, within noise of each other elsewhere: 3 is the
// smallest that kept pattern A above 0.99 with every seed tried).
type thompson struct{}

func (thompson) sd(c *core, a int) float64 {
	st := c.stat(a)
	s0 := c.opt.Spread * c.scaleOr1()
	v := (st.V + s0*s0) / (st.W + 1)
	return c.opt.Exploration * math.Sqrt(v/st.W)
}

// forced returns the arms one of which is chosen without sampling, or
// nil: the prior's best before data, else the arms without data, else the
// arms still in their warm-up with the fewest rewards. The caller draws
// one uniformly (drawFrom); each has probability 1/len (uniformOn).
func (thompson) forced(c *core) []int {
	if c.t == 0 && c.prior != nil {
		return []int{c.best()}
	}
	var out []int
	for a := range c.arms {
		if c.stat(a).W <= 0 {
			out = append(out, a)
		}
	}
	if len(out) > 0 {
		return out
	}
	if w := int64(c.opt.Warmup); w > 0 && c.prior == nil {
		return fewest(c, func(a int) bool { return c.arms[a].N < w })
	}
	return nil
}

// fewest returns the arms with the fewest rewards among those ok accepts,
// in index order.
func fewest(c *core, ok func(a int) bool) []int {
	var out []int
	for a, st := range c.arms {
		if !ok(a) {
			continue
		}
		switch {
		case len(out) == 0 || st.N < c.arms[out[0]].N:
			out = append(out[:0], a)
		case st.N == c.arms[out[0]].N:
			out = append(out, a)
		}
	}
	return out
}

func (t thompson) choose(c *core, rng *rand.Rand) (int, bool) {
	if a := drawFrom(t.forced(c), rng); a >= 0 {
		return a, a != c.best()
	}
	b, bv := 0, math.Inf(-1)
	for a := range c.arms {
		v := c.stat(a).Q + t.sd(c, a)*rng.NormFloat64()
		if v > bv {
			b, bv = a, v
		}
	}
	return b, b != c.best()
}

func (t thompson) prob(c *core, arm int) float64 { return t.probs(c)[arm] }

// probs is every arm's P(theta_a > theta_b for all b != a) (gaussProbs),
// or the forced arms' uniform draw.
func (t thompson) probs(c *core) []float64 {
	if f := t.forced(c); len(f) > 0 {
		return uniformOn(c.k(), f)
	}
	sd := make([]float64, c.k())
	for a := range sd {
		sd[a] = t.sd(c, a)
	}
	return gaussProbs(c, sd)
}

// gaussProbs returns, for each arm, the probability that its draw from
// N(Q_a, sd[a]^2) is the largest (gaussBest).
func gaussProbs(c *core, sd []float64) []float64 {
	mu := make([]float64, c.k())
	for a := range mu {
		mu[a] = c.stat(a).Q
	}
	out := make([]float64, len(mu))
	for a := range out {
		out[a] = gaussBest(mu, sd, a)
	}
	return out
}

// gaussBest is P(theta_arm > theta_b for all b != arm) for independent
// theta_b ~ N(mu[b], sd[b]^2): int phi(z) prod_b Phi((mu_a + sd_a z -
// mu_b)/sd_b) dz by the trapezoid rule over z in [-6.5, 6.5] with step 1/8
// (accurate to about 1e-3 unless an arm's posterior is far narrower than
// arm's).
func gaussBest(mu, sd []float64, arm int) float64 {
	const lo, hi, step = -6.5, 6.5, 0.125
	// Arms that cannot beat arm over the whole range are irrelevant (Phi = 1);
	// an arm that surely beats it makes the probability 0.
	var others []int
	for b := range mu {
		if b == arm {
			continue
		}
		if sd[b] == 0 || sd[arm] == 0 {
			// Degenerate widths cannot occur (s0 > 0), but stay total.
			if mu[b] > mu[arm] {
				return 0
			}
			continue
		}
		if (mu[arm]+sd[arm]*hi-mu[b])/sd[b] < -9 {
			return 0
		}
		if (mu[arm]+sd[arm]*lo-mu[b])/sd[b] > 9 {
			continue
		}
		others = append(others, b)
	}
	if len(others) == 0 {
		return 1
	}
	var sum float64
	for z := lo; z <= hi+1e-9; z += step {
		v := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		x := mu[arm] + sd[arm]*z
		for _, b := range others {
			v *= 0.5 * math.Erfc(-(x-mu[b])/(sd[b]*math.Sqrt2))
			if v == 0 {
				break
			}
		}
		sum += v
	}
	p := sum * step
	return math.Min(1, math.Max(0, p))
}

// softmax is Boltzmann exploration: P(a) proportional to
// exp(Q_a / (Temperature*scale)); arms without data are tried first (one
// drawn at random), as zero estimates would never be explored at low
// temperature.
type softmax struct{}

func (softmax) weights(c *core) []float64 {
	if f := (thompson{}).forced(c); len(f) > 0 {
		return uniformOn(c.k(), f)
	}
	w := make([]float64, c.k())
	tau := c.opt.Temperature * c.scaleOr1()
	m := math.Inf(-1)
	q := make([]float64, len(w))
	for a := range q {
		q[a] = c.stat(a).Q
		m = math.Max(m, q[a])
	}
	var sum float64
	for a := range q {
		w[a] = math.Exp((q[a] - m) / tau)
		sum += w[a]
	}
	for a := range w {
		w[a] /= sum
	}
	return w
}

func (s softmax) choose(c *core, rng *rand.Rand) (int, bool) {
	w := s.weights(c)
	u := rng.Float64()
	a := 0
	for ; a < len(w)-1; a++ {
		if u < w[a] {
			break
		}
		u -= w[a]
	}
	return a, a != c.best()
}

func (s softmax) prob(c *core, arm int) float64 { return s.weights(c)[arm] }
