// Package sched holds adaptio's request schedulers: pure, deterministic state
// machines that decide in which order, and aggregated how, the requests an
// I/O node forwards reach the parallel file system's data servers. It is the
// Go counterpart of the AGIOS library, with IOFSL's FIFO and HBRR and TWINS.
//
// Usage loop (a shell such as the forwarding daemon or the simulator):
//
//	s, err := sched.NewSwitcher("twins", sched.Config{Servers: 8, Node: k})
//	s.Add(now, req)                        // on each request
//	for {
//		b, ok, retryAt := s.Next(now)      // ask for work
//		if !ok { sleep until retryAt (0: until the next Add); break }
//		send b to data server b.Queue; later: s.Complete(now, b.ID, bytes, took)
//	}
//	s.SetParams(now, p)                    // Council's new window
//	s.Switch(now, "fifo")                  // change algorithm, keep the queue
//
// Schedulers never sleep, start goroutines or read the clock: time is the
// now argument, which must not go backwards.
package sched
