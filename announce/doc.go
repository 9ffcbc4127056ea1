// Package announce is the Announcer: the part of an I/O node's forwarding
// daemon that reports the node's metrics to the Council every interval and
// applies the window the Council decides (Bez et al., FGCS 2020 section IV-A).
//
// The daemon implements Source (the metrics of the interval just ended) and
// Applier (apply a window). The Announcer reconnects by itself; while the
// Council is unreachable it drops reports and keeps the last decided window
// (or Options.Default before the first decision).
//
//	a, _ := announce.New(announce.Options{URL: "nats://council:4222", Node: 3,
//		Source: daemon, Applier: daemon, Default: time.Millisecond})
//	a.Start(ctx)
//	defer a.Shutdown()
package announce
