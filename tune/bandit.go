package tune

import (
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/tune/knob"
)

// BanditConfig configures PatternBandit. Zero values take the defaults in
// brackets.
type BanditConfig struct {
	// Knobs are the knobs at their initial values. Each knob's levels are
	// the powers of two in its range and its initial value; a setting (an
	// arm) gives every knob one of its levels.
	Knobs []knob.Knob
	// Interval is how often it decides (1 s: its decisions need one
	// interval's bandwidth each, where IOPathTune's need ten seconds).
	Interval time.Duration
	// Recheck is how many intervals on the best setting pass before one of
	// its neighbours, the least measured, is measured again, so that a
	// value learnt early does not stand for ever (30).
	Recheck int
	// Neighbors is how many known patterns a new one's prior comes from
	// (bandit.Options.Neighbors; 2).
	Neighbors int
	// Drift is the factor by which the mean bandwidth of the best setting's
	// last Window intervals must differ from the mean of its first Window
	// since it became the best, for the pattern to count as changed (1.5):
	// a file read again from the page cache, or a workload that speeds up
	// as it runs, is the same pattern on a different machine, and what
	// was measured before no longer compares with what is measured now.
	Drift  float64
	Window int // intervals averaged to tell a drift (5)
}

// PatternBandit is a contextual bandit over knob settings keyed by the
// workload pattern (Observation.Pattern), after the Council's: one
// bandit.Policy ("greedy", sample averages) per pattern, whose arms are
// every combination of the knobs' levels. Its exploration is local: from
// the setting it values best it measures the untried neighbours (one knob
// one level up or down), then the extremes (one knob at its lowest or
// highest level), one per interval, and moves to whichever proves better,
// so that a pattern's best setting is found by climbing, as IOPathTune
// climbs, but every measurement is kept and a plateau does not stop it. When the pattern
// changes it goes at once to the best setting known for the new one; a
// pattern met for the first time starts from its nearest known patterns'
// values (bandit.Contextual's prior), or from the setting in force. An
// interval is credited to the setting in force only when its pattern is
// the one before it (a change of workload mixes two in one interval). When
// the best setting's bandwidth drifts by more than BanditConfig.Drift, the
// pattern starts afresh, with what it learnt as the prior.
// Deterministic: it draws no random numbers.
type PatternBandit struct {
	cfg    BanditConfig
	knobs  []knob.Knob
	levels [][]int // per knob, its levels ascending
	cur    []int   // per knob, the index of its level in force
	ctx    *bandit.Contextual
	last   Pattern // the pattern of the last interval
	pats   map[string]*patternState
	lastAt time.Duration
	begun  bool
	stay   int // intervals on the best setting since the last recheck
	// Switches counts the changes of pattern seen, Jumps those that moved
	// to a setting learnt before for the new pattern, Drifts the patterns
	// started afresh.
	Switches, Jumps, Drifts int
}

// patternState is what the bandit keeps per pattern beside its policy.
type patternState struct {
	epoch    int       // starts afresh so far: the policy's context is "key#epoch"
	extremes [][2]bool // per knob, whether its lowest and highest levels were measured
	best     int       // the best-valued setting the readings below are of
	ref      float64   // the mean of its first Window readings (0: not yet)
	win      []float64 // its last readings, at most Window
}

var _ Tuner = (*PatternBandit)(nil)

// NewPatternBandit returns the tuner at the knobs' initial values.
func NewPatternBandit(cfg BanditConfig) (*PatternBandit, error) {
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = 30
	}
	if cfg.Neighbors == 0 {
		cfg.Neighbors = 2
	}
	if cfg.Drift == 0 {
		cfg.Drift = 1.5
	}
	if cfg.Window == 0 {
		cfg.Window = 5
	}
	if len(cfg.Knobs) == 0 || cfg.Interval < 0 || cfg.Recheck < 0 || cfg.Neighbors < 0 || cfg.Drift <= 1 || cfg.Window < 1 {
		return nil, fmt.Errorf("%w: bandit %+v", ErrConfig, cfg)
	}
	if err := validKnobs(cfg.Knobs); err != nil {
		return nil, err
	}
	t := &PatternBandit{cfg: cfg, knobs: slices.Clone(cfg.Knobs), pats: map[string]*patternState{}}
	arms := 1
	for _, k := range cfg.Knobs {
		var lv []int
		for v := 1; v <= k.Max; v *= 2 {
			if v >= k.Min {
				lv = append(lv, v)
			}
		}
		if !slices.Contains(lv, k.Value) {
			lv = append(lv, k.Value)
			slices.Sort(lv)
		}
		t.levels = append(t.levels, lv)
		t.cur = append(t.cur, slices.Index(lv, k.Value))
		arms *= len(lv)
	}
	c, err := bandit.NewContextual("greedy", arms, bandit.Options{Neighbors: cfg.Neighbors})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	t.ctx = c
	return t, nil
}

// Knobs returns the knobs at their current values.
func (t *PatternBandit) Knobs() []knob.Knob { return slices.Clone(t.knobs) }

// arm is the arm of level indexes lv (mixed radix, knob 0 first).
func (t *PatternBandit) arm(lv []int) int {
	a := 0
	for i := len(lv) - 1; i >= 0; i-- {
		a = a*len(t.levels[i]) + lv[i]
	}
	return a
}

