package bandit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Errors returned by the package; match them with errors.Is.
var (
	// ErrUnknownPolicy: New was given a name not in Names().
	ErrUnknownPolicy = errors.New("bandit: unknown policy")
	// ErrBadOptions: an option is out of range or two estimators were asked for.
	ErrBadOptions = errors.New("bandit: invalid options")
	// ErrState: serialised state is malformed, of another version, or inconsistent.
	ErrState = errors.New("bandit: bad state")
	// ErrPrior: a prior cannot be applied (wrong length, bad values, policy already has data).
	ErrPrior = errors.New("bandit: cannot apply prior")
)

// Choice is the outcome of Policy.Select.
type Choice struct {
	Arm     int     // chosen arm, 0 <= Arm < Arms()
	Prob    float64 // probability with which the policy chose Arm given its state (propensity)
	Explore bool    // the choice came from an exploration draw rather than from the greedy arm
}

// Policy is one k-armed bandit. Implementations are pure state machines:
// randomness comes only from the rng passed to Select, there is no clock
// and no goroutine. A Policy is not safe for concurrent use.
type Policy interface {
	// Name is the registered name the policy was built with.
	Name() string
	// Arms is the number of arms k.
	Arms() int
	// Select chooses an arm; it does not change estimates.
	Select(rng *rand.Rand) Choice
	// Update records reward for arm. It panics if arm is out of range.
	Update(arm int, reward float64)
	// Best is the greedy arm by current estimates (ties: lowest index;
	// epsilon-greedy's Select breaks ties at random).
	// Before any reward it is the arm a prior ranks first (arm 0 without prior).
	Best() int
	// Values returns a copy of the value estimates Q(a).
	Values() []float64
	// Counts returns a copy of the number of rewards recorded per arm.
	Counts() []int64
}

// Distribution is implemented by every policy of this package: Probs
// returns P(Select chooses a) for every arm a in the current state (it sums
// to 1). For Thompson sampling it is computed by numerical integration.
type Distribution interface {
	Probs() []float64
}

// Chooser is implemented by every policy of this package: Choose is Select
// without computing the probability (which costs a numerical integration for
// Thompson sampling), for simulations that do not need it. It consumes the
// same random numbers and returns the same arm as Select would.
type Chooser interface {
	Choose(rng *rand.Rand) (arm int, explore bool)
}

// Options tune a policy. Zero values mean the default of the named policy
// (see Names). At most one of StepSize, Discount and Window may be set: they
// choose how rewards are averaged into estimates; none of them means the
// papers' incremental sample average (Bez et al., FGCS 2020, Eq. 1).
type Options struct {
	// Epsilon is the exploration probability of egreedy (default 0.15) and
	// the initial one of egreedy-decay (default 1).
	Epsilon float64 `json:"epsilon,omitempty"`
	// StepSize > 0: constant step-size estimates Q += StepSize*(R-Q), which
	// track a drifting workload (default 0.1 for egreedy-step).
	StepSize float64 `json:"step_size,omitempty"`
	// Decay: egreedy-decay uses epsilon_t = Epsilon/(1+Decay*t) after t
	// rewards (default 0.1).
	Decay float64 `json:"decay,omitempty"`
	// Discount in (0,1): every reward multiplies the weight of all past
	// rewards (of every arm) by Discount (default 0.99 for ucb1-discounted).
	Discount float64 `json:"discount,omitempty"`
	// Window > 0: each arm's estimate is the mean of its last Window
	// rewards (default 100 for egreedy-window).
	Window int `json:"window,omitempty"`
	// Floor in [0,1): exploration floor for every policy: with probability
	// Floor the arm is drawn uniformly, whatever the policy would do.
	Floor float64 `json:"floor,omitempty"`
	// Temperature of softmax, relative to the largest reward seen (default 0.05).
	Temperature float64 `json:"temperature,omitempty"`
	// Exploration scales the exploration term of ucb1 (c in
	// Q/scale + c*sqrt(2 ln n / n_a); default 0.5) and the posterior width
	// of thompson (default 1).
	Exploration float64 `json:"exploration,omitempty"`
	// Spread is thompson's prior standard deviation of one reward, relative
	// to the largest reward seen (default 0.3); it keeps an arm with one
	// unlucky early reward from being abandoned.
	Spread float64 `json:"spread,omitempty"`
	// Neighbors > 0 lets Contextual.PolicyWith seed a new context with a
	// prior from the Neighbors nearest known contexts (default 0: no sharing).
	Neighbors int `json:"neighbors,omitempty"`
	// PriorWeight is how many pseudo-rewards per arm a prior is worth (default 2).
	PriorWeight float64 `json:"prior_weight,omitempty"`
	// Warmup > 0: thompson first pulls every arm Warmup times (the arm with
	// the fewest rewards, lowest index first) before it samples posteriors,
	// so that no arm is judged on one or two rewards (default 0; 3 for
	// thompson-warm). A pending prior (SetPrior) stands in for the warm-up
	// until every arm has a reward; the warm-up then completes.
	Warmup int `json:"warmup,omitempty"`
	// TryFavourites: a context that Contextual gives a prior first pulls,
	// once each, the prior's favourite and the best arm of each of its
	// Neighbors nearest contexts (Contextual.Share, SetTry).
	TryFavourites bool `json:"try_favourites,omitempty"`
	// Bins > 0: each arm keeps its rewards in a histogram of at most Bins
	// bins, the two closest merged when a reward would make one too many
	// (thompson-np and thompson-np-fav only, default 16; exact until an arm
	// has Bins distinct rewards).
	Bins int `json:"bins,omitempty"`
	// Pool is how many degrees of freedom the context's pooled reward
	// variance is worth in each arm's variance (thompson-pool and
	// thompson-pool-fav only, default 4; see pooled).
	Pool float64 `json:"pool,omitempty"`
	// LogFloor > 0: every arm that may be the best is pulled whenever it
	// has fewer than LogFloor*ln(t/k) rewards, t the rewards recorded and k
	// the arms (thompson-pool and thompson-pool-fav only, default 2; see
	// pooled).
	LogFloor float64 `json:"log_floor,omitempty"`
}

