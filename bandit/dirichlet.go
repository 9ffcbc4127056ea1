package bandit

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// bin is one bin of an arm's reward histogram: N rewards whose mean is M.
type bin struct {
	N float64 `json:"n"`
	M float64 `json:"m"`
}

// addToHistogram records reward r in h, kept sorted by mean and at most
// size bins long: r enters as a bin of its own, and when that makes one
// bin too many the two neighbouring bins whose means are relatively
// closest, (M[i+1]-M[i])/max(|M[i]|,|M[i+1]|), are merged into one with
// their total count and mean (the lowest such pair on a tie). Rewards far
// from the others, such as a rare high one, are the last to be merged;
// the histogram's mean stays the rewards' mean.
func addToHistogram(h []bin, r float64, size int) []bin {
	i, _ := slices.BinarySearchFunc(h, r, func(b bin, r float64) int {
		if b.M <= r {
			return -1 // a new reward goes after equal means: insertion is stable
		}
		return 1
	})
	h = slices.Insert(h, i, bin{N: 1, M: r})
	if len(h) <= size {
		return h
	}
	m, md := 0, math.Inf(1)
	for j := 0; j+1 < len(h); j++ {
		den := math.Max(math.Abs(h[j].M), math.Abs(h[j+1].M))
		d := 0.0
		if den > 0 {
			d = (h[j+1].M - h[j].M) / den
		}
		if d < md {
			m, md = j, d
		}
	}
	n := h[m].N + h[m+1].N
	h[m] = bin{N: n, M: h[m].M + (h[m+1].M-h[m].M)*h[m+1].N/n}
	return slices.Delete(h, m+1, m+2)
}

// checkHistogram reports whether h is a valid histogram of n rewards for a
// policy keeping at most size bins.
func checkHistogram(h []bin, n int64, size int) error {
	if len(h) > size {
		return fmt.Errorf("%d bins, at most %d kept", len(h), size)
	}
	var sum float64
	for i, b := range h {
		if math.IsNaN(b.M) || math.IsInf(b.M, 0) || !(b.N >= 1) || math.IsInf(b.N, 0) || b.N != math.Trunc(b.N) {
			return fmt.Errorf("bin %+v", b)
		}
		if i > 0 && b.M < h[i-1].M {
			return fmt.Errorf("bins not in increasing order of mean")
		}
		sum += b.N
	}
	if sum != float64(n) {
		return fmt.Errorf("bins count %v rewards, the arm %d", sum, n)
	}
	return nil
}

// dirichlet is non-parametric Thompson sampling (Riou and Honda 2020,
// "Bandit algorithms based on Thompson sampling for bounded reward
// distributions"; the Dirichlet sampling of Baudry, Saux and Maillard
// 2021): arm a's mean is believed to be a random re-weighting of its own
// rewards, sum_i w_i r_i + w_0 B with (w_0, w_1, ..., w_n) ~ Dirichlet(1,
// ..., 1), where B, the upper-bound pseudo-reward, is the largest |reward|
// the context has seen on any arm. No shape is assumed: an arm whose lead
// comes from a rare high reward keeps it in every sample in proportion to
// how often it occurred, where a Gaussian of the sample variance puts
// weight on means the rewards never support and drops such an arm after a
// few low draws; and the pseudo-reward keeps every arm's sample reaching
// the best reward seen with a probability that falls with the arm's pulls.
//
// Memory is bounded: each arm keeps its rewards in a histogram of at most
// Options.Bins bins (addToHistogram; exact until an arm has Bins distinct
// rewards). A bin of n rewards gets a Gamma(n) weight, which is the sum of
// n Dirichlet(1) weights, so the sample over merged bins is the sample of
// the rewards each replaced by its bin's mean. Weights are drawn as
// Gamma(1) (exponential) variables normalised by their sum.
//
// Options.Exploration scales the sample's distance from the arm's mean
// (theta = Q + Exploration*(sample - Q)), as it scales thompson's width.
// An arm without rewards of its own but with a prior (SetPrior) is
// sampled as PriorWeight pseudo-rewards at its prior estimate, one Gamma
// weight, plus the upper-bound pseudo-reward. Arms without data, the
// warm-up (Options.Warmup) and a pending prior before the first reward are
// handled as in thompson. Options.StepSize, Discount and Window are
// refused (the histogram is a sample of all rewards).
//
// Prob has no closed form: it is a Monte Carlo estimate over probDraws
// samples of every arm from a generator seeded by a hash of the state (so
// the same state always gives the same probabilities, and Select's rng is
// not consumed), with half a pseudo-count per arm so that no arm is
// reported impossible (every arm has a positive probability: its sample
// can reach the upper bound).
type dirichlet struct{}

