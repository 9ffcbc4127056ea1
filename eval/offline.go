package eval

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/bandit"
)

// Errors returned by the package.
var (
	// ErrNoData: an environment or a dataset has nothing to evaluate.
	ErrNoData = errors.New("eval: no data")
	// ErrConfig: a configuration value is out of range.
	ErrConfig = errors.New("eval: invalid configuration")
)

// Env is one offline bandit environment (Bez et al., FGCS 2020, V-B): a context (a
// scenario) whose arms each hold measured rewards; pulling an arm draws one
// of its measurements uniformly at random.
type Env struct {
	Key      string      // context name, e.g. a scenario
	Arms     []string    // arm labels, e.g. window durations
	Samples  [][]float64 // measured rewards per arm (non-empty)
	Means    []float64   // mean of each arm's samples
	Best     int         // arm with the highest mean (ties: lowest index)
	Horizon  int         // number of steps the measurements support (0: set by the caller)
	Features []float64   // context features for learning shared across contexts (optional)
	Group    string      // grouping label for summaries (e.g. the operation)
}

// NewEnv builds an environment and computes means and the best arm.
func NewEnv(key string, arms []string, samples [][]float64) (*Env, error) {
	if len(arms) == 0 || len(arms) != len(samples) {
		return nil, fmt.Errorf("%w: %s: %d arm labels for %d sample sets", ErrNoData, key, len(arms), len(samples))
	}
	e := &Env{Key: key, Arms: arms, Samples: samples, Means: make([]float64, len(arms))}
	for a, s := range samples {
		if len(s) == 0 {
			return nil, fmt.Errorf("%w: %s: arm %s has no measurements", ErrNoData, key, arms[a])
		}
		var sum float64
		for _, v := range s {
			sum += v
		}
		e.Means[a] = sum / float64(len(s))
		if e.Means[a] > e.Means[e.Best] {
			e.Best = a
		}
	}
	return e, nil
}

// Relative returns arm's mean over the best arm's (1 for the best arm).
func (e *Env) Relative(arm int) float64 {
	if e.Means[e.Best] <= 0 {
		return 1
	}
	return e.Means[arm] / e.Means[e.Best]
}

// Draw returns a random measurement of arm.
func (e *Env) Draw(arm int, rng *rand.Rand) float64 {
	s := e.Samples[arm]
	return s[rng.IntN(len(s))]
}

// Spec names a policy configuration under evaluation.
type Spec struct {
	Label   string         // shown in reports, e.g. "egreedy eps=0.15"
	Policy  string         // bandit registry name
	Options bandit.Options // options (zero: the policy's defaults)
	// Shared: in a shared evaluation, a context starts from the prior of its
	// Options.Neighbors nearest other contexts (see SimulateShared).
	Shared bool
}

// Config sets up a simulation.
type Config struct {
	Reps    int       // repetitions (papers: 100)
	Bin     int       // observations per bin (papers: 10)
	Steps   int       // steps per environment; 0: the environment's Horizon
	Seed    uint64    // base seed; each (environment, repetition) derives its own
	Workers int       // parallel workers; 0: 1
	Log     io.Writer // progress lines (nil: none)
}

func (c *Config) fill() error {
	if c.Reps == 0 {
		c.Reps = 100
	}
	if c.Bin == 0 {
		c.Bin = 10
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Reps < 0 || c.Bin < 0 || c.Steps < 0 {
		return fmt.Errorf("%w: reps %d, bin %d, steps %d must be positive", ErrConfig, c.Reps, c.Bin, c.Steps)
	}
	return nil
}

// Curve is the learning curve of one policy on one environment, averaged
// over repetitions: per bin, precision (share of choices of the best arm) and
// performance (mean of the chosen arm's mean over the best arm's mean).
type Curve struct {
	Env         string
	Spec        string
	Steps       int
	Bin         int
	Precision   []float64
	Performance []float64
}

// Bins is the number of bins.
func (c Curve) Bins() int { return len(c.Precision) }

// First and Last return the first and last bins' precision and performance.
func (c Curve) First() (prec, perf float64) { return c.Precision[0], c.Performance[0] }
func (c Curve) Last() (prec, perf float64) {
	n := len(c.Precision) - 1
	return c.Precision[n], c.Performance[n]
}

// Head returns precision and performance averaged over the first n steps
// (whole bins only; all bins if n exceeds the curve).
func (c Curve) Head(n int) (prec, perf float64) {
	b := max(1, min(n/c.Bin, len(c.Precision)))
	for i := range b {
		prec += c.Precision[i]
		perf += c.Performance[i]
	}
	return prec / float64(b), perf / float64(b)
}

// accum accumulates per-step sums over repetitions.
type accum struct {
	prec, perf []float64
	n          []float64
}

func newAccum(steps int) *accum {
	return &accum{prec: make([]float64, steps), perf: make([]float64, steps), n: make([]float64, steps)}
}

func (a *accum) add(step int, e *Env, arm int) {
	if arm == e.Best {
		a.prec[step]++
	}
	a.perf[step] += e.Relative(arm)
	a.n[step]++
}

func (a *accum) curve(env, spec string, bin int) Curve {
	steps := len(a.prec)
	c := Curve{Env: env, Spec: spec, Steps: steps, Bin: bin}
	for lo := 0; lo < steps; lo += bin {
		hi := min(lo+bin, steps)
		var p, f, n float64
		for i := lo; i < hi; i++ {
			p += a.prec[i]
			f += a.perf[i]
			n += a.n[i]
		}
		if n == 0 {
			n = 1
		}
		c.Precision = append(c.Precision, p/n)
		c.Performance = append(c.Performance, f/n)
	}
	return c
}

// rngFor derives the random stream of one (environment, repetition):
// independent of the policy, so policies face the same draws where their
// choices coincide, and of scheduling, so parallel runs are reproducible.
func rngFor(seed uint64, key string, rep int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(seed^h.Sum64(), uint64(rep)))
}