// thompsonPool sets thompson-pool's defaults.
func thompsonPool(o *Options) {
	def(&o.Exploration, 0.35)
	def(&o.Spread, 0.3)
	def(&o.Pool, 4)
	def(&o.LogFloor, 2)
	if o.Warmup == 0 {
		o.Warmup = 3
	}
}

// thompsonWarm sets thompson-warm's defaults.
func thompsonWarm(o *Options) {
	def(&o.Exploration, 0.35)
	def(&o.Spread, 0.3)
	if o.Warmup == 0 {
		o.Warmup = 3
	}
}

// thompsonNP sets thompson-np's defaults: Exploration 0.5, thompson-warm's
// warm-up of 3 rewards per arm, a histogram of 16 bins per arm. Exploration
// was picked on MareNostrum 4 alone (adaptio eval generalise, 100
// repetitions): 0.25 to 0.7 all meet the targets there, within 0.003 of
// each other, and 0.5 has the largest sum of the three measures.
func thompsonNP(o *Options) {
	def(&o.Exploration, 0.5)
	if o.Warmup == 0 {
		o.Warmup = 3
	}
	if o.Bins == 0 {
		o.Bins = 16
	}
}

type factory struct {
	doc      string
	defaults func(*Options)
	sel      func() selector
}

// registry is the explicit list of policies, built in one place.
var registry = map[string]factory{
	"egreedy": {"the papers' epsilon-greedy: estimates start at zero, sample averages (Eq. 1), Epsilon 0.15",
		func(o *Options) { def(&o.Epsilon, 0.15) }, func() selector { return egreedy{} }},
	"greedy": {"always the greedy arm (egreedy with epsilon 0)",
		func(o *Options) {}, func() selector { return egreedy{greedy: true} }},
	"egreedy-decay": {"epsilon-greedy with epsilon_t = Epsilon/(1+Decay*t), Epsilon 1, Decay 0.1",
		func(o *Options) { def(&o.Epsilon, 1); def(&o.Decay, 0.1) }, func() selector { return egreedy{decay: true} }},
	"egreedy-step": {"epsilon-greedy with constant step size 0.1 (drifting workloads)",
		func(o *Options) { def(&o.Epsilon, 0.15); def(&o.StepSize, 0.1) }, func() selector { return egreedy{} }},
	"egreedy-window": {"epsilon-greedy over each arm's last 100 rewards (drifting workloads)",
		func(o *Options) {
			def(&o.Epsilon, 0.15)
			if o.Window == 0 {
				o.Window = 100
			}
		}, func() selector { return egreedy{} }},
	"ucb1": {"UCB1 on rewards scaled by the largest seen, Exploration 0.5",
		func(o *Options) { def(&o.Exploration, 0.5) }, func() selector { return ucb{} }},
	"ucb1-discounted": {"discounted UCB1 (Discount 0.99) for drifting workloads",
		func(o *Options) { def(&o.Exploration, 0.5); def(&o.Discount, 0.99) }, func() selector { return ucb{} }},
	"thompson": {"Gaussian Thompson sampling, posterior width scaled by Exploration (1)",
		func(o *Options) { def(&o.Exploration, 1); def(&o.Spread, 0.3) }, func() selector { return thompson{} }},
	"thompson-warm": {"Gaussian Thompson sampling narrowed to Exploration 0.35 after a warm-up of Warmup (3) rewards per arm",
		thompsonWarm, func() selector { return thompson{} }},
	"thompson-warm-fav": {"thompson-warm whose context, when Contextual shares a prior, first pulls once each the prior's favourite and each of its nearest contexts' best arms (TryFavourites)",
		func(o *Options) { thompsonWarm(o); o.TryFavourites = true }, func() selector { return thompson{} }},
	"thompson-pool": {"thompson-warm whose arms' variances are shrunk toward the context's pooled variance (worth Pool (4) degrees of freedom) and whose arms, while they may be the best, are each pulled at least LogFloor (2) times ln(rewards/arms): no arm is locked out for good",
		thompsonPool, func() selector { return pooled{} }},
	"thompson-pool-fav": {"thompson-pool whose context, when Contextual shares a prior, first pulls once each the prior's favourite and each of its nearest contexts' best arms (TryFavourites)",
		func(o *Options) { thompsonPool(o); o.TryFavourites = true }, func() selector { return pooled{} }},
	"softmax": {"Boltzmann exploration, Temperature 0.05 of the largest reward seen",
		func(o *Options) { def(&o.Temperature, 0.05) }, func() selector { return softmax{} }},
	"thompson-np": {"non-parametric Thompson sampling: each arm's mean drawn as a Dirichlet re-weighting of its rewards (a histogram of Bins (16) bins) and of the largest reward seen, distance from the mean scaled by Exploration (0.5), after a warm-up of Warmup (3) rewards per arm",
		thompsonNP, func() selector { return dirichlet{} }},
	"thompson-np-fav": {"thompson-np whose context, when Contextual shares a prior, first pulls once each the prior's favourite and each of its nearest contexts' best arms (TryFavourites)",
		func(o *Options) { thompsonNP(o); o.TryFavourites = true }, func() selector { return dirichlet{} }},
}

