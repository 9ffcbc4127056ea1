// Package client is the client library of the forwarding daemon (package
// fwd, `adaptio forward`): what the FUSE mount, the benchmark client and
// applications link to read and write through an I/O node. A Client is one
// connection speaking the protocol of fwd/fwdproto (docs/protocol.md) over TCP
// or a Unix socket; any number of goroutines may call it at once and their
// requests are pipelined. A client on the daemon's host (a "unix:"
// address) hands the daemon a shared region and moves data through it,
// requests and completions passing through rings in the same region, so a
// busy client makes no system call per request. With Options.Reconnect a
// client rides through a daemon restart.
//
// The package imports neither the daemon nor NATS nor Prometheus: besides
// the standard library, linking it costs fwd/fwdproto, backend's types and
// golang.org/x/sys/unix.
//
//	c, _ := client.Dial(addr) // "host:port", or "unix:/path/to/socket" on the daemon's host
//	defer c.Close()
//	f, _ := c.Create("out/rank0")
//	f.WriteAt(buf, off) // returns once the backend holds the bytes
//
//	b, _ := c.AllocBuffer(1 << 20) // node-local: in the shared region, no client copy
//	f.WriteBuffer(b, off)
//	b.Free()
package client
