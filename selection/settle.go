package selection

import (
	"fmt"
	"slices"
	"time"
)

// SettleConfig are the parameters of Settle; zero values are the defaults.
type SettleConfig struct {
	// Rounds is how many periods each algorithm runs while exploring
	// (default 3): one per round, the rounds one after the other.
	Rounds int
	// Margin is the share by which another algorithm's estimated time
	// must beat the one in force for a settled choice to change (default
	// 0.05): the hysteresis that lets a steady workload settle.
	Margin float64
	// Validity is how long a period's measurement counts (default 360 s,
	// AGIOS's): an algorithm left with fewer than Rounds measurements is
	// explored again, so that a changed workload is noticed.
	Validity time.Duration
}

func (c *SettleConfig) defaults() error {
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Margin == 0 {
		c.Margin = 0.05
	}
	if c.Validity == 0 {
		c.Validity = 360 * time.Second
	}
	if c.Rounds < 1 || c.Margin < 0 || c.Margin >= 1 || c.Validity < 0 {
		return fmt.Errorf("%w: settle rounds %d, margin %v, validity %v; want >= 1, in [0, 1), >= 0", ErrConfig, c.Rounds, c.Margin, c.Validity)
	}
	return nil
}

// sample is one period under one algorithm: its length and the bytes it
// read and wrote.
type sample struct {
	at          time.Duration
	secs        float64
	read, write float64
}

// Settle chooses by explore-then-commit (ours): each algorithm runs
// Rounds periods, in configuration order, the algorithm of the period
// starting at now being the one at index (now / Period) modulo their
// number: I/O nodes whose periods start at the same instants explore in
// lockstep, every node running the same algorithm, without talking to
// each other. Then it settles on the algorithm with the least estimated
// time for the bytes seen (Estimates) and changes only for one estimated
// faster by more than Margin.
//
// A period's time is modelled as read bytes x r + written bytes x w, r and
// w an algorithm's seconds per byte, fitted by least squares over its
// periods; where they do not tell reads from writes (one operation only),
// with the ratio of r to w fitted over every algorithm's periods. A
// period's bandwidth depends on whether the workload read or wrote in it:
// the fit separates the algorithm from the phase it happened to run in. A pure state machine: no clock, no randomness.
type Settle struct {
	cfg     SettleConfig
	names   []string
	period  time.Duration
	samples [][]sample // per algorithm, oldest first
}

// NewSettle returns a Settle over names that has measured nothing;
// period is the selection period (the lockstep's unit).
func NewSettle(cfg SettleConfig, names []string, period time.Duration) (*Settle, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if len(names) < 2 || period <= 0 {
		return nil, fmt.Errorf("%w: settle over %d algorithms, period %v", ErrConfig, len(names), period)
	}
	return &Settle{cfg: cfg, names: slices.Clone(names), period: period, samples: make([][]sample, len(names))}, nil
}

// Record adds a period ending at now, of length secs seconds, that read
// and wrote the given bytes under algorithm s (an unknown one is an
// error).
func (t *Settle) Record(s string, secs float64, read, write int64, now time.Duration) error {
	i := slices.Index(t.names, s)
	if i < 0 {
		return fmt.Errorf("selection: unknown scheduler %q (known: %v)", s, t.names)
	}
	if secs <= 0 || read < 0 || write < 0 || read+write == 0 {
		return nil // nothing to learn from
	}
	t.samples[i] = append(t.samples[i], sample{now, secs, float64(read), float64(write)})
	return nil
}

func (t *Settle) expire(now time.Duration) {
	if t.cfg.Validity == 0 {
		return
	}
	for i, h := range t.samples {
		k := 0
		for k < len(h) && now-h[k].at > t.cfg.Validity {
			k++
		}
		t.samples[i] = h[k:]
	}
}

