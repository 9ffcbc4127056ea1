// Package virtual runs the Council core (package council) in virtual time,
// against the simulator or anything that steps observation intervals: each
// interval every I/O node's observation goes in, as the Announcers'
// reports do in the Council service, the round closes (all nodes
// reported, or the round's deadline passes), and the decision comes out,
// to be applied to every I/O node. No goroutines, no clock: the caller
// passes the virtual time. It is the one join of the Council core and the
// simulator, used by "adaptio sim run --learn" and "adaptio demo --sim".
//
//	loop := virtual.New(core)
//	res, err := s.Run(ctx, loop.Hooks(func(now time.Duration, d council.Decision) { ... }))
package virtual

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sim"
)

// Loop feeds a Council core one interval at a time. Not safe for
// concurrent use.
type Loop struct {
	core *council.Council
	seq  uint64
}

// New returns a loop around core.
func New(core *council.Council) *Loop { return &Loop{core: core} }

// Core returns the Council core the loop drives.
func (l *Loop) Core() *council.Council { return l.core }

// Interval gives the core one observation per I/O node at virtual time now
// (each node reporting as instance node+1, one sequence number per
// interval, as the service numbers the Announcers' reports) and closes the
// round: when every node reported, or else at the round's deadline. It
// returns the round's decision, or ok false when the round decided
// nothing. Rejected observations are returned as an error after the
// round, which still closes.
func (l *Loop) Interval(now time.Duration, obs []access.Observation) (d council.Decision, ok bool, err error) {
	return l.IntervalJobs(now, obs, nil)
}

// IntervalJobs is Interval with each I/O node's jobs: jobs(node), if not
// nil, returns the observation of each job's own requests at the node (as
// sim.Sim.JobObservations), which its report carries as an Announcer's
// does (councilmsg.ReportJobs: when two or more jobs were active).
func (l *Loop) IntervalJobs(now time.Duration, obs []access.Observation, jobs func(node int) map[string]access.Observation) (d council.Decision, ok bool, err error) {
	if len(obs) == 0 {
		return council.Decision{}, false, nil
	}
	l.seq++
	for _, o := range obs {
		r := council.Report{Instance: uint64(o.Node) + 1, Seq: l.seq, Round: l.core.Round(), Obs: o}
		if jobs != nil {
			r.Jobs = councilmsg.ReportJobs(o, jobs(o.Node))
		}
		if oerr := l.core.Observe(now, r); oerr != nil && err == nil {
			err = fmt.Errorf("virtual: observation of node %d: %w", o.Node, oerr)
		}
	}
	d, ok, _ = l.core.Poll(now)
	if !ok {
		d, ok, _ = l.core.Poll(now + l.core.Config().Timeout)
	}
	return d, ok, err
}

// Hooks returns simulator hooks that run the loop every interval and
// apply each decision's window and plan to every I/O node (but after the
// last interval), as the Announcer does to a daemon. A run with several
// jobs (sim.Config.Jobs) reports each node's jobs, as the forwarding
// daemon's Announcer does. onDecision, if not nil, sees each decision with its virtual
// time.
func (l *Loop) Hooks(onDecision func(now time.Duration, d council.Decision)) sim.Hooks {
	return sim.Hooks{OnNodeInterval: func(s *sim.Sim, now time.Duration, obs []access.Observation) error {
		d, ok, err := l.IntervalJobs(now, obs, s.JobObservations)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if onDecision != nil {
			onDecision(now, d)
		}
		if s.Done() {
			return nil
		}
		return Apply(s, d)
	}}
}

// Apply applies decision d to every I/O node of s as the Announcer applies
// a broadcast decision to a daemon: its window, and its plan (a window
// per direction, taken as each node's requests turn).
func Apply(s *sim.Sim, d council.Decision) error {
	plan := ionode.Plan{Read: d.PlanWindow(rw.Read), Write: d.PlanWindow(rw.Write)}
	for k := range s.Config().IONodes {
		if err := s.Follow(k, plan, d.Window); err != nil {
			return err
		}
	}
	return nil
}
