// Package demo is "adaptio demo": the online experiment of Bez et al.,
// "Adaptive Request Scheduling for the I/O Forwarding Layer using
// Reinforcement Learning" (FGCS 2020, section V-C), end to end, with a live
// terminal view, a web dashboard and a self-contained HTML report.
//
// By default it starts, in one process, the real stack: a Council service
// (embedded NATS, learned state in JetStream KV under Config.StateDir), an
// emulated PFS of 4 data servers with the hard-disk model, 4 forwarding
// daemons running TWINS, each with an Announcer, and client processes (the
// fwd/fwdbench library) that repeat the experiment with real, verified bytes.
// With Config.Sim the same experiment runs in the simulator, in virtual time,
// with the same Council core deciding every simulated second.
//
//	rec, err := demo.Run(ctx, demo.Config{Sim: true, Iterations: 120, HTTP: "127.0.0.1:0",
//		Out: os.Stdout, TTY: demo.IsTerminal(os.Stdout)})
//	// report.html is written, also when ctx is cancelled; rec holds what ran.
//
// The Council's decisions reach the views through its decision log (JSON
// lines): the real stack's service writes it to a sink that also feeds the
// recording, so the report and the log on disk cannot disagree.
package demo
