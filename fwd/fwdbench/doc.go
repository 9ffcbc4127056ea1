// Package fwdbench is an MPI-IO Test / IOR-style benchmark client for the
// forwarding daemon: N processes (goroutines) issue the request stream of a
// workload.Pattern (the same definitions the simulator uses) through
// connections of the client library (fwd/client), writing deterministic
// content, then read it back and verify every byte. RunDirect runs the same
// workload on a local directory with os.File (pread, pwrite) and no
// forwarder: the baseline for forwarder over direct ratios. RunTrace replays
// a recorded workload (workload.Trace, e.g. a Darshan DXT trace) instead:
// each process's requests of any length in order, with their think times,
// every byte read checked.
//
//	p := workload.Pattern{Processes: 16, Layout: workload.Shared, Spatiality: workload.Strided,
//		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 64 << 20}
//	c, _ := client.Dial(addr)
//	res, err := fwdbench.Run(ctx, c, p, fwdbench.Options{})
//	res.Print(os.Stdout)
//	base, err := fwdbench.RunDirect(ctx, "/dev/shm/bd", p, fwdbench.Options{}) // no forwarder
//	ratio := res.Write.Bandwidth / base.Write.Bandwidth
package fwdbench
