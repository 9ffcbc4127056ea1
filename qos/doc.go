// Package qos is the per-job quality of service of an I/O node: rules in the
// style of Lustre's NRS TBF (a token bucket filter with rules by job), a
// token bucket per job and rule, and weighted fair sharing between jobs when
// the node is saturated: of the data servers' time (ShareTime, the default:
// each job charged at completion the time its requests held the servers,
// the job with the least time per unit of weight next, in job windows that
// keep each job's requests together at the data servers; the shares tilted
// toward the jobs that move more bytes per second of server time as far as
// Jain's index of the shares stays at Config.Fairness, 0.9 by default) or of the
// bytes released (ShareBytes: deficit round robin over per-job queues). A Gate
// sits in front of the request scheduler (package sched): pieces of client
// requests enter the Gate, and the Gate releases them to the scheduler when
// their job's bucket allows and the node has room.
//
// # Usage
//
//	rules, err := qos.Parse("job=ckpt op=write rate=200MiB\njob=* weight=1")
//	g, err := qos.NewGate(qos.Config{Rules: rules})
//	g.Add(now, "ckpt", req)              // a piece of job ckpt's request
//	for backlog < depth {                // while the scheduler has room
//		job, r, ok, retryAt := g.Next(now)
//		if !ok { break }                 // ask again at retryAt (0: at the next Add)
//		scheduler.Add(now, r)
//	}
//	g.Done(r.ID, service)                // r left the data server, which spent service on it
//	g.SetRules(now, newRules)            // rules changed at run time: queued requests stay
//
// A Gate is a pure, deterministic state machine: time is the now argument
// (it must not go backwards), it never sleeps, starts goroutines or reads a
// clock, and it is not safe for concurrent use (the daemon calls it under
// its dispatcher's lock; the simulator runs the same code in virtual time).
//
// # Rules
//
// One rule per line (or separated by ';'), fields key=value separated by
// spaces, '#' starts a comment:
//
//	job=ID|*        the job the rule applies to; * is every job (required)
//	op=read|write|any  the operation (default any)
//	rate=SIZE       the most bytes per second (B, KB, MB, GB, KiB, MiB, GiB
//	                suffixes; no rate: uncapped)
//	burst=SIZE      the bucket's depth in bytes (default rate x 100 ms, at
//	                least 1 MiB): the most bytes sent at once after an idle time
//	weight=N        the job's share under saturation, 1 to 1000 (default 1)
//
// A request takes the first rule whose job and op match it (in file order,
// as TBF); with none it is uncapped. Every job a rule matches has its own
// bucket: "job=* rate=100MiB" caps each job at 100 MiB/s, not all jobs
// together. A job's weight is that of the first rule naming it (or *) that
// sets one.
package qos