func (c Config) steps(e *Env) int {
	if c.Steps > 0 {
		return c.Steps
	}
	return e.Horizon
}

// Simulate runs spec on one environment cfg.Reps times for the
// environment's steps, each repetition from fresh estimates.
func Simulate(e *Env, spec Spec, cfg Config) (Curve, error) {
	if err := cfg.fill(); err != nil {
		return Curve{}, err
	}
	steps := cfg.steps(e)
	if steps <= 0 {
		return Curve{}, fmt.Errorf("%w: %s: no steps", ErrNoData, e.Key)
	}
	acc := newAccum(steps)
	for rep := range cfg.Reps {
		rng := rngFor(cfg.Seed, e.Key, rep)
		p, err := bandit.New(spec.Policy, len(e.Arms), spec.Options)
		if err != nil {
			return Curve{}, err
		}
		for t := range steps {
			a := choose(p, rng)
			acc.add(t, e, a)
			p.Update(a, e.Draw(a, rng))
		}
	}
	return acc.curve(e.Key, spec.Label, cfg.Bin), nil
}

// choose is Select without the probability when the policy offers it.
func choose(p bandit.Policy, rng *rand.Rand) int {
	if c, ok := p.(bandit.Chooser); ok {
		a, _ := c.Choose(rng)
		return a
	}
	return p.Select(rng).Arm
}

// Job is one (spec, environment) simulation of a batch.
type job struct{ s, e int }

// SimulateAll runs every spec on every environment in parallel
// (cfg.Workers) and returns curves indexed [spec][env]. Results do not
// depend on the number of workers. Progress goes to cfg.Log.
func SimulateAll(ctx context.Context, envs []*Env, specs []Spec, cfg Config) ([][]Curve, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	out := make([][]Curve, len(specs))
	for i := range out {
		out[i] = make([]Curve, len(envs))
	}
	jobs := make([]job, 0, len(specs)*len(envs))
	for s := range specs {
		for e := range envs {
			jobs = append(jobs, job{s, e})
		}
	}
	err := parallel(ctx, len(jobs), cfg, "simulations", func(i int) error {
		j := jobs[i]
		c, err := Simulate(envs[j.e], specs[j.s], cfg)
		out[j.s][j.e] = c
		return err
	})
	return out, err
}

