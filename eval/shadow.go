package eval

import (
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/council"
)

// ShadowContext is what a decision log says of one context under the
// operator's controls: the windows in force, the windows learning would
// have chosen, and which of the latter the log's rewards support.
type ShadowContext struct {
	Context string
	// Rounds are the decisions for the context (plan entries, or the
	// decision itself without a plan); Steered those whose window in force
	// was not learning's (shadow, pin, guardrail, control); Agreed those
	// in which learning chose the window in force.
	Rounds, Steered, Agreed int
	// InForce is the mean logged reward of the window in force most often,
	// Control its window.
	Control  time.Duration
	InForce  WindowReward
	Learned  []ShadowChoice // learning's choices, most frequent first
	Disagree int            // rounds in which learning chose another window than the one in force
	// Unsupported is the part of Rounds in which learning chose a window
	// with no logged reward in the context: what it would have earned
	// there is not identified.
	Unsupported float64
}

// ShadowChoice is one window learning chose in a context.
type ShadowChoice struct {
	Window time.Duration
	Rounds int
	Reward WindowReward // the rewards the log holds for the window in the context
}

// WindowReward is the logged rewards of one (context, window).
type WindowReward struct {
	N          int
	Mean, SE   float64 // mean and its standard error (0 with fewer than 2)
	Supported  bool    // N >= 2: the mean has a standard error
	Lo, Hi     float64 // 95% normal interval of the mean (Supported only)
	GainVsCtrl float64 // Mean / the control's mean - 1 (Supported only)
}

// ShadowReport summarises a decision log's steered rounds.
type ShadowReport struct {
	Decisions int // decision-log lines
	Shadow    int // of which in shadow mode
	Contexts  []ShadowContext
}

// ReadShadow reads a decision log and summarises, per context, what
// learning would have chosen against what was in force (Decision.Learned,
// PlanEntry.Learned), and whether the log's rewards support an estimate
// of it: a window learning chose that the log never ran in the context has
// no reward to estimate it by, and its share of rounds is unsupported.
func ReadShadow(r io.Reader) (ShadowReport, error) {
	var rep ShadowReport
	type acc struct{ n, sum, sq float64 }
	rewards := map[string]map[time.Duration]*acc{}
	type ctxAcc struct {
		rounds, steered, agreed int
		inForce                 map[time.Duration]int
		learned                 map[time.Duration]int
	}
	ctxs := map[string]*ctxAcc{}
	get := func(ctx string) *ctxAcc {
		c := ctxs[ctx]
		if c == nil {
			c = &ctxAcc{inForce: map[time.Duration]int{}, learned: map[time.Duration]int{}}
			ctxs[ctx] = c
		}
		return c
	}
	note := func(ctx string, w, learned time.Duration, control string) {
		if ctx == "" {
			return
		}
		c := get(ctx)
		c.rounds++
		if control == "" || learned == 0 {
			learned = w
		} else {
			c.steered++
		}
		if learned == w {
			c.agreed++
		}
		c.inForce[w]++
		c.learned[learned]++
	}
	err := eachLogLine(r, ErrBadLog, func(_ int, d *council.Decision) error {
		rep.Decisions++
		if d.Shadow {
			rep.Shadow++
		}
		if len(d.Plan) == 0 {
			note(d.Context, d.Window, d.Learned, d.Control)
		}
		for _, e := range d.Plan {
			note(e.Context, e.Window, e.Learned, e.Control)
		}
		for _, nr := range d.Nodes {
			if !nr.Credited || nr.Context == "" {
				continue
			}
			m := rewards[nr.Context]
			if m == nil {
				m = map[time.Duration]*acc{}
				rewards[nr.Context] = m
			}
			a := m[nr.Window]
			if a == nil {
				a = &acc{}
				m[nr.Window] = a
			}
			a.n++
			a.sum += nr.Reward
			a.sq += nr.Reward * nr.Reward
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	reward := func(ctx string, w time.Duration) WindowReward {
		a := rewards[ctx][w]
		if a == nil || a.n == 0 {
			return WindowReward{}
		}
		x := WindowReward{N: int(a.n), Mean: a.sum / a.n}
		if a.n >= 2 {
			v := max(0, (a.sq-a.n*x.Mean*x.Mean)/(a.n-1))
			x.SE = math.Sqrt(v / a.n)
			x.Supported = true
			x.Lo, x.Hi = x.Mean-1.96*x.SE, x.Mean+1.96*x.SE
		}
		return x
	}
	names := make([]string, 0, len(ctxs))
	for k := range ctxs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		c := ctxs[name]
		sc := ShadowContext{Context: name, Rounds: c.rounds, Steered: c.steered, Agreed: c.agreed, Disagree: c.rounds - c.agreed}
		for w, n := range c.inForce {
			if n > c.inForce[sc.Control] || n == c.inForce[sc.Control] && (sc.Control == 0 || w < sc.Control) {
				sc.Control = w
			}
		}
		sc.InForce = reward(name, sc.Control)
		unsupported := 0
		for w, n := range c.learned {
			ch := ShadowChoice{Window: w, Rounds: n, Reward: reward(name, w)}
			if ch.Reward.Supported && sc.InForce.Supported && sc.InForce.Mean > 0 {
				ch.Reward.GainVsCtrl = ch.Reward.Mean/sc.InForce.Mean - 1
			}
			if !ch.Reward.Supported && w != sc.Control {
				unsupported += n
			}
			sc.Learned = append(sc.Learned, ch)
		}
		slices.SortFunc(sc.Learned, func(a, b ShadowChoice) int {
			if a.Rounds != b.Rounds {
				return b.Rounds - a.Rounds
			}
			return int(a.Window - b.Window)
		})
		if c.rounds > 0 {
			sc.Unsupported = float64(unsupported) / float64(c.rounds)
		}
		rep.Contexts = append(rep.Contexts, sc)
	}
	return rep, nil
}

// Steered reports whether any round of the log was steered by the
// operator's controls (shadow, pins, guardrail).
func (r ShadowReport) Steered() bool {
	for _, c := range r.Contexts {
		if c.Steered > 0 {
			return true
		}
	}
	return false
}

// UnsupportedContexts lists the contexts in which learning chose windows
// the log holds no reward for, comma-separated.
func (r ShadowReport) UnsupportedContexts() string {
	var out []string
	for _, c := range r.Contexts {
		if c.Unsupported > 0 {
			out = append(out, c.Context)
		}
	}
	return strings.Join(out, ", ")
}