func def(v *float64, d float64) {
	if *v == 0 {
		*v = d
	}
}

// Names lists the registered policy names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Describe returns a one-line description of a registered policy ("" if unknown).
func Describe(name string) string { return registry[name].doc }

// New returns the named policy with arms arms, all estimates zero.
func New(name string, arms int, opt Options) (Policy, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownPolicy, name, Names())
	}
	if arms < 1 {
		return nil, fmt.Errorf("%w: %d arms, need at least 1", ErrBadOptions, arms)
	}
	f.defaults(&opt)
	def(&opt.PriorWeight, 2)
	if err := opt.validate(); err != nil {
		return nil, err
	}
	// A policy that samples each arm's reward histogram (Options.Bins)
	// keeps every reward: StepSize, Discount and Window are refused.
	_, hist := f.sel().(dirichlet)
	switch {
	case hist && (opt.StepSize > 0 || opt.Discount > 0 || opt.Window > 0):
		return nil, fmt.Errorf("%w: %s samples every reward of an arm: no step size, discount or window", ErrBadOptions, name)
	case !hist && opt.Bins != 0:
		return nil, fmt.Errorf("%w: bins are for thompson-np and thompson-np-fav, not %s", ErrBadOptions, name)
	}
	if _, pool := f.sel().(pooled); !pool && (opt.Pool != 0 || opt.LogFloor != 0) {
		return nil, fmt.Errorf("%w: pool and log floor are for thompson-pool and thompson-pool-fav, not %s", ErrBadOptions, name)
	}
	return &policy{name: name, sel: f.sel(), core: core{opt: opt, arms: make([]armState, arms)}}, nil
}

