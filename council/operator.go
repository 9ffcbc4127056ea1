package council

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// Why a window in force is not learning's choice (Decision.Control,
// PlanEntry.Control).
const (
	ControlShadow    = "shadow"    // shadow mode: Config.Default in force
	ControlPin       = "pin"       // an operator pinned the context's window
	ControlGuardrail = "guardrail" // the guardrail fell back to Config.Default for the context
	ControlShare     = "control"   // drawn as one of the guardrail's control decisions
)

// ErrOperator is wrapped by the errors of the operator's actions (Pin,
// Release, ParseContext).
var ErrOperator = errors.New("council: operator action")

// Guardrail configures the guardrail (Config.Guardrail). With Share > 0,
// every decision for a context that is not held, pinned or fallen back is,
// with probability Share, Config.Default (the control) instead of
// learning's choice; the probability logged for the window in force is the
// mixture's. When the window learning prefers in a context (its policy's
// greedy window) earned, over the last Span rounds, a mean reward lower
// than the control's by more than Threshold of the control's, and by more
// than two standard errors of the difference, with at least MinSamples
// pulls of each, the context falls back to the control: every decision for
// it keeps Config.Default in force (learning goes on, as in shadow mode)
// until an operator releases it, or for Cooldown rounds.
type Guardrail struct {
	Share      float64 // share of decisions kept at the control, in [0, 0.5]; 0: off
	Threshold  float64 // how much worse than the control, as a fraction of its mean, in (0, 1)
	Span       int     // rounds over which the means are taken (sliding)
	MinSamples int     // pulls of each window needed in the span
	Cooldown   int     // rounds after a fallback before learning is tried again; 0: until released
}

// Defaults of the guardrail, as adaptio council sets them.
const (
	DefaultGuardShare     = 0.05
	DefaultGuardThreshold = 0.10
	DefaultGuardSpan      = 600
	DefaultGuardMin       = 4
)

// DefaultGuardrail returns the guardrail adaptio council runs with by
// default: 5% control, 10% threshold, 600 rounds, 4 pulls of each.
func DefaultGuardrail() Guardrail {
	return Guardrail{Share: DefaultGuardShare, Threshold: DefaultGuardThreshold, Span: DefaultGuardSpan, MinSamples: DefaultGuardMin}
}

// Enabled reports whether the guardrail runs.
func (g Guardrail) Enabled() bool { return g.Share > 0 }

func (g Guardrail) validate() error {
	if g.Share == 0 {
		return nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: guardrail: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case !(g.Share > 0 && g.Share <= 0.5):
		return bad("share %v, want in (0, 0.5] (0: off)", g.Share)
	case !(g.Threshold > 0 && g.Threshold < 1):
		return bad("threshold %v, want in (0, 1), e.g. 0.1 for 10%% worse than the control", g.Threshold)
	case g.Span < 1:
		return bad("span %d rounds, want >= 1", g.Span)
	case g.MinSamples < 1:
		return bad("minimum samples %d, want >= 1", g.MinSamples)
	case g.Cooldown < 0:
		return bad("cool-down %d rounds, want >= 0 (0: until released)", g.Cooldown)
	}
	return nil
}

// guardZ is how many standard errors of the difference of the means the
// learned window must fall short by, beyond the threshold, for a fallback.
const guardZ = 2

// Fallback is the guardrail's fallback of one context to the control.
type Fallback struct {
	Context     string        `json:"context"`
	Round       uint64        `json:"round"`      // round at whose close it fell back
	Learned     time.Duration `json:"learned_ns"` // the learned window that did worse
	LearnedMean float64       `json:"learned_mean"`
	LearnedN    int           `json:"learned_n"`
	Control     time.Duration `json:"control_ns"`
	ControlMean float64       `json:"control_mean"`
	ControlN    int           `json:"control_n"`
	Span        int           `json:"span"`            // rounds the means cover
	Until       uint64        `json:"until,omitempty"` // round at which learning is tried again (0: until released)
}

// GuardrailEvent is a change of the guardrail's state in a round.
type GuardrailEvent struct {
	Action string `json:"action"` // GuardFallback or GuardRetry
	Fallback
}

