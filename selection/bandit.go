package selection

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// ErrConfig is returned for an invalid configuration.
var ErrConfig = errors.New("selection: invalid configuration")

// BanditConfig are the armed bandit's parameters; zero values are AGIOS's
// (the JLESC AGIOS selection report, its 2017 code).
type BanditConfig struct {
	Schedulers []string // the algorithms to choose among (at least 2)
	// PerformanceWindow is how many of a scheduler's last measurements
	// are kept (default 10).
	PerformanceWindow int
	// Validity is how long a measurement counts (default 360 s); a
	// scheduler left with none is untried again.
	Validity time.Duration
	// MinProbability is every scheduler's least probability (default
	// 0.03).
	MinProbability float64
}

func (c *BanditConfig) defaults() error {
	if c.PerformanceWindow == 0 {
		c.PerformanceWindow = 10
	}
	if c.Validity == 0 {
		c.Validity = 360 * time.Second
	}
	if c.MinProbability == 0 {
		c.MinProbability = 0.03
	}
	switch {
	case len(c.Schedulers) < 2:
		return fmt.Errorf("%w: %d schedulers, want at least 2", ErrConfig, len(c.Schedulers))
	case c.PerformanceWindow < 1 || c.Validity < 0:
		return fmt.Errorf("%w: performance window %d and validity %v, want >= 1 and >= 0", ErrConfig, c.PerformanceWindow, c.Validity)
	case c.MinProbability < 0 || c.MinProbability*float64(len(c.Schedulers)) > 1:
		return fmt.Errorf("%w: minimum probability %v for %d schedulers", ErrConfig, c.MinProbability, len(c.Schedulers))
	}
	for i, s := range c.Schedulers {
		if slices.Contains(c.Schedulers[:i], s) {
			return fmt.Errorf("%w: scheduler %q twice", ErrConfig, s)
		}
	}
	return nil
}

// measurement is one period's reward of a scheduler.
type measurement struct {
	at time.Duration
	bw float64
}

// Bandit is AGIOS's armed bandit over scheduling algorithms: each untried
// scheduler is tried once, in random order; then the schedulers are ranked
// by their mean reward over their last PerformanceWindow measurements
// younger than Validity, and one is drawn with probability, from the best
// to the worst of n, 100 x bw / sum(bw) + 3 x (n - rank - 1) percent, each
// at least MinProbability. A pure state machine: time and randomness come
// from the caller.
type Bandit struct {
	cfg  BanditConfig
	hist [][]measurement // per scheduler, oldest first
}

// NewBandit returns a bandit that has tried nothing.
func NewBandit(cfg BanditConfig) (*Bandit, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	cfg.Schedulers = slices.Clone(cfg.Schedulers)
	return &Bandit{cfg: cfg, hist: make([][]measurement, len(cfg.Schedulers))}, nil
}

// Schedulers lists the algorithms, in configuration order.
func (b *Bandit) Schedulers() []string { return slices.Clone(b.cfg.Schedulers) }

// Record credits reward bw (bytes served over the sum of the requests'
// latencies, in the period) to scheduler s at time now. An unknown
// scheduler is an error.
func (b *Bandit) Record(s string, bw float64, now time.Duration) error {
	i := slices.Index(b.cfg.Schedulers, s)
	if i < 0 {
		return fmt.Errorf("selection: unknown scheduler %q (known: %v)", s, b.cfg.Schedulers)
	}
	h := append(b.hist[i], measurement{now, bw})
	if len(h) > b.cfg.PerformanceWindow {
		h = slices.Delete(h, 0, len(h)-b.cfg.PerformanceWindow)
	}
	b.hist[i] = h
	return nil
}

// expire drops measurements older than Validity at now.
func (b *Bandit) expire(now time.Duration) {
	for i, h := range b.hist {
		k := 0
		for k < len(h) && now-h[k].at > b.cfg.Validity {
			k++
		}
		b.hist[i] = h[k:]
	}
}

// Mean is scheduler i's mean valid reward at now (ok false: untried).
func (b *Bandit) mean(i int) (float64, bool) {
	h := b.hist[i]
	if len(h) == 0 {
		return 0, false
	}
	var s float64
	for _, m := range h {
		s += m.bw
	}
	return s / float64(len(h)), true
}

// Probabilities returns each scheduler's probability of being chosen at
// now once every scheduler has been tried (nil while one is untried: it
// is tried first).
func (b *Bandit) Probabilities(now time.Duration) []float64 {
	b.expire(now)
	n := len(b.cfg.Schedulers)
	means := make([]float64, n)
	var sum float64
	for i := range n {
		m, ok := b.mean(i)
		if !ok {
			return nil
		}
		means[i], sum = max(m, 0), sum+max(m, 0)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Best first; ties by configuration order.
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case means[x] > means[y]:
			return -1
		case means[x] < means[y]:
			return 1
		}
		return 0
	})
	p := make([]float64, n)
	var total float64
	for rank, i := range order {
		share := 0.0
		if sum > 0 {
			share = 100 * means[i] / sum
		}
		p[i] = share + 3*float64(n-rank-1)
		total += p[i]
	}
	// Normalise, then lift every probability to the floor, taking the
	// difference from those above it in proportion.
	for i := range p {
		p[i] /= total
	}
	floor := b.cfg.MinProbability
	var lift, above float64
	for _, v := range p {
		if v < floor {
			lift += floor - v
		} else {
			above += v - floor
		}
	}
	for i, v := range p {
		if v < floor {
			p[i] = floor
		} else if above > 0 {
			p[i] = v - lift*(v-floor)/above
		}
	}
	return p
}

// Choose returns the scheduler to run from now: an untried one, drawn at
// random among them, else one drawn by Probabilities.
func (b *Bandit) Choose(now time.Duration, rng *rand.Rand) string {
	p := b.Probabilities(now)
	if p == nil {
		var untried []int
		for i := range b.cfg.Schedulers {
			if _, ok := b.mean(i); !ok {
				untried = append(untried, i)
			}
		}
		return b.cfg.Schedulers[untried[rng.IntN(len(untried))]]
	}
	x := rng.Float64()
	for i, v := range p {
		if x < v {
			return b.cfg.Schedulers[i]
		}
		x -= v
	}
	return b.cfg.Schedulers[len(p)-1]
}
