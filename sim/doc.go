// Package sim is a deterministic discrete-event model of the forwarding
// stack of the papers' platform, driving the real schedulers of package
// sched in virtual time.
//
// The model (docs/simulator.md gives every parameter and its source):
// MPI-IO Test processes (package workload) issue one synchronous request at
// a time; processes are spread evenly over client nodes, client nodes over
// I/O nodes. Each I/O node splits a request by the PFS striping into one
// piece per data server, feeds the pieces to its scheduler (TWINS by
// default, with the node's index for the translation rule), and dispatches
// the batches it hands out, merging those that continue each other
// (IOFSL-style aggregation), to the data servers. A data server serves one
// access at a time: page cache with read-ahead for reads, then its disk
// (package disk; writes go through). Messages cross full-duplex links with
// bandwidth, latency and FIFO queueing. Every second each I/O node closes an
// access.Accumulator fed with the requests it received: the Announcer's
// observation.
//
// The engine is one event heap ordered by (time, sequence) with callbacks on
// one loop; random streams are seeded per component, so the same Config
// gives the same results, byte for byte.
//
// Run an experiment to its end, changing the TWINS window every second:
//
//	res, err := sim.Run(ctx, sim.Config{Patterns: []workload.Pattern{p}, IONodes: 4},
//		sim.Hooks{OnInterval: func(now time.Duration, obs []access.Observation) (time.Duration, bool) {
//			return decide(obs), true // new window for every I/O node
//		}})
//
// or step it yourself, one interval at a time, deciding per node:
//
//	s, _ := sim.New(cfg, logger)
//	for {
//		obs, done, err := s.Step() // one access.Observation per I/O node
//		...
//		s.SetWindow(node, w)       // or s.Switch(node, "fifo")
//		if done { break }
//	}
//	res := s.Result()
//
// Config.Patterns runs patterns back to back on the same files (WriteRead
// builds write-then-read iterations); Config.Traces replays recorded
// workloads instead (workload.Trace: each process's requests in order, of
// any length, each after its think time, read one at a time through a
// cursor so that a trace need not be held whole). The engine runs on the caller's
// goroutine and touches no files; package sim/experiment runs the papers'
// grid in parallel and writes the dataset (package dataset), measures the
// findings and checks the model against FORGE.
package sim
