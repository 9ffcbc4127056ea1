package eval

import (
	"bytes"
	"context"
	"encoding/json"
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
//
// A decision with a plan gives each direction of requests its own window
// (the plan's, for the context that direction was expected to take, with
// its own probability): each direction whose I/O nodes earned a credited
// reward under it is then a sample, and Share is the part of the round's
// credited rewards it holds (reads and writes in one round: two samples
// whose shares add up to 1).
type Sample struct {
	Round   uint64
	Context string
	Action  time.Duration
	Prob    float64
	Reward  float64
	Credits int     // I/O nodes whose reward under Action the next round credited
	Share   float64 // part of the round's credited rewards (0: 1, the whole round)
	// Pulls is how many rewards the Council credited for the sample: 1
	// when its round credited each context and window once (the default,
	// Decision.Credit "round"), Credits when it credited each node's
	// report (Config.Credit node, and logs written before Decision.Credit).
	Pulls int
}

// weight is s's share of its round.
func (s Sample) weight() float64 {
	if s.Share == 0 {
		return 1
	}
	return s.Share
}

// ReadSamples turns a Council decision log (one council.Decision per line)
// into samples. Each credited reward of a round is paired with the window
// the decision before gave its I/O node: the plan's window for the node's
// direction, with the plan's context and probability, else (no plan, or
// none for that direction) the decision's window, context and
// probability. A reward earned under another window (a node that had not
// applied the decision) is left out, and a round whose decision has no
// context (nobody voted: the window in force was kept) or no propensity
// gives no sample.
func ReadSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	var prev *council.Decision
	opened := map[string]council.PlanEntry{}
	err := eachLogLine(r, ErrBadLog, func(line int, d *council.Decision) error {
		if d.Prob < 0 || d.Prob > 1 || math.IsNaN(d.Prob) {
			return fmt.Errorf("%w: decision log line %d: probability %v outside [0, 1]", ErrBadLog, line, d.Prob)
		}
		for _, e := range d.Plan {
			if e.Prob < 0 || e.Prob > 1 || math.IsNaN(e.Prob) {
				return fmt.Errorf("%w: decision log line %d: plan probability %v outside [0, 1]", ErrBadLog, line, e.Prob)
			}
		}
		inheritHeld(d, opened)
		if prev != nil && d.Round == prev.Round+1 {
			out = appendRound(out, prev, d)
		}
		prev = d
		return nil
	})
	return out, err
}

// inheritHeld gives each held plan entry of d (a direction's window kept
// while its context's pull is open, logged with probability 1) the
// probability of the draw that opened the hold, the last entry for its
// direction that was not held, when that entry had the same context and
// window: the phase ran under one draw, and the rounds of a held phase
// are chosen with that draw's probability. A target that would have
// chosen another window for the phase is then weighed against the
// opening draw, not found unsupported in every held round. opened holds
// the last drawn entry per direction.
func inheritHeld(d *council.Decision, opened map[string]council.PlanEntry) {
	for i, e := range d.Plan {
		if !e.Held {
			opened[e.Op] = e
			continue
		}
		if o, ok := opened[e.Op]; ok && o.Context == e.Context && o.Window == e.Window && o.Prob > 0 {
			d.Plan[i].Prob = o.Prob
			if d.Context == e.Context && d.Window == e.Window {
				d.Prob = o.Prob
			}
		}
	}
}

// appendRound appends to out the samples of decision d, whose rewards the
// next round's reports next carry.
func appendRound(out []Sample, d, next *council.Decision) []Sample {
	if d.Context == "" {
		return out // nobody voted: the window in force was kept, not chosen
	}
	// One sample per (context, window, probability) the nodes ran under,
	// in the order they first appear.
	var round []Sample
	credits := 0
	for _, nr := range next.Nodes {
		if !nr.Credited {
			continue
		}
		ctx, w, prob := d.Context, d.Window, d.Prob
		for _, e := range d.Plan {
			if e.Op == nr.Op {
				ctx, w, prob = e.Context, e.Window, e.Prob
			}
		}
		if ctx == "" || prob <= 0 || nr.Window != w {
			continue
		}
		credits++
		i := slices.IndexFunc(round, func(s Sample) bool { return s.Context == ctx && s.Action == w && s.Prob == prob })
		if i < 0 {
			round = append(round, Sample{Round: d.Round, Context: ctx, Action: w, Prob: prob})
			i = len(round) - 1
		}
		round[i].Reward += nr.Reward
		round[i].Credits++
	}
	for _, s := range round {
		s.Reward /= float64(s.Credits)
		s.Pulls = s.Credits
		if next.Credit == council.CreditRound || next.Credit == council.CreditPhase {
			s.Pulls = 1
		}
		s.Share = float64(s.Credits) / float64(credits)
		out = append(out, s)
	}
	return out
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
// rounds before (see replay.learn), as many times as the Council credited
// it (Sample.Pulls: once, or once per I/O node with Config.Credit node).
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
	probs []float64   // static targets: the distribution, 1 on the window
	seen  rewardMeans // learning targets: the rounds replayed so far
}