func (o Options) validate() error {
	bad := func(what string, v any) error { return fmt.Errorf("%w: %s %v", ErrBadOptions, what, v) }
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, v := range []float64{o.Epsilon, o.StepSize, o.Decay, o.Discount, o.Floor, o.Temperature, o.Exploration, o.PriorWeight, o.Spread, o.Pool, o.LogFloor} {
		if !finite(v) || v < 0 {
			return bad("non-finite or negative value", v)
		}
	}
	switch {
	case o.Epsilon > 1:
		return bad("epsilon must be in [0,1], got", o.Epsilon)
	case o.StepSize > 1:
		return bad("step size must be in (0,1], got", o.StepSize)
	case o.Discount >= 1:
		return bad("discount must be in (0,1), got", o.Discount)
	case o.Window < 0:
		return bad("window must be >= 0, got", o.Window)
	case o.Floor >= 1:
		return bad("floor must be in [0,1), got", o.Floor)
	case o.Neighbors < 0:
		return bad("neighbors must be >= 0, got", o.Neighbors)
	case o.Warmup < 0:
		return bad("warmup must be >= 0, got", o.Warmup)
	case o.Bins < 0 || o.Bins == 1:
		return bad("bins must be 0 or >= 2, got", o.Bins)
	}
	n := 0
	for _, set := range []bool{o.StepSize > 0, o.Discount > 0, o.Window > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w: at most one of step size, discount and window may be set", ErrBadOptions)
	}
	return nil
}

// armState is one arm's statistics.
type armState struct {
	N int64     `json:"n"`           // rewards recorded
	W float64   `json:"w"`           // weight of the estimate (N, or discounted, plus prior pseudo-rewards)
	Q float64   `json:"q"`           // value estimate
	V float64   `json:"v"`           // weighted sum of squared deviations from Q
	R []float64 `json:"r,omitempty"` // last Window rewards (sliding window only)
	H []bin     `json:"h,omitempty"` // histogram of the rewards (Options.Bins > 0 only)
}

// core holds the state every policy shares.
type core struct {
	opt    Options
	arms   []armState
	t      int64     // rewards recorded over all arms
	scale  float64   // largest |reward| seen
	prior  []float64 // pending relative prior (applied at the first reward)
	priorW float64
	try    []int // arms to pull once each before the policy's own rule (SetTry)
}

func (c *core) k() int { return len(c.arms) }

// scaleOr1 is the reward scale used to make policies unit-free.
func (c *core) scaleOr1() float64 {
	if c.scale > 0 {
		return c.scale
	}
	return 1
}

func (c *core) best() int {
	if c.t == 0 && c.prior != nil {
		return argmax(c.prior)
	}
	b, bq := 0, c.stat(0).Q
	for a := 1; a < len(c.arms); a++ {
		if q := c.stat(a).Q; q > bq {
			b, bq = a, q
		}
	}
	return b
}

// priorGrace is how many rewards per arm a prior is followed before every
// arm still without a reward of its own is tried (forced).
const priorGrace = 3

// forced returns the arm a prior must let be tried now. A prior (SetPrior)
// orders the first pulls, but once the policy has recorded priorGrace
// rewards per arm, each arm still without a reward of its own is pulled
// once, the one the prior ranks highest first: a wrong prior costs at most
// one pull per arm, and never locks an arm out (a prior arm's pseudo-
// rewards have no spread, so otherwise an index or a posterior sample may
// never reach the leader's).
func (c *core) forced() (int, bool) {
	for _, a := range c.try {
		if c.arms[a].N == 0 {
			return a, true
		}
	}
	if c.prior == nil {
		return 0, false
	}
	if c.t < priorGrace*int64(len(c.arms)) {
		return 0, false
	}
	best := -1
	for a, st := range c.arms {
		if st.N == 0 && (best < 0 || c.prior[a] > c.prior[best]) {
			best = a
		}
	}
	return best, best >= 0
}

// bestSet returns every arm tied for best (the prior's when there is no
// reward yet), in index order; best is its first.
func (c *core) bestSet() []int {
	val := func(a int) float64 { return c.stat(a).Q }
	if c.t == 0 && c.prior != nil {
		val = func(a int) float64 { return c.prior[a] }
	}
	top := val(c.best())
	var out []int
	for a := range c.arms {
		if val(a) == top {
			out = append(out, a)
		}
	}
	return out
}