// parallel runs fn(0..n-1) on cfg.Workers goroutines, reporting progress.
func parallel(ctx context.Context, n int, cfg Config, what string, fn func(i int) error) error {
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, cfg.Workers)
	start := time.Now()
	stop := make(chan struct{})
	if cfg.Log != nil {
		go func() {
			t := time.NewTicker(2 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					d := done.Load()
					fmt.Fprintf(cfg.Log, "  %d/%d %s (%.0f%%, %s)\n", d, n, what, 100*float64(d)/float64(n), time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "  %d/%d %s done in %s\n", done.Load(), n, what, time.Since(start).Round(time.Millisecond))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// SimulateInterleaved is Bez et al., FGCS 2020, Fig. 5: one contextual bandit over all
// environments; at every step one environment is drawn uniformly at random
// and its bandit instance acts. Each environment's curve is binned by its
// own observation count, up to its steps; a repetition lasts until every
// environment has had its steps.
func SimulateInterleaved(envs []*Env, spec Spec, cfg Config) ([]Curve, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if len(envs) == 0 {
		return nil, fmt.Errorf("%w: no environments", ErrNoData)
	}
	accs := make([]*accum, len(envs))
	total := 0
	for i, e := range envs {
		accs[i] = newAccum(cfg.steps(e))
		total += cfg.steps(e)
	}
	for rep := range cfg.Reps {
		rng := rngFor(cfg.Seed, "interleaved", rep)
		c, err := bandit.NewContextual(spec.Policy, len(envs[0].Arms), spec.Options)
		if err != nil {
			return nil, err
		}
		seen := make([]int, len(envs))
		left := len(envs) // environments that have not had all their steps
		for draw := 0; left > 0 && draw < 10*total; draw++ {
			i := rng.IntN(len(envs))
			e := envs[i]
			p := c.Policy(e.Key)
			a := choose(p, rng)
			if seen[i] < len(accs[i].prec) {
				accs[i].add(seen[i], e, a)
				if seen[i] == len(accs[i].prec)-1 {
					left--
				}
			}
			seen[i]++
			p.Update(a, e.Draw(a, rng))
		}
	}
	out := make([]Curve, len(envs))
	for i, e := range envs {
		out[i] = accs[i].curve(e.Key, spec.Label, cfg.Bin)
	}
	return out, nil
}

// SimulateShared evaluates learning shared across contexts, "a new context
// when its neighbours are known": in every repetition, every environment is
// first learned on its own for its steps (the cold curves); then each
// environment is learned again from scratch, starting from the prior its
// spec.Options.Neighbors nearest other environments (by Features) give
// after their cold runs (the warm curves; its own cold run is excluded).
// Curves are indexed like envs.
func SimulateShared(ctx context.Context, envs []*Env, spec Spec, cfg Config) (cold, warm []Curve, err error) {
	if err := cfg.fill(); err != nil {
		return nil, nil, err
	}
	if len(envs) == 0 {
		return nil, nil, fmt.Errorf("%w: no environments", ErrNoData)
	}
	k := len(envs[0].Arms)
	// Per-repetition curves, averaged in repetition order afterwards so the
	// result does not depend on scheduling.
	coldRep := make([][]Curve, cfg.Reps)
	warmRep := make([][]Curve, cfg.Reps)
	err = parallel(ctx, cfg.Reps, cfg, spec.Label+" repetitions", func(rep int) error {
		c, err := bandit.NewContextual(spec.Policy, k, spec.Options)
		if err != nil {
			return err
		}
		for _, e := range envs {
			acc := newAccum(cfg.steps(e))
			rng := rngFor(cfg.Seed, e.Key, rep)
			p := c.Policy(e.Key)
			c.PolicyWith(e.Key, e.Features) // record features only
			for t := range cfg.steps(e) {
				a := choose(p, rng)
				acc.add(t, e, a)
				p.Update(a, e.Draw(a, rng))
			}
			coldRep[rep] = append(coldRep[rep], acc.curve(e.Key, spec.Label, cfg.Bin))
		}
		for _, e := range envs {
			acc := newAccum(cfg.steps(e))
			rng := rngFor(cfg.Seed^0x5eed, e.Key, rep)
			p, err := bandit.New(spec.Policy, k, spec.Options)
			if err != nil {
				return err
			}
			if err := c.Share(p, e.Features, e.Key); err != nil {
				return err
			}
			for t := range cfg.steps(e) {
				a := choose(p, rng)
				acc.add(t, e, a)
				p.Update(a, e.Draw(a, rng))
			}
			warmRep[rep] = append(warmRep[rep], acc.curve(e.Key, spec.Label+" shared", cfg.Bin))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return meanCurves(coldRep), meanCurves(warmRep), nil
}

// meanCurves averages per-repetition curves [rep][env] into [env].
func meanCurves(reps [][]Curve) []Curve {
	out := make([]Curve, len(reps[0]))
	for i, c := range reps[0] {
		out[i] = Curve{Env: c.Env, Spec: c.Spec, Steps: c.Steps, Bin: c.Bin,
			Precision: make([]float64, len(c.Precision)), Performance: make([]float64, len(c.Performance))}
		for _, r := range reps {
			for b := range r[i].Precision {
				out[i].Precision[b] += r[i].Precision[b] / float64(len(reps))
				out[i].Performance[b] += r[i].Performance[b] / float64(len(reps))
			}
		}
	}
	return out
}

// Stats summarises values: minimum, median, mean, maximum (NaN when empty).
type Stats struct{ Min, Median, Mean, Max float64 }

// Summarise computes Stats of values.
func Summarise(values []float64) Stats {
	if len(values) == 0 {
		n := math.NaN()
		return Stats{n, n, n, n}
	}
	v := slices.Clone(values)
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Stats{Min: v[0], Median: med, Mean: sum / float64(len(v)), Max: v[len(v)-1]}
}