// probDraws is the number of Monte Carlo samples behind Prob (standard
// error at most 0.011).
const probDraws = 2000

// bound is the upper-bound pseudo-reward.
func (dirichlet) bound(c *core) float64 { return c.scale }

// sample draws arm a's mean.
func (d dirichlet) sample(c *core, a int, rng *rand.Rand) float64 {
	st := c.arms[a]
	b := d.bound(c)
	w0 := rng.ExpFloat64()
	num, den := w0*b, w0
	q := st.Q
	if st.N == 0 {
		ps := c.stat(a) // the prior's estimate, worth priorW pseudo-rewards
		q = ps.Q
		w := gammaDraw(rng, ps.W)
		num += w * ps.Q
		den += w
	} else {
		for _, h := range st.H {
			w := gammaDraw(rng, h.N)
			num += w * h.M
			den += w
		}
	}
	return q + c.opt.Exploration*(num/den-q)
}

func (d dirichlet) choose(c *core, rng *rand.Rand) (int, bool) {
	if a := drawFrom((thompson{}).forced(c), rng); a >= 0 {
		return a, a != c.best()
	}
	return d.argmaxSample(c, rng), false
}

func (d dirichlet) argmaxSample(c *core, rng *rand.Rand) int {
	b, bv := 0, math.Inf(-1)
	for a := range c.arms {
		if v := d.sample(c, a, rng); v > bv {
			b, bv = a, v
		}
	}
	return b
}

func (d dirichlet) prob(c *core, arm int) float64 { return d.probs(c)[arm] }

// probs estimates P(choose returns a) for every arm (see dirichlet).
func (d dirichlet) probs(c *core) []float64 {
	if f := (thompson{}).forced(c); len(f) > 0 {
		return uniformOn(c.k(), f)
	}
	out := make([]float64, c.k())
	rng := rand.New(rand.NewPCG(c.stateHash(), 0xd1c1))
	for range probDraws {
		out[d.argmaxSample(c, rng)]++
	}
	const half = 0.5
	tot := probDraws + half*float64(len(out))
	for a := range out {
		out[a] = (out[a] + half) / tot
	}
	return out
}

// stateHash is an FNV-1a hash of everything that decides a policy's
// choices: its counts, estimates, histograms, scale and prior.
func (c *core) stateHash() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v float64) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
		h.Write(buf[:])
	}
	put(float64(c.t))
	put(c.scale)
	put(c.priorW)
	for _, p := range c.prior {
		put(p)
	}
	for _, a := range c.arms {
		put(float64(a.N))
		put(a.Q)
		put(float64(len(a.H)))
		for _, b := range a.H {
			put(b.N)
			put(b.M)
		}
	}
	return h.Sum64()
}

// gammaDraw draws from Gamma(shape, 1), shape > 0: the exponential for
// shape 1, otherwise Marsaglia and Tsang's method (2000), with shape < 1
// boosted by U^(1/shape).
func gammaDraw(rng *rand.Rand, shape float64) float64 {
	if shape == 1 {
		return rng.ExpFloat64()
	}
	if shape < 1 {
		return gammaDraw(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
