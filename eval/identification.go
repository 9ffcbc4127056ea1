package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Identification is a yardstick for a file's last bins, independent of any
// policy: on each pattern, sequential halving (Karnin, Koren and Somekh
// 2013, a fixed-budget best-arm identification, optimal up to a log factor)
// spends every pull before the last bin on finding the best arm, earning
// nothing, and is scored by the mean relative value of the arm it names.
// It is not a strict bound (an adaptive policy can name a better arm on
// some patterns), but a pattern whose reference is well below the
// worst-pattern target is one where even a policy that did nothing but
// explore would likely miss it: the pattern's noise, more than the
// policy, sets its last bin.
type Identification struct {
	Budget   int     // pulls spent on identification (steps minus the last bin)
	Worst    float64 // the lowest pattern's reference
	WorstEnv string  // that pattern
	Below    int     // patterns whose reference is below TargetWorst
	// ByEnv is every pattern's reference, by key.
	ByEnv map[string]float64
}

// IdentificationOf computes the reference of envs with cfg's steps (or
// each env's horizon), bin, repetitions and seed.
func IdentificationOf(envs []*Env, cfg Config) (Identification, error) {
	if err := cfg.fill(); err != nil {
		return Identification{}, err
	}
	if len(envs) == 0 {
		return Identification{}, fmt.Errorf("%w: no environments", ErrNoData)
	}
	b := Identification{Worst: math.Inf(1), ByEnv: map[string]float64{}}
	for _, e := range envs {
		budget := cfg.steps(e) - cfg.Bin
		if budget < len(e.Arms) {
			return Identification{}, fmt.Errorf("%w: %s: %d pulls before the last bin for %d arms", ErrNoData, e.Key, budget, len(e.Arms))
		}
		b.Budget = max(b.Budget, budget)
		var sum float64
		for rep := range cfg.Reps {
			rng := rngFor(cfg.Seed^0x6964656e74, e.Key, rep) // "ident": a stream apart from the policies'
			sum += e.Relative(SequentialHalving(e, budget, rng))
		}
		v := sum / float64(cfg.Reps)
		b.ByEnv[e.Key] = v
		if v < b.Worst {
			b.Worst, b.WorstEnv = v, e.Key
		}
		if v < TargetWorst {
			b.Below++
		}
	}
	return b, nil
}

// SequentialHalving returns the arm that sequential halving names after
// budget pulls of e: ceil(log2 k) rounds, each pulling every arm still in
// equally (budget / (arms in × rounds) times), then keeping the better half
// by mean (ties: lower index). Pure: the draws come from rng.
func SequentialHalving(e *Env, budget int, rng *rand.Rand) int {
	k := len(e.Arms)
	in := make([]int, k)
	for a := range in {
		in[a] = a
	}
	sum := make([]float64, k)
	n := make([]float64, k)
	rounds := int(math.Ceil(math.Log2(float64(k))))
	for r := 0; r < rounds && len(in) > 1; r++ {
		per := max(1, budget/(len(in)*rounds))
		for _, a := range in {
			for range per {
				sum[a] += e.Draw(a, rng)
				n[a]++
			}
		}
		sort.SliceStable(in, func(i, j int) bool { return sum[in[i]]/n[in[i]] > sum[in[j]]/n[in[j]] })
		in = in[:(len(in)+1)/2]
	}
	return in[0]
}

// IdentificationNote explains the identification reference for reports.
func IdentificationNote(steps, bin int) string {
	return fmt.Sprintf("On every pattern, sequential halving (a fixed-budget best-arm identification, optimal up to a log factor) spends all %d pulls before the last bin finding the best arm, "+
		"earning nothing, and is scored by the relative value of the arm it names, averaged over the repetitions. It is a yardstick, not a strict bound: "+
		"where it stays below the worst-pattern target (%.2f), a policy that only explored would likely miss the target too, and the pattern's noise sets the last bin more than the policy.", steps-bin, TargetWorst)
}
