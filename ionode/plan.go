package ionode

import (
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// Plan is a TWINS window for each direction of requests: the Council's
// choice for the access pattern an I/O node's reads, and its writes, are
// expected to take next. A zero entry means no plan for that direction.
//
// A Council decides once per observation interval (1 s by default), from
// reports that describe the interval before: a phase shorter than that
// (the demo's reads last half a second) would otherwise run entirely under
// the window chosen for the phase before it. With a plan the node moves to
// the window of the new direction as soon as its requests turn, without
// waiting for a report and a round.
type Plan = rw.Pair[time.Duration]

// FollowAfter is how many pieces in a row of the other direction turn a
// node following a plan to that direction: one request's worth of pieces
// or a few stragglers of the phase before do not, a phase does (16 is
// also the most requests one access aggregates).
const FollowAfter = 16

// follower is a Node's state while it follows a plan.
type follower struct {
	plan Plan
	dir  rw.Op         // direction the node's pieces take (0: none seen yet)
	run  int           // pieces in a row of the other direction
	win  time.Duration // window in force while following
	// window in force when the last piece of each direction arrived while
	// following (index by rw.Op; 0 for none)
	at [3]time.Duration
	// changed is set when Add applied a window, until Switched reads it
	changed bool
}

// Follow makes the node follow plan from now on, and applies at once the
// window of fallback or, when the node's pieces already take a direction
// the plan has a window for, that window. A zero plan stops following:
// the node keeps fallback whatever its requests do. Windows apply only
// while the scheduler is TWINS (otherwise Follow changes nothing and
// returns nil).
func (n *Node) Follow(now time.Duration, plan Plan, fallback time.Duration) error {
	f := &n.fol
	f.plan = plan
	if plan == (Plan{}) {
		f.at = [3]time.Duration{}
	}
	w := fallback
	if pw := plan.For(f.dir); pw > 0 {
		w = pw
	}
	err := n.applyWindow(now, w)
	f.win = n.sw.Params().Window
	return err
}

// applyWindow sets the TWINS window to w (no-op for other schedulers, a
// non-positive w, or the window already in force).
func (n *Node) applyWindow(now, w time.Duration) error {
	if w <= 0 || n.sw.Name() != "twins" || n.sw.Params().Window == w {
		return nil
	}
	if err := n.sw.SetWindow(now, w); err != nil {
		return err
	}
	n.fol.win = w
	n.fol.changed = true
	return nil
}

// follow notes the direction of a piece added at now and, after
// FollowAfter pieces in a row of the other direction, applies the plan's
// window for it.
func (n *Node) follow(now time.Duration, r sched.Request) {
	f := &n.fol
	if f.plan == (Plan{}) {
		if r.Op.Valid() {
			f.dir, f.run = r.Op, 0
		}
		return
	}
	switch {
	case r.Op == f.dir:
		f.run = 0
	case f.dir == 0:
		f.dir = r.Op
	default:
		f.run++
		if f.run >= FollowAfter {
			f.dir, f.run = r.Op, 0
			_ = n.applyWindow(now, f.plan.For(r.Op)) // a window the scheduler accepted before
		}
	}
	if r.Op.Valid() {
		f.at[r.Op] = f.win
	}
}

// WindowOf returns the TWINS window to credit an interval whose requests
// were mostly op's: while the node follows a plan, the window its last
// piece of direction op arrived under; otherwise (or before any such piece)
// the window in force. 0 when the scheduler is not TWINS.
func (n *Node) WindowOf(op rw.Op) time.Duration {
	if n.sw.Name() != "twins" {
		return 0
	}
	if op.Valid() && n.fol.plan != (Plan{}) {
		if w := n.fol.at[op]; w > 0 {
			return w
		}
	}
	return n.sw.Params().Window
}

// Switched reports whether the TWINS window changed (by Follow or by a
// plan followed in Add) since the last call, and the window in force.
func (n *Node) Switched() (time.Duration, bool) {
	if !n.fol.changed {
		return 0, false
	}
	n.fol.changed = false
	return n.fol.win, true
}
