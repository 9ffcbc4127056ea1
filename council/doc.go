// Package council is the Council's core (Bez et al., FGCS 2020, Algorithm 1, with its
// gaps closed): it detects each I/O node's access pattern from its interval
// report, learns per (pattern, operation) which TWINS window is best with a
// contextual bandit, and closes rounds with one window for every I/O node.
//
// The core is a pure, deterministic state machine: the caller passes the
// time of every event and a seeded random source, and carries out the
// decisions. The NATS service (package council/service) and the simulator
// are shells around it:
//
//	c, _ := council.New(council.Config{Nodes: 4}, rand.New(rand.NewPCG(1, 2)))
//	for {
//		r := <-reports            // decoded councilmsg.Report
//		c.Observe(now, r)         // errors: ErrInvalid, ErrStale (state unchanged)
//		d, ok, wakeAt := c.Poll(now)
//		if ok {
//			broadcast(d.Wire())   // every node applies d.Window
//			log(d)                // per-node metrics, pattern, recommendation, probability
//		}
//		// else call Poll again at wakeAt (the round's deadline) or after the next report
//	}
//
// Rewards are credited to the (pattern, operation, window) of the interval
// that earned them: the pattern is detected from that interval's metrics and
// the window is the one the node reports as in force, not the Council's
// latest decision. Idle intervals count as a report but teach nothing.
package council