// Choice is a choice of Settle (or of any chooser of the Driver) and why.
type Choice struct {
	Scheduler string
	// Reason is "explore" (an algorithm measured fewer than Rounds
	// times runs), "settled" (the algorithm in force stays), "estimates"
	// (another's estimate beats it by more than the margin) or, for the
	// other choosers, "draw" (a random draw by AGIOS's probabilities or a
	// bandit policy) and "pattern" (the predicted pattern's choice).
	Reason string
	// Estimates are the algorithms' estimated times, in seconds, for the
	// bytes read and written over the measurements that count (nil while
	// exploring, and for the other choosers).
	Estimates map[string]float64
}

// Choose returns the algorithm for the period starting at now, current
// being the one in force.
func (t *Settle) Choose(current string, now time.Duration) Choice {
	t.expire(now)
	n := len(t.names)
	idx := int(uint64(now/t.period) % uint64(n))
	// Explore: the lockstep's algorithm if it still needs measuring, else
	// the next in order that does.
	for k := range n {
		i := (idx + k) % n
		if len(t.samples[i]) < t.cfg.Rounds {
			return Choice{Scheduler: t.names[i], Reason: "explore"}
		}
	}
	est := t.Estimates()
	best := ""
	for _, s := range t.names {
		if best == "" || est[s] < est[best] {
			best = s
		}
	}
	cur, ok := est[current]
	switch {
	case !ok: // not one of ours: take the best
		return Choice{Scheduler: best, Reason: "estimates", Estimates: est}
	case best != current && est[best] < (1-t.cfg.Margin)*cur:
		return Choice{Scheduler: best, Reason: "estimates", Estimates: est}
	}
	return Choice{Scheduler: current, Reason: "settled", Estimates: est}
}

// Estimates returns each measured algorithm's estimated time, in seconds,
// to read and write the bytes of every period that counts.
func (t *Settle) Estimates() map[string]float64 {
	var all []sample
	var readSum, writeSum float64
	for _, h := range t.samples {
		all = append(all, h...)
		for _, s := range h {
			readSum += s.read
			writeSum += s.write
		}
	}
	if len(all) == 0 {
		return nil
	}
	scale := (readSum + writeSum) / float64(len(all)) // bytes per period: the fit's unit
	pr, pw, ok := fit(all, scale)
	if !ok {
		pr, pw = common(all, scale, 1, 1), common(all, scale, 1, 1)
	}
	out := map[string]float64{}
	for i, h := range t.samples {
		if len(h) == 0 {
			continue
		}
		r, w, ok := fit(h, scale)
		if !ok { // one operation only, or always mixed alike: the pooled ratio
			k := common(h, scale, pr, pw)
			r, w = k*pr, k*pw
		}
		out[t.names[i]] = (readSum*r + writeSum*w) / scale
	}
	return out
}

// fit solves min sum (secs - read/scale x r - write/scale x w)^2 with r,
// w > 0 (seconds per scale bytes read and written); ok is false when the
// samples do not tell reads from writes (one operation only, or mixed in
// nearly the same proportions throughout) or a rate comes out negative.
func fit(h []sample, scale float64) (r, w float64, ok bool) {
	var a, b, c, u, v float64
	for _, s := range h {
		x, y := s.read/scale, s.write/scale
		a += x * x
		b += x * y
		c += y * y
		u += x * s.secs
		v += y * s.secs
	}
	det := a*c - b*b
	if a == 0 || c == 0 || det < 0.2*a*c { // read and write shares correlated above 0.9
		return 0, 0, false
	}
	r, w = (u*c-b*v)/det, (a*v-b*u)/det
	return r, w, r > 0 && w > 0
}

// common fits secs = k x (read/scale x pr + write/scale x pw): the factor
// k by which the samples' algorithm is slower than rates pr and pw.
func common(h []sample, scale, pr, pw float64) float64 {
	var zz, zt float64
	for _, s := range h {
		z := (s.read*pr + s.write*pw) / scale
		zz += z * z
		zt += z * s.secs
	}
	if zz == 0 {
		return 0
	}
	return zt / zz
}