// stat returns arm a's statistics as the selectors see them: its own or,
// for an arm without rewards while a prior is set, the prior scaled to the
// rewards of the arms that have some (the ratio of their estimates' sum to
// their priors' sum), worth priorW pseudo-rewards with no spread.
func (c *core) stat(a int) armState {
	st := c.arms[a]
	if st.N > 0 || c.prior == nil || c.t == 0 {
		return st
	}
	var q, p float64
	for b, o := range c.arms {
		if o.N > 0 {
			q += o.Q
			p += c.prior[b]
		}
	}
	if p <= 0 {
		return st
	}
	return armState{Q: c.prior[a] * q / p, W: c.priorW}
}

func argmax(v []float64) int {
	b := 0
	for i := range v {
		if v[i] > v[b] {
			b = i
		}
	}
	return b
}

func (c *core) update(arm int, r float64) {
	if arm < 0 || arm >= len(c.arms) {
		panic(fmt.Sprintf("bandit: Update of arm %d out of range [0,%d)", arm, len(c.arms)))
	}
	c.t++
	if a := math.Abs(r); a > c.scale {
		c.scale = a
	}
	s := &c.arms[arm]
	s.N++
	if c.opt.Bins > 0 {
		s.H = addToHistogram(s.H, r, c.opt.Bins)
	}
	if c.prior != nil && !slices.ContainsFunc(c.arms, func(a armState) bool { return a.N == 0 }) {
		c.prior, c.priorW = nil, 0 // every arm has its own data now
	}
	if c.try != nil && !slices.ContainsFunc(c.try, func(a int) bool { return c.arms[a].N == 0 }) {
		c.try = nil // every arm to try has been tried
	}
	switch o := c.opt; {
	case o.Window > 0:
		s.R = append(s.R, r)
		if len(s.R) > o.Window {
			s.R = slices.Delete(s.R, 0, len(s.R)-o.Window)
		}
		var m, v float64
		for i, x := range s.R {
			d := x - m
			m += d / float64(i+1)
			v += d * (x - m)
		}
		s.Q, s.V, s.W = m, v, float64(len(s.R))
	case o.Discount > 0:
		for b := range c.arms {
			c.arms[b].W *= o.Discount
			c.arms[b].V *= o.Discount
		}
		s.W++
		d := r - s.Q
		s.Q += d / s.W
		s.V += d * (r - s.Q)
	case o.StepSize > 0:
		s.W++
		d := r - s.Q
		s.Q += o.StepSize * d
		s.V += d * (r - s.Q)
	default: // Bez et al., FGCS 2020, Eq. 1: Q <- Q + (R - Q)/N
		s.W++
		d := r - s.Q
		s.Q += d / s.W
		s.V += d * (r - s.Q)
	}
}

// selector is the part that differs between policies: how an arm is drawn.
type selector interface {
	// choose draws an arm (before the exploration floor).
	choose(c *core, rng *rand.Rand) (arm int, explore bool)
	// prob is P(choose returns arm) in the current state.
	prob(c *core, arm int) float64
}

// allProbs is implemented by a selector that computes every arm's
// probability at once more cheaply than arm by arm.
type allProbs interface {
	probs(c *core) []float64
}

type policy struct {
	name string
	sel  selector
	core
}

var (
	_ Policy       = (*policy)(nil)
	_ Distribution = (*policy)(nil)
	_ Chooser      = (*policy)(nil)
)

func (p *policy) Name() string { return p.name }
func (p *policy) Arms() int    { return len(p.arms) }
func (p *policy) Best() int    { return p.best() }

func (p *policy) Update(arm int, reward float64) { p.update(arm, reward) }

func (p *policy) Values() []float64 {
	out := make([]float64, len(p.arms))
	for i := range p.arms {
		out[i] = p.stat(i).Q
	}
	return out
}

func (p *policy) Counts() []int64 {
	out := make([]int64, len(p.arms))
	for i, a := range p.arms {
		out[i] = a.N
	}
	return out
}

func (p *policy) Select(rng *rand.Rand) Choice {
	if a, ok := p.forced(); ok {
		return Choice{Arm: a, Prob: 1, Explore: true}
	}
	k := float64(len(p.arms))
	f := p.opt.Floor
	if f > 0 && rng.Float64() < f {
		a := rng.IntN(len(p.arms))
		return Choice{Arm: a, Prob: f/k + (1-f)*p.sel.prob(&p.core, a), Explore: true}
	}
	a, ex := p.sel.choose(&p.core, rng)
	return Choice{Arm: a, Prob: f/k + (1-f)*p.sel.prob(&p.core, a), Explore: ex}
}