// Actions of GuardrailEvent.
const (
	GuardFallback = "fallback" // the context fell back to the control
	GuardRetry    = "retry"    // the cool-down ended: learning is in force again
)

// Pin is a window an operator pinned for a context.
type Pin struct {
	Context string        `json:"context"`
	Window  time.Duration `json:"win_ns"`
}

// OperatorStatus is the operator's view of the Council: shadow mode, pins,
// the guardrail's configuration and fallbacks, all in sorted order.
type OperatorStatus struct {
	Shadow    bool       `json:"shadow"`
	Control   int64      `json:"control_ns"` // the control window (Config.Default)
	Pins      []Pin      `json:"pins"`
	Guardrail Guardrail  `json:"guardrail"`
	Fallbacks []Fallback `json:"fallbacks"`
}

// guardSample is one pull the guardrail remembers.
type guardSample struct {
	round  uint64
	arm    int
	reward float64
}

// ParseContext returns the context of a pattern (FPP, SC or SS, any case)
// and an operation (read or write, any case), e.g. "SS/write".
func ParseContext(pattern, op string) (string, error) {
	var class access.Class = access.Unknown
	for _, c := range access.Classes {
		if strings.EqualFold(pattern, c.String()) {
			class = c
		}
	}
	if class == access.Unknown {
		return "", fmt.Errorf("%w: pattern %q, want FPP, SC or SS", ErrOperator, pattern)
	}
	var o rw.Op
	switch strings.ToLower(op) {
	case "read":
		o = rw.Read
	case "write":
		o = rw.Write
	default:
		return "", fmt.Errorf("%w: operation %q, want read or write", ErrOperator, op)
	}
	return Context(class, o), nil
}

// validContext reports whether ctx is a context ParseContext returns, or
// a mix of them (MixContext of two or more).
func validContext(ctx string) bool {
	if parts := contextParts(ctx); len(parts) > 1 {
		for _, p := range parts {
			if !validContext(p) {
				return false
			}
		}
		return MixContext(parts...) == ctx
	}
	pattern, op, ok := strings.Cut(ctx, "/")
	if !ok {
		return false
	}
	c, err := ParseContext(pattern, op)
	return err == nil && c == ctx
}

// Pin keeps window w in force for context ctx (as ParseContext returns
// it) until Release, whatever learning chooses; learning goes on and logs
// its choice. w must be one of Config.Windows. A pin takes precedence over
// the guardrail and shadow mode.
func (c *Council) Pin(ctx string, w time.Duration) error {
	if !validContext(ctx) {
		return fmt.Errorf("%w: context %q, want PATTERN/OP such as SS/write", ErrOperator, ctx)
	}
	if c.arm(w) < 0 {
		return fmt.Errorf("%w: window %v is not one of the Council's windows %v", ErrOperator, w, c.cfg.Windows)
	}
	c.pins[ctx] = w
	return nil
}

// Release removes context ctx's pin and the guardrail's fallback, if any,
// and reports which it removed: learning is in force again for ctx (unless
// shadow mode holds every context).
func (c *Council) Release(ctx string) (pin time.Duration, fallback bool, err error) {
	if !validContext(ctx) {
		return 0, false, fmt.Errorf("%w: context %q, want PATTERN/OP such as SS/write", ErrOperator, ctx)
	}
	pin = c.pins[ctx]
	_, fallback = c.fallbacks[ctx]
	delete(c.pins, ctx)
	delete(c.fallbacks, ctx)
	delete(c.guard, ctx) // the span starts afresh: the samples that made it fall back do not count twice
	return pin, fallback, nil
}

// ReleaseAll removes every pin and fallback and returns the contexts it
// released, sorted.
func (c *Council) ReleaseAll() []string {
	var ctxs []string
	for ctx := range c.pins {
		ctxs = append(ctxs, ctx)
	}
	for ctx := range c.fallbacks {
		if _, ok := c.pins[ctx]; !ok {
			ctxs = append(ctxs, ctx)
		}
	}
	slices.Sort(ctxs)
	for _, ctx := range ctxs {
		delete(c.guard, ctx)
	}
	clear(c.pins)
	clear(c.fallbacks)
	return ctxs
}

