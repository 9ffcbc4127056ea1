// Package fwd is the forwarding daemon of an I/O node (`adaptio forward`).
// Clients (package fwd/client) send reads, writes and metadata operations
// over TCP or a Unix socket (protocol: package fwd/fwdproto, docs/protocol.md).
// The daemon splits each read and write into pieces per PFS data server
// (backend.Backend.Split), schedules them with a sched.Switcher (TWINS by
// default) under one lock, and executes the batches on the backend with a
// pool of workers that take the next batch as they finish one; a write is
// acknowledged once the backend has it. Clients on the daemon's host
// connected over a Unix socket hand the daemon a sealed memfd and move data
// through it (docs/protocol.md, "Shared-memory data path"); the daemon then
// preads and pwrites straight between the shared pages and the backend, and
// requests and completions travel through rings in the same region, polled
// by the daemon and by one goroutine of each client process, so a busy
// client makes no system call per request ("Rings"). The daemon is the
// Announcer's Source (per-interval access.Observation, collected when
// Options.Observe or SetObserve is set) and Applier (the TWINS window,
// changed live); the package does not import announce: `adaptio forward`
// joins the two, and checks there that the Daemon fits.
//
//	d, _ := fwd.New(fwd.Options{Backend: be, Listen: []string{"127.0.0.1:7070"}})
//	d.Start()
//	defer d.Shutdown()
//	c, _ := client.Dial(d.Addr())
//	f, _ := c.Create("out/rank0")
//	f.WriteAt(buf, off) // pipelined: any number of goroutines may call at once
//
//	a, _ := announce.New(announce.Options{URL: councilURL, Source: d, Applier: d}) // with Observe: true
package fwd