// levelsOf is the level indexes of arm a.
func (t *PatternBandit) levelsOf(a int) []int {
	lv := make([]int, len(t.levels))
	for i := range lv {
		lv[i] = a % len(t.levels[i])
		a /= len(t.levels[i])
	}
	return lv
}

// neighbours are the arms one knob one level away from a, each knob up
// then down, knob by knob.
func (t *PatternBandit) neighbours(a int) []int {
	var out []int
	lv := t.levelsOf(a)
	for i := range lv {
		for _, d := range []int{1, -1} {
			if j := lv[i] + d; j >= 0 && j < len(t.levels[i]) {
				nb := slices.Clone(lv)
				nb[i] = j
				out = append(out, t.arm(nb))
			}
		}
	}
	return out
}

// extreme is the arm with knob i of a at its lowest (side 0) or highest
// (side 1) level: measured once per pattern, when the neighbours are, the
// extremes find a best setting that a plateau between it and the
// defaults hides from climbing.
func (t *PatternBandit) extreme(a, i, side int) int {
	lv := t.levelsOf(a)
	lv[i] = side * (len(t.levels[i]) - 1)
	return t.arm(lv)
}

// Step credits the interval's bandwidth to the setting in force for the
// interval's pattern and chooses the next setting (see PatternBandit).
// Before Interval has passed since its last decision it only watches; an
// interval of unknown pattern changes nothing.
func (t *PatternBandit) Step(now time.Duration, o Observation) []Setting {
	if t.begun && now-t.lastAt < t.cfg.Interval {
		return nil
	}
	t.begun, t.lastAt = true, now
	pt := o.Pattern
	if pt.Key == "" {
		t.last = pt
		return nil
	}
	ps := t.pats[pt.Key]
	if ps == nil {
		ps = &patternState{extremes: make([][2]bool, len(t.knobs)), best: -1}
		t.pats[pt.Key] = ps
	}
	p := t.ctx.PolicyWith(fmt.Sprintf("%s#%d", pt.Key, ps.epoch), pt.Features[:])
	cur := t.arm(t.cur)
	if pt.Key == t.last.Key {
		if t.drifted(ps, p.Best(), cur, o.Bandwidth) {
			ps.epoch++
			*ps = patternState{epoch: ps.epoch, extremes: make([][2]bool, len(t.knobs)), best: -1}
			t.Drifts++
			p = t.ctx.PolicyWith(fmt.Sprintf("%s#%d", pt.Key, ps.epoch), pt.Features[:])
		}
		p.Update(cur, o.Bandwidth)
	} else if t.last.Key != "" {
		t.Switches++
	}
	switched := pt.Key != t.last.Key
	t.last = pt
	next := t.choose(p, ps, cur)
	if switched && next != cur && slices.ContainsFunc(p.Counts(), func(n int64) bool { return n > 0 }) {
		t.Jumps++
	}
	return t.apply(next)
}

// drifted records bw, measured on cur while best is the pattern's
// best-valued setting, and reports whether the best setting's bandwidth
// has drifted: the mean of its last Window readings against the mean of
// its first Window since it became the best.
func (t *PatternBandit) drifted(ps *patternState, best, cur int, bw float64) bool {
	if cur != best {
		return false
	}
	if best != ps.best {
		ps.best, ps.ref, ps.win = best, 0, ps.win[:0]
	}
	ps.win = append(ps.win, bw)
	if len(ps.win) > t.cfg.Window {
		ps.win = ps.win[1:]
	}
	if len(ps.win) < t.cfg.Window {
		return false
	}
	var m float64
	for _, v := range ps.win {
		m += v / float64(len(ps.win))
	}
	if ps.ref == 0 {
		ps.ref = m
		return false
	}
	return m > t.cfg.Drift*ps.ref || m*t.cfg.Drift < ps.ref
}

// choose is the next arm for the pattern's policy p and state ps, cur in
// force.
func (t *PatternBandit) choose(p bandit.Policy, ps *patternState, cur int) int {
	counts, values := p.Counts(), p.Values()
	if !slices.ContainsFunc(values, func(v float64) bool { return v != 0 }) {
		return cur // nothing known, no prior: measure the setting in force
	}
	best := p.Best()
	if counts[best] == 0 {
		return best // the prior's favourite
	}
	nbs := t.neighbours(best)
	for _, nb := range nbs {
		if counts[nb] == 0 {
			t.stay = 0
			return nb
		}
	}
	for i := range t.knobs {
		for side := range 2 {
			if !ps.extremes[i][side] {
				ps.extremes[i][side] = true
				if x := t.extreme(best, i, side); counts[x] == 0 {
					t.stay = 0
					return x
				}
			}
		}
	}
	t.stay++
	if t.cfg.Recheck > 0 && t.stay > t.cfg.Recheck {
		t.stay = 0
		least := nbs[0]
		for _, nb := range nbs[1:] {
			if counts[nb] < counts[least] {
				least = nb
			}
		}
		return least
	}
	return best
}

// apply puts arm a in force and returns the settings that changed.
func (t *PatternBandit) apply(a int) []Setting {
	var out []Setting
	for i, l := range t.levelsOf(a) {
		if l == t.cur[i] {
			continue
		}
		t.cur[i] = l
		t.knobs[i].Value = t.levels[i][l]
		out = append(out, Setting{t.knobs[i].Name, t.knobs[i].Value})
	}
	return out
}