func (t Target) start(rng *rand.Rand) *replay {
	r := &replay{t: t, rng: rng, probs: make([]float64, len(sched.Windows)), seen: rewardMeans{}}
	if t.Learning() {
		r.bands, _ = bandit.NewContextual(t.policy, len(sched.Windows), bandit.Options{}) // validated by LearningTarget
	}
	for i, w := range sched.Windows {
		if w == t.window {
			r.probs[i] = 1 // a static target's distribution, in every context
		}
	}
	return r
}

// distribution is the probability the target gives each of sched.Windows
// in ctx, in its current state.
func (r *replay) distribution(ctx string) []float64 {
	if !r.t.Learning() {
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
	for range max(s.Pulls, 1) {
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
// (IPS), self-normalised IPS and the doubly robust estimator (DR: a
// reward model, the mean logged reward of each context and window,
// cross-fitted over blocks of rounds, corrected by the importance-weighted
// logged rewards), each with a percentile bootstrap interval over blocks
// of consecutive rounds (each resample refits DR's model).
//
// Support. IPS and SNIPS only see the target's choices the logging
// policy made with a propensity the log shows: where the target puts
// probability on a (context, window) the log never or almost never chose,
// its value is not identified. Per (context, window), the target's mass
// (the sum over the context's rounds of the probability it gives the
// window) is compared with the part of it the log's importance weights
// account for (the sum of the weights of the rounds that chose the
// window, which estimates the supported part of that mass); the
// shortfall is the unsupported mass. Every point values it at its
// context's mean logged reward (DR through its model, whose unseen cells
// are the context's mean), and every interval is a partial-identification
// (Manski) bound: the unsupported mass earns anything within the rewards
// the log shows for its context, the lower end of the interval is the
// bootstrap quantile of the estimate with the unsupported mass at the
// context's smallest logged reward, the upper end with it at the largest.
// Where the log supports every choice of the target, they are the usual
// percentile intervals. An interval always holds its point. Where
// nothing matched or MaxUnsupported or more of the mass is unsupported,
// the estimate is refused (Refused says why; the intervals are NaN):
// the bounds would then be the log's reward range, not evidence.
type Estimate struct {
	Target   string
	Learning bool // the target is a learning policy
	Samples  int  // logged samples (a round's reads and writes under a plan are two)
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
	// Unsupported is the part of the target's mass, over all rounds,
	// that the log does not support (0 to 1; see Estimate's doc), and
	// Support the same per context, in the order the contexts first
	// appear in the log.
	Unsupported float64
	Support     []ContextSupport
	// Block is the bootstrap's block length, in rounds.
	Block int
	// Refused says why the log cannot estimate the target (no matched
	// round, or MaxUnsupported or more of its mass unsupported); then the
	// three intervals are NaN. Empty when estimated.
	Refused string
}

// ContextSupport is the support of a target's choices in one context.
type ContextSupport struct {
	Context string
	Rounds  float64 // the context's rounds (a round's reads and writes count for their shares)
	// Unsupported is the part of the target's mass in the context the
	// log does not support: 0 where the importance weights of the
	// context's rounds account for all of it, 1 where the log never
	// chose a window the target chooses.
	Unsupported float64
	// Min and Max are the smallest and largest logged rewards of the
	// context, between which the unsupported mass is bounded.
	Min, Max float64
}

// EvaluateOptions tune Evaluate.
type EvaluateOptions struct {
	Level     float64 // confidence level of the intervals (default 0.95)
	Resamples int     // bootstrap resamples (default 1000 for a static target, 200 for a learning one)
	// Block is the length, in rounds, of the blocks of consecutive rounds
	// the bootstrap resamples (0: BlockLength of the log's rounds; 1:
	// rounds drawn independently).
	Block    int
	Workers  int       // replays run in parallel (results do not depend on it; 0: 1)
	Progress io.Writer // progress lines every 2 s (nil: none)
}

// Evaluate estimates t's value from samples, with level (e.g. 0.95)
// intervals from resamples bootstrap resamples drawn with rng.
func Evaluate(samples []Sample, t Target, level float64, resamples int, rng *rand.Rand) (Estimate, error) {
	return EvaluateWith(samples, t, EvaluateOptions{Level: level, Resamples: resamples}, rng)
}

// EvaluateWith is Evaluate with options: each bootstrap resample draws
// blocks of consecutive rounds (a circular block bootstrap), replays them
// (a learning target in the rounds' order, from its initial state) and
// refits the doubly robust estimator's reward model.
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
	if !(level > 0 && level < 1) || resamples < 10 || o.Block < 0 {
		return Estimate{}, fmt.Errorf("%w: confidence level %v, %d resamples and block %d, want (0, 1), >= 10 and >= 0", ErrBadLog, level, resamples, o.Block)
	}
	units := roundsOf(samples)
	block := o.Block
	if block == 0 {
		block = BlockLength(len(units) - 1)
	}
	block = min(block, len(units)-1)
	e := Estimate{Target: t.Name, Learning: t.Learning(), Samples: len(samples), Block: block}
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
		idx := blockResample(units, block, len(samples), rng)
		if t.Learning() {
			slices.Sort(idx) // a learning target replays the rounds in their order
		}
		jobs[i] = idx
	}
	cells := numberCells(samples)
	out := make([]estimates, len(jobs))
	if err := parallel(context.Background(), len(jobs), Config{Workers: max(1, o.Workers), Log: o.Progress}, t.Name+" replays", func(i int) error {
		out[i] = estimate(samples, cells, jobs[i], t.start(rand.New(rand.NewPCG(seed, uint64(i)))))
		return nil
	}); err != nil {
		return Estimate{}, err
	}
	var v estimates
	v.unsupported, v.rounds = make([]float64, cells.nctx), make([]float64, cells.nctx)
	for _, x := range out[:replays] {
		v.ips += x.ips / float64(replays)
		v.snips += x.snips / float64(replays)
		v.dr += x.dr / float64(replays)
		v.matched += x.matched / float64(replays)
		v.ess += x.ess / float64(replays)
		for c := range x.unsupported {
			v.unsupported[c] += x.unsupported[c] / float64(replays)
			v.rounds[c] += x.rounds[c] / float64(replays)
		}
	}
	e.Matched, e.ESS = v.matched, v.ess
	var all, none float64
	for c, name := range cells.names {
		all += v.rounds[c]
		none += v.unsupported[c]
		cs := ContextSupport{Context: name, Rounds: v.rounds[c], Min: cells.rmin[c], Max: cells.rmax[c]}
		if v.rounds[c] > 0 {
			cs.Unsupported = min(1, v.unsupported[c]/v.rounds[c])
		}
		e.Support = append(e.Support, cs)
	}
	if all > 0 {
		e.Unsupported = min(1, none/all)
	}
	if why := refusal(e); why != "" {
		e.Refused = why
		nan := Interval{Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
		e.IPS, e.SNIPS, e.DR = nan, nan, nan
		return e, nil
	}
	var bil, bih, bsl, bsh, bdl, bdh []float64
	for _, b := range out[replays:] {
		bil, bih = append(bil, b.ipsLo), append(bih, b.ipsHi)
		bsl, bsh = append(bsl, b.snipsLo), append(bsh, b.snipsHi)
		bdl, bdh = append(bdl, b.drLo), append(bdh, b.drHi)
	}
	e.IPS = bounds(v.ips, bil, bih, level)
	e.SNIPS = bounds(v.snips, bsl, bsh, level)
	e.DR = bounds(v.dr, bdl, bdh, level)
	return e, nil
}

// MaxUnsupported is the largest part of a target's mass a log may leave
// unsupported for Evaluate to estimate it: beyond it (and where nothing
// matched) the estimate is refused, since most of it would be the bounds'
// or the model's assumption, not the log's evidence.
const MaxUnsupported = 0.5

// refusal is why e cannot be estimated from its log, or "".
func refusal(e Estimate) string {
	switch {
	case e.ESS < 1 || e.Matched < 1:
		return fmt.Sprintf("no support: the log never chose what %s chooses (matched %.0f rounds, ESS %.1f); run it, or log under a policy that explores (egreedy)", e.Target, e.Matched, e.ESS)
	case e.Unsupported >= MaxUnsupported:
		return fmt.Sprintf("too little support: the log does not support %.0f%% of what %s chooses (at most %.0f%% is estimated); run it, or log under a policy that explores more (egreedy)", 100*e.Unsupported, e.Target, 100*MaxUnsupported)
	}
	return ""
}

// BlockLength is the bootstrap's default block length for a log of n
// rounds: the cube root of n, rounded up (16 rounds for 4,000), the order
// of the block length that minimises the error of a block bootstrap's
// variance estimate (Hall, Horowitz and Jing 1995). Consecutive rounds
// are seconds of one run: the same phase, the same state of the data
// servers' caches, the same learner; resampling rounds independently
// treats them as independent and makes the intervals too narrow.
func BlockLength(n int) int {
	return max(1, int(math.Ceil(math.Cbrt(float64(n))-1e-9)))
}

// roundsOf splits samples into rounds: runs of consecutive samples with
// the same Round (a round's reads and writes under a plan are two). It
// returns the index of each round's first sample, and len(samples).
func roundsOf(samples []Sample) []int {
	var starts []int
	for i, s := range samples {
		if i == 0 || s.Round != samples[i-1].Round {
			starts = append(starts, i)
		}
	}
	return append(starts, len(samples))
}

// blockResample draws a circular block bootstrap resample of the rounds
// units delimits (as roundsOf returns them): blocks of block consecutive
// rounds, each starting at a round drawn at random and wrapping around
// the log's end, until as many rounds as the log's are drawn. It returns
// the samples of the drawn rounds (about n of them).
func blockResample(units []int, block, n int, rng *rand.Rand) []int {
	rounds := len(units) - 1
	idx := make([]int, 0, n+2*block)
	for drawn := 0; drawn < rounds; {
		start := rng.IntN(rounds)
		for k := 0; k < block && drawn < rounds; k++ {
			u := (start + k) % rounds
			for i := units[u]; i < units[u+1]; i++ {
				idx = append(idx, i)
			}
			drawn++
		}
	}
	return idx
}

// drFolds is how many blocks of consecutive rounds the doubly robust
// estimator's reward model is cross-fitted over.
const drFolds = 5

// drCells numbers the samples' contexts, once per log, for the doubly
// robust estimator's reward model and the support bounds.
type drCells struct {
	ctx        []int // per sample: its context's number
	win        []int // per sample: its window's index in sched.Windows (-1: none of them)
	nctx       int
	names      []string  // per context: its name
	rmin, rmax []float64 // per context: its smallest and largest logged reward
}

// numberCells numbers the contexts of samples in their order of appearance.
func numberCells(samples []Sample) *drCells {
	c := &drCells{ctx: make([]int, len(samples)), win: make([]int, len(samples))}
	number := map[string]int{}
	for i, s := range samples {
		k, ok := number[s.Context]
		if !ok {
			k = len(number)
			number[s.Context] = k
			c.names = append(c.names, s.Context)
			c.rmin, c.rmax = append(c.rmin, s.Reward), append(c.rmax, s.Reward)
		}
		c.ctx[i], c.win[i] = k, slices.Index(sched.Windows, s.Action)
		c.rmin[k], c.rmax[k] = min(c.rmin[k], s.Reward), max(c.rmax[k], s.Reward)
	}
	c.nctx = len(number)
	return c
}

// drModel is the doubly robust estimator's reward model: the mean logged
// reward of each (context, window), else of the context, else of every
// round. It is cross-fitted: the log falls into drFolds blocks of
// consecutive rounds, and the model a round is corrected against is
// fitted on the other blocks only, so that the round's own reward never
// enters it (fitted on every round, a (context, window) mean absorbs the
// rounds' own rewards and cancels much of the correction, leaving the
// model's answer).
type drModel struct {
	c *drCells
	// pred holds the predictions for a context and a block, one per
	// window: pred[(ctx*drFolds+block)*len(sched.Windows)+window].
	pred []float64
}

// foldMeans are one cell's means per block: while fitting, of the
// block's rounds; once fitted, of the other blocks' rounds.
type foldMeans [drFolds]meanOf

// fitModel fits the model on samples[idx] (every sample when idx is nil).
// Each bootstrap resample refits it, so that the intervals carry the
// model's own uncertainty, not only the spread of its corrections.
func fitModel(c *drCells, samples []Sample, idx []int) *drModel {
	k := len(sched.Windows)
	cell, ctx := make([]foldMeans, c.nctx*k), make([]foldMeans, c.nctx)
	var all foldMeans
	each(samples, idx, func(i int, s Sample) {
		f := fold(i, len(samples))
		add := func(fm *foldMeans) {
			fm[f].sum += s.Reward
			fm[f].n++
		}
		if c.win[i] >= 0 {
			add(&cell[c.ctx[i]*k+c.win[i]])
		}
		add(&ctx[c.ctx[i]])
		add(&all)
	})
	for j := range cell {
		cell[j].leaveOut()
	}
	for j := range ctx {
		ctx[j].leaveOut()
	}
	all.leaveOut()
	m := &drModel{c: c, pred: make([]float64, c.nctx*drFolds*k)}
	for x := range c.nctx {
		for f := range drFolds {
			for w := range k {
				for _, v := range []meanOf{cell[x*k+w][f], ctx[x][f], all[f]} {
					if v.n > 0 {
						m.pred[(x*drFolds+f)*k+w] = v.sum / float64(v.n)
						break
					}
				}
			}
		}
	}
	return m
}

// leaveOut turns the blocks' means into means of the other blocks.
func (fm *foldMeans) leaveOut() {
	var all meanOf
	for _, v := range fm {
		all.sum += v.sum
		all.n += v.n
	}
	for f, v := range fm {
		fm[f] = meanOf{sum: all.sum - v.sum, n: all.n - v.n}
	}
}

// fold is the block of the i-th of n samples.
func fold(i, n int) int {
	return i * drFolds / n
}

// predictions are the model's rewards of sched.Windows in the context of
// samples[i], fitted on the blocks other than i's (0 where the other
// blocks have no round).
func (m *drModel) predictions(i int) []float64 {
	k := len(sched.Windows)
	j := (m.c.ctx[i]*drFolds + fold(i, len(m.c.ctx))) * k
	return m.pred[j : j+k]
}

// each calls f with every sample of samples[idx] (every sample when idx
// is nil), in that order, and its index in samples.
func each(samples []Sample, idx []int, f func(i int, s Sample)) {
	if idx == nil {
		for i, s := range samples {
			f(i, s)
		}
		return
	}
	for _, i := range idx {
		f(i, samples[i])
	}
}

// learningReplays is how many replays of the whole log a learning
// target's point estimate averages.
const learningReplays = 16

// estimates are the three estimators' values over one replay, with the
// expected matched rounds, the importance weights' effective size, the
// support bounds of IPS and SNIPS, and per context the target's rounds
// and its mass without support (in rounds).
type estimates struct {
	ips, snips, dr, matched, ess   float64
	ipsLo, ipsHi, snipsLo, snipsHi float64
	drLo, drHi                     float64
	unsupported, rounds            []float64
}

// estimate replays samples[idx] (all samples when idx is nil), in that
// order, through r, with the doubly robust model fitted on the same
// samples. Each sample counts for its share of a round, so that the
// estimates are means per round.
//
// Support: per (context, window), the target's mass (the probability it
// gives the window, summed over the context's rounds) is compared with
// the sum of the importance weights of the rounds that chose the window,
// whose expectation is the part of that mass where the logging policy
// could choose the window; the shortfall, if any, is unsupported mass.
// IPS's bounds add it at the context's smallest and largest logged
// reward; SNIPS's scale the self-normalised mean to the supported mass
// and add the same.
func estimate(samples []Sample, c *drCells, idx []int, r *replay) estimates {
	q := fitModel(c, samples, idx)
	nw := len(sched.Windows)
	// By context and window: the target's mass, the importance weights of
	// the rounds that chose the window, and the mass times the model's
	// prediction (DR's value of that mass).
	mass, weight, model := make([]float64, c.nctx*nw), make([]float64, c.nctx*nw), make([]float64, c.nctx*nw)
	ctxSum, ctxN := make([]float64, c.nctx), make([]float64, c.nctx) // logged rewards by context
	e := estimates{unsupported: make([]float64, c.nctx), rounds: make([]float64, c.nctx)}
	var rounds, wsum, wsum2 float64
	each(samples, idx, func(i int, s Sample) {
		pi, qi := r.distribution(s.Context), q.predictions(i)
		share, x := s.weight(), c.ctx[i]
		var value float64
		for a, p := range pi {
			value += p * qi[a]
			mass[x*nw+a] += share * p
			model[x*nw+a] += share * p * qi[a]
		}
		var pa, qa, w float64 // the target's probability of the logged window, its model, the importance weight
		if a := c.win[i]; a >= 0 {
			pa, qa = pi[a], qi[a]
			w = share * pa / s.Prob
			weight[x*nw+a] += w
		}
		rounds += share
		e.rounds[x] += share
		ctxSum[x] += share * s.Reward
		ctxN[x] += share
		e.matched += share * pa
		e.ips += w * s.Reward
		wsum += w
		wsum2 += w * w
		e.dr += share*value + w*(s.Reward-qa)
		r.learn(s)
	})
	// Unsupported mass, per context, valued at the context's smallest,
	// mean and largest logged reward; DR's share of it valued by its model.
	var none, lo, mid, hi, drLo, drHi float64
	for x := range c.nctx {
		for a := range nw {
			j := x*nw + a
			u := max(0, mass[j]-weight[j])
			if u == 0 {
				continue
			}
			e.unsupported[x] += u
			fill := model[j] / mass[j] // the model's mean prediction of the cell
			drLo += u * (c.rmin[x] - fill)
			drHi += u * (c.rmax[x] - fill)
		}
		none += e.unsupported[x]
		lo += e.unsupported[x] * c.rmin[x]
		hi += e.unsupported[x] * c.rmax[x]
		if ctxN[x] > 0 {
			mid += e.unsupported[x] * ctxSum[x] / ctxN[x]
		}
	}
	if wsum > 0 {
		e.snips = e.ips / wsum
	}
	if wsum2 > 0 {
		e.ess = wsum * wsum / wsum2
	}
	supported := max(0, rounds-none)
	e.ipsLo, e.ipsHi = (e.ips+lo)/rounds, (e.ips+hi)/rounds
	e.snipsLo, e.snipsHi = (supported*e.snips+lo)/rounds, (supported*e.snips+hi)/rounds
	// The points value the unsupported mass at its context's mean logged
	// reward, inside the bounds.
	e.ips = (e.ips + mid) / rounds
	e.snips = (supported*e.snips + mid) / rounds
	e.drLo, e.drHi = (e.dr+drLo)/rounds, (e.dr+drHi)/rounds
	e.dr /= rounds
	return e
}

// bounds is the interval around v from the bootstrap distributions of a
// lower and an upper bound of the value: the lower quantile of the one,
// the upper quantile of the other (with equal bounds, the percentile
// bootstrap interval).
func bounds(v float64, lo, hi []float64, level float64) Interval {
	q := func(boot []float64, p float64, round func(float64) float64) float64 {
		b := slices.Clone(boot)
		slices.Sort(b)
		return b[int(round(p*float64(len(b)-1)))]
	}
	// The point is the estimate on the whole log: an interval that left it
	// out (a skewed bootstrap distribution) is stretched to hold it.
	return Interval{Value: v, Lo: min(v, q(lo, (1-level)/2, math.Floor)), Hi: max(v, q(hi, (1+level)/2, math.Ceil))}
}

// TrimCutLine returns a decision log without its last line when that
// line is not a whole JSON value (the log of a run killed while writing
// it), with a warning that says so; otherwise data unchanged and "". A
// broken line before the last is left for the readers to refuse.
func TrimCutLine(data []byte) ([]byte, string) {
	body := bytes.TrimRight(data, " \t\r\n")
	if len(body) == 0 {
		return data, ""
	}
	start := bytes.LastIndexByte(body, '\n') + 1
	last := body[start:]
	if json.Valid(last) {
		return data, ""
	}
	line := bytes.Count(body[:start], []byte("\n")) + 1
	return body[:start], fmt.Sprintf("decision log line %d is cut (%d bytes, not whole JSON: a run stopped while writing it): read up to line %d", line, len(last), line-1)
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
