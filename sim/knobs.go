package sim

import "fmt"

// The I/O nodes' dispatch knobs, changeable while a simulation runs (by a
// tuner between Steps, or from Hooks.OnNodeInterval), as the daemon's are
// (fwd.Daemon.SetKnob): the aggregation limit (Config.Aggregate) and the
// accesses in flight per data server (ionode.Config.PerServer, by default
// ionode.PerServerLimit(Threads, Servers)). Left alone, they hold their
// configured values and a run is the same as without them.

// Aggregate returns I/O node node's aggregation limit: the most requests
// one access carries.
func (s *Sim) Aggregate(node int) int { return s.ions[node].core.Aggregate() }

// SetAggregate sets I/O node node's aggregation limit (>= 1) from now on:
// accesses in flight keep their requests, queued ones their order.
func (s *Sim) SetAggregate(node, k int) error {
	if err := s.knobNode(node, "aggregation limit", k, 1); err != nil {
		return err
	}
	s.ions[node].core.SetAggregate(k)
	return nil
}

// PerServer returns the most accesses I/O node node keeps in flight to one
// data server (0: no limit but its Threads).
func (s *Sim) PerServer(node int) int { return s.ions[node].core.PerServer() }

// SetPerServer sets the most accesses I/O node node keeps in flight to one
// data server (>= 1) from now on; the node's Threads still bound them all.
// Lowering it leaves the accesses in flight alone (the server's next ones
// wait for them); raising it dispatches at once what it frees.
func (s *Sim) SetPerServer(node, k int) error {
	if err := s.knobNode(node, "accesses in flight per data server", k, 1); err != nil {
		return err
	}
	s.ions[node].core.SetPerServer(k)
	s.dispatch(node)
	return nil
}

// knobNode checks a knob's node and value.
func (s *Sim) knobNode(node int, what string, v, least int) error {
	if node < 0 || node >= len(s.ions) {
		return fmt.Errorf("%w: no I/O node %d", ErrBadConfig, node)
	}
	if v < least {
		return fmt.Errorf("%w: %s %d, want >= %d", ErrBadConfig, what, v, least)
	}
	return nil
}

// Queued returns the requests waiting at I/O node node (queued in its
// scheduler or held for a dispatcher thread) and their bytes: the node's
// backlog, which a tuner reads as the sign of contention.
func (s *Sim) Queued(node int) (requests int, bytes int64) { return s.ions[node].core.Queued() }