// SetShadow turns shadow mode on or off. In shadow mode every decision
// keeps Config.Default in force (a pinned window where one is pinned), the
// Council learns from the rewards the I/O nodes earn under it, and each
// decision records learning's choice (Decision.Learned, PlanEntry.Learned).
func (c *Council) SetShadow(on bool) { c.shadow = on }

// Shadow reports whether shadow mode is on.
func (c *Council) Shadow() bool { return c.shadow }

// Operator returns the operator's view of the Council.
func (c *Council) Operator() OperatorStatus {
	st := OperatorStatus{Shadow: c.shadow, Control: int64(c.cfg.Default), Guardrail: c.cfg.Guardrail, Pins: []Pin{}, Fallbacks: []Fallback{}}
	for ctx, w := range c.pins {
		st.Pins = append(st.Pins, Pin{Context: ctx, Window: w})
	}
	slices.SortFunc(st.Pins, func(a, b Pin) int { return strings.Compare(a.Context, b.Context) })
	for _, f := range c.fallbacks {
		st.Fallbacks = append(st.Fallbacks, f)
	}
	slices.SortFunc(st.Fallbacks, func(a, b Fallback) int { return strings.Compare(a.Context, b.Context) })
	return st
}

// restoreOperator checks a snapshot's pins and fallbacks and returns them
// as the Council holds them.
func (c *Council) restoreOperator(pins map[string]time.Duration, fallbacks []Fallback) (map[string]time.Duration, map[string]Fallback, error) {
	p := map[string]time.Duration{}
	for ctx, w := range pins {
		if !validContext(ctx) || c.arm(w) < 0 {
			return nil, nil, fmt.Errorf("pin %q at %v: not a context, or not one of the windows", ctx, w)
		}
		p[ctx] = w
	}
	f := map[string]Fallback{}
	for _, x := range fallbacks {
		if !validContext(x.Context) {
			return nil, nil, fmt.Errorf("guardrail fallback of %q: not a context", x.Context)
		}
		f[x.Context] = x
	}
	return p, f, nil
}

// forced returns the window the operator's controls keep in force for
// context ctx, and why: a pin, the guardrail's fallback, shadow mode.
func (c *Council) forced(ctx string) (time.Duration, string, bool) {
	if w, ok := c.pins[ctx]; ok {
		return w, ControlPin, true
	}
	if _, ok := c.fallbacks[ctx]; ok {
		return c.cfg.Default, ControlGuardrail, true
	}
	if c.shadow {
		return c.cfg.Default, ControlShadow, true
	}
	return 0, "", false
}

// steered is a choice after the operator's controls.
type steered struct {
	window, learned   time.Duration
	prob, learnedProb float64
	explore           bool
	control           string
}

func (s steered) apply(w *time.Duration, prob *float64, explore *bool, control *string, learned *time.Duration, learnedProb *float64) {
	*w, *prob, *explore, *control = s.window, s.prob, s.explore, s.control
	if s.control != "" {
		*learned, *learnedProb = s.learned, s.learnedProb
	}
}

// steer applies the operator's controls to learning's choice w (with
// probability prob) for context ctx: a forced window (pin, fallback,
// shadow) replaces it with probability 1; otherwise, with the guardrail
// on, the control replaces it with probability Share, and the probability
// logged is the mixture's (probOf gives learning's probability of any
// arm). rng is drawn only when the guardrail applies.
func (c *Council) steer(ctx string, w time.Duration, prob float64, explore bool, probOf func(arm int) float64) steered {
	out := steered{window: w, prob: prob, explore: explore, learned: w, learnedProb: prob}
	if fw, why, ok := c.forced(ctx); ok {
		out.window, out.prob, out.explore, out.control = fw, 1, false, why
		return out
	}
	g := c.cfg.Guardrail
	if !g.Enabled() || ctx == "" {
		return out
	}
	ctl := c.arm(c.cfg.Default)
	pc := probOf(ctl)
	if c.rng.Float64() < g.Share {
		out.window, out.prob, out.explore, out.control = c.cfg.Default, g.Share+(1-g.Share)*pc, false, ControlShare
		return out
	}
	out.prob = (1 - g.Share) * prob
	if w == c.cfg.Default {
		out.prob += g.Share
	}
	return out
}

