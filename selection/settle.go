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
	// Cycles is how many blocks (periods in a row that go through a
	// cycle of the workload's operations) each algorithm runs while
	// exploring a workload that cycles (default 1).
	Cycles int
}

// op is a period's majority operation, by bytes.
type op int8

const (
	opNone op = iota
	opRead
	opWrite
)

func opOf(read, write float64) op {
	switch {
	case read+write == 0:
		return opNone
	case read >= write:
		return opRead
	}
	return opWrite
}

// cycleTracker follows a sequence of periods' operations: a cycle is
// complete when the operation of the first period has changed and come
// back (write, read, write).
type cycleTracker struct {
	first    op
	other    bool // an operation other than first seen
	periods  int
	complete bool // the last period completed a cycle
}

// add adds a period of operation o; it reports whether the period
// completed a cycle (the tracker then starts again with the next).
func (c *cycleTracker) add(o op) bool {
	if c.complete {
		*c = cycleTracker{}
	}
	c.periods++
	switch {
	case o == opNone:
	case c.first == opNone:
		c.first = o
	case o != c.first:
		c.other = true
	case c.other:
		c.complete = true
	}
	return c.complete
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
	if c.Cycles == 0 {
		c.Cycles = 1
	}
	if c.Cycles < 1 || c.Rounds < 1 || c.Margin < 0 || c.Margin >= 1 || c.Validity < 0 {
		return fmt.Errorf("%w: settle rounds %d, cycles %d, margin %v, validity %v; want >= 1, >= 1, in [0, 1), >= 0", ErrConfig, c.Rounds, c.Cycles, c.Margin, c.Validity)
	}
	return nil
}

// sample is one period under one algorithm, or a block of its periods
// in a row that went through a cycle of the workload's operations: its
// length and the bytes it read and wrote.
type sample struct {
	at          time.Duration
	secs        float64
	read, write float64
}

// block is the periods in a row of one algorithm, summed until they
// complete a cycle of the workload's operations.
type block struct {
	name        string
	secs        float64
	read, write float64
	cycle       cycleTracker
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
// the fit separates the algorithm from the phase it happened to run in.
//
// A workload that alternates operations in phases (written, then read,
// again and again) is also judged over whole cycles. A single period
// measures where it falls in the phase (the start of a read phase, the
// stragglers at the end of a write phase) and what the algorithm before
// left (the processes' progress through the file) as much as the
// algorithm in force; periods in a row of one algorithm that go through
// a cycle of operations (the first period's, the other, the first
// again) measure its whole phases. Once the workload has shown a cycle,
// each contender (an algorithm whose estimate from single periods is
// within 10% of the least) runs Cycles such blocks while exploring, each
// block until its periods complete a cycle or run twice as many periods
// as the shortest cycle seen (an algorithm that slow is judged on what
// it did in them); an algorithm's estimate is then fitted over its
// blocks where it has any (the one in force adds a block each cycle it
// stays). A workload of one operation never shows a cycle and is judged
// period by period. Nodes choosing alone explore blocks in lockstep as
// long as they see the phases change in the same periods. A pure state
// machine: no clock, no randomness.
type Settle struct {
	cfg     SettleConfig
	names   []string
	period  time.Duration
	samples [][]sample // per algorithm, oldest first: single periods
	blocks  [][]sample // per algorithm, oldest first: whole cycles
	run     block      // the periods in a row of the last algorithm recorded
	ops     cycleTracker
	cycle   int // periods of the workload's shortest complete cycle (0: none seen)
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
	return &Settle{cfg: cfg, names: slices.Clone(names), period: period, samples: make([][]sample, len(names)), blocks: make([][]sample, len(names))}, nil
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
	r, w := float64(read), float64(write)
	t.samples[i] = append(t.samples[i], sample{now, secs, r, w})
	o := opOf(r, w)
	if t.ops.add(o) && (t.cycle == 0 || t.ops.periods < t.cycle) {
		t.cycle = t.ops.periods
	}
	if t.run.name != s {
		t.run = block{name: s}
	}
	t.run.secs += secs
	t.run.read += r
	t.run.write += w
	if t.run.cycle.add(o) || t.cycle > 0 && t.run.cycle.periods >= 2*t.cycle {
		t.blocks[i] = append(t.blocks[i], sample{now, t.run.secs, t.run.read, t.run.write})
		t.run = block{name: s}
	}
	return nil
}

// inBlock reports whether current is running a block that has not yet
// completed its cycle.
func (t *Settle) inBlock(current string) bool {
	return t.cycle > 0 && t.run.name == current && t.run.cycle.periods > 0
}

// contender is how much longer than the least an algorithm's estimate
// from single periods may be for it to be measured over cycles too
// (measured: 1.10 and 1.25 scored alike on the twelve tests; the
// longer list explores longer).
const contender = 1.10

// unmeasured returns the index of the first algorithm from idx on, in
// order, that needs measuring: fewer than Rounds periods or, on a
// workload that cycles, fewer than Cycles blocks while its estimate from
// single periods is within contender of the least (-1: none); and
// whether algorithm cur (an index, or -1) needs a block.
func (t *Settle) unmeasured(idx, cur int) (next int, block bool) {
	n := len(t.names)
	var needs []bool
	if t.cycle > 0 {
		est := t.estimates(false)
		least := 0.0
		for _, e := range est {
			if least == 0 || e < least {
				least = e
			}
		}
		for i, s := range t.names {
			e, ok := est[s]
			needs = append(needs, ok && len(t.blocks[i]) < t.cfg.Cycles && e <= contender*least)
		}
		block = cur >= 0 && needs[cur]
	}
	for k := range n {
		if i := (idx + k) % n; len(t.samples[i]) < t.cfg.Rounds {
			return i, block
		}
	}
	for k := range n {
		if i := (idx + k) % n; needs != nil && needs[i] {
			return i, block
		}
	}
	return -1, block
}

func (t *Settle) expire(now time.Duration) {
	if t.cfg.Validity == 0 {
		return
	}
	for _, hs := range [][][]sample{t.samples, t.blocks} {
		for i, h := range hs {
			k := 0
			for k < len(h) && now-h[k].at > t.cfg.Validity {
				k++
			}
			hs[i] = h[k:]
		}
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
	// the next in order that does; a block under way runs to its end.
	i, block := t.unmeasured(idx, slices.Index(t.names, current))
	switch {
	case i >= 0 && block && t.inBlock(current):
		return Choice{Scheduler: current, Reason: "explore"}
	case i >= 0:
		return Choice{Scheduler: t.names[i], Reason: "explore"}
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
// to read and write the bytes of every period that counts, fitted over
// its blocks (whole cycles) where it has any, else over its periods.
func (t *Settle) Estimates() map[string]float64 { return t.estimates(true) }

// estimates is Estimates, over single periods only without blocks.
func (t *Settle) estimates(blocks bool) map[string]float64 {
	var all []sample
	var readSum, writeSum float64
	var n int
	judged := make([][]sample, len(t.samples))
	for i, h := range t.samples {
		n += len(h)
		for _, s := range h {
			readSum += s.read
			writeSum += s.write
		}
		judged[i] = h
		if blocks && len(t.blocks[i]) > 0 {
			judged[i] = t.blocks[i]
		}
		all = append(all, judged[i]...)
	}
	if n == 0 {
		return nil
	}
	scale := (readSum + writeSum) / float64(n) // bytes per period: the fit's unit
	pr, pw, ok := fit(all, scale)
	if !ok {
		pr, pw = common(all, scale, 1, 1), common(all, scale, 1, 1)
	}
	out := map[string]float64{}
	for i, h := range judged {
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
