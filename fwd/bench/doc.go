// Package bench is an MPI-IO Test / IOR-style benchmark client for the
// forwarding daemon: N processes (goroutines) issue the request stream of a
// workload.Pattern (the same definitions the simulator uses) through
// fwd.Client connections, writing deterministic content, then read it back
// and verify every byte.
//
//	c, _ := fwd.Dial(addr)
//	res, err := bench.Run(ctx, c, workload.Pattern{Processes: 16, Layout: workload.Shared,
//		Spatiality: workload.Strided, Op: sched.Write, RequestSize: 32 << 10, TotalBytes: 64 << 20},
//		bench.Options{})
//	res.Print(os.Stdout)
package bench