// steerKept applies the forced controls to a round in which nobody voted
// (d keeps the window in force): shadow mode turns its window to the
// control, and every plan entry of a context pinned, fallen back or in
// shadow turns to its forced window. It returns the plan to keep.
func (c *Council) steerKept(d *Decision) []PlanEntry {
	if c.shadow && d.Window != c.cfg.Default {
		d.Learned, d.LearnedProb, d.Control = d.Window, d.Prob, ControlShadow
		d.Window = c.cfg.Default
	}
	plan := slices.Clone(d.Plan)
	for i := range plan {
		e := &plan[i]
		if w, why, ok := c.forced(e.Context); ok && e.Window != w {
			e.Learned, e.LearnedProb, e.Control = e.Window, e.Prob, why
			e.Window, e.Prob, e.Explore, e.Held = w, 1, false, false
		}
	}
	return plan
}

// teach credits reward to (ctx, arm) and, with the guardrail on, remembers
// the pull for its comparison.
func (c *Council) teach(ctx string, arm int, reward float64) {
	c.bands.Policy(ctx).Update(arm, reward)
	if c.cfg.Guardrail.Enabled() {
		c.guard[ctx] = append(c.guard[ctx], guardSample{round: c.round + 1, arm: arm, reward: reward})
	}
}

// checkGuardrail runs at the close of round c.round: it ends cool-downs
// that are over and compares, in every context learning steers, the
// learned window's pulls of the span with the control's. It returns the
// changes, by context.
func (c *Council) checkGuardrail() []GuardrailEvent {
	g := c.cfg.Guardrail
	if !g.Enabled() {
		return nil
	}
	var events []GuardrailEvent
	for _, ctx := range sortedKeys(c.fallbacks) {
		if f := c.fallbacks[ctx]; f.Until > 0 && c.round >= f.Until {
			delete(c.fallbacks, ctx)
			delete(c.guard, ctx)
			events = append(events, GuardrailEvent{Action: GuardRetry, Fallback: f})
		}
	}
	ctl := c.arm(c.cfg.Default)
	for _, ctx := range sortedKeys(c.guard) {
		samples := c.guard[ctx]
		i := 0
		for i < len(samples) && samples[i].round+uint64(g.Span) <= c.round {
			i++
		}
		samples = samples[i:]
		if len(samples) == 0 {
			delete(c.guard, ctx)
			continue
		}
		c.guard[ctx] = samples
		if _, pinned := c.pins[ctx]; pinned {
			continue
		}
		if _, fell := c.fallbacks[ctx]; fell {
			continue
		}
		learned := c.bands.Policy(ctx).Best()
		if learned == ctl {
			continue
		}
		var l, k meanVar
		for _, s := range samples {
			switch s.arm {
			case learned:
				l.add(s.reward)
			case ctl:
				k.add(s.reward)
			}
		}
		if l.n < g.MinSamples || k.n < g.MinSamples {
			continue
		}
		floor := k.mean() * (1 - g.Threshold)
		se := math.Sqrt(l.variance()/float64(l.n) + k.variance()/float64(k.n))
		if !(l.mean() < floor && floor-l.mean() > guardZ*se) {
			continue
		}
		f := Fallback{Context: ctx, Round: c.round, Learned: c.cfg.Windows[learned], LearnedMean: l.mean(), LearnedN: l.n,
			Control: c.cfg.Default, ControlMean: k.mean(), ControlN: k.n, Span: g.Span}
		if g.Cooldown > 0 {
			f.Until = c.round + uint64(g.Cooldown)
		}
		c.fallbacks[ctx] = f
		events = append(events, GuardrailEvent{Action: GuardFallback, Fallback: f})
	}
	return events
}

// meanVar accumulates a mean and a sample variance.
type meanVar struct {
	n       int
	sum, sq float64
}

func (m *meanVar) add(x float64) { m.n++; m.sum += x; m.sq += x * x }
func (m meanVar) mean() float64  { return m.sum / float64(m.n) }
func (m meanVar) variance() float64 {
	if m.n < 2 {
		return 0
	}
	mu := m.mean()
	return max(0, (m.sq-float64(m.n)*mu*mu)/float64(m.n-1))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