func (p *policy) Choose(rng *rand.Rand) (arm int, explore bool) {
	if a, ok := p.forced(); ok {
		return a, true
	}
	k := len(p.arms)
	if f := p.opt.Floor; f > 0 && rng.Float64() < f {
		return rng.IntN(k), true
	}
	return p.sel.choose(&p.core, rng)
}

func (p *policy) Probs() []float64 {
	k := float64(len(p.arms))
	f := p.opt.Floor
	out := make([]float64, len(p.arms))
	if a, ok := p.forced(); ok {
		out[a] = 1
		return out
	}
	prob := func(a int) float64 { return p.sel.prob(&p.core, a) }
	if ap, ok := p.sel.(allProbs); ok {
		all := ap.probs(&p.core)
		prob = func(a int) float64 { return all[a] }
	}
	for a := range out {
		out[a] = f/k + (1-f)*prob(a)
	}
	return out
}

// SetPrior gives a policy that has recorded no reward a relative prior: rel[a]
// is arm a's expected reward relative to the others (any positive scale, e.g.
// neighbours' estimates divided by their best; it is normalised to a maximum
// of 1, and an all-zero rel carries no information and clears the prior).
// Until the first reward the greedy arm is argmax rel. Afterwards an arm
// without rewards of its own is estimated at rel[a] times the scale the arms
// with rewards show (sum of their estimates over sum of their rel), worth
// weight pseudo-rewards (weight <= 0: Options.PriorWeight); an arm's own
// rewards replace the prior entirely. Once the policy has three rewards per
// arm, every arm still without one is pulled once (the prior's order
// first), so a wrong prior costs at most one pull per arm and cannot lock
// an arm out, while a right one keeps the first pulls on the arms it favours. Values reports these estimates; Counts only real rewards.
func SetPrior(p Policy, rel []float64, weight float64) error {
	q, ok := p.(*policy)
	if !ok {
		return fmt.Errorf("%w: policy %T is not of this package", ErrPrior, p)
	}
	if q.t != 0 {
		return fmt.Errorf("%w: policy has already recorded %d rewards", ErrPrior, q.t)
	}
	if weight <= 0 {
		weight = q.opt.PriorWeight
	}
	return q.setPrior(rel, weight)
}

func (q *policy) setPrior(rel []float64, weight float64) error {
	if len(rel) != len(q.arms) {
		return fmt.Errorf("%w: %d values for %d arms", ErrPrior, len(rel), len(q.arms))
	}
	for _, v := range rel {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: value %v not finite and non-negative", ErrPrior, v)
		}
	}
	if math.IsNaN(weight) || math.IsInf(weight, 0) || weight <= 0 {
		return fmt.Errorf("%w: weight %v", ErrPrior, weight)
	}
	top := slices.Max(rel)
	if top <= 0 {
		q.prior, q.priorW = nil, 0 // no information
		return nil
	}
	q.prior, q.priorW = make([]float64, len(rel)), weight
	for a, v := range rel {
		q.prior[a] = v / top
	}
	return nil
}

// SetTry makes a policy that has recorded no reward pull each of arms once,
// in order, before its own rule chooses (Select reports these pulls as
// exploration with probability 1). Contextual.Share uses it for
// Options.TryFavourites: when the nearest contexts disagree on the best arm,
// each of their favourites gets one reward of its own at once, where a
// relative prior alone would rarely let any but the first be tried. An
// empty arms clears the list.
func SetTry(p Policy, arms []int) error {
	q, ok := p.(*policy)
	if !ok {
		return fmt.Errorf("%w: policy %T is not of this package", ErrPrior, p)
	}
	if q.t != 0 {
		return fmt.Errorf("%w: policy has already recorded %d rewards", ErrPrior, q.t)
	}
	return q.setTry(arms)
}

func (q *policy) setTry(arms []int) error {
	for i, a := range arms {
		if a < 0 || a >= len(q.arms) || slices.Contains(arms[:i], a) {
			return fmt.Errorf("%w: arms to try %v for %d arms", ErrPrior, arms, len(q.arms))
		}
	}
	q.try = nil
	if len(arms) > 0 {
		q.try = slices.Clone(arms)
	}
	return nil
}

// OptionsOf returns the options a policy of this package runs with, defaults
// filled in (the zero Options for other implementations).
func OptionsOf(p Policy) Options {
	if q, ok := p.(*policy); ok {
		return q.opt
	}
	return Options{}
}
