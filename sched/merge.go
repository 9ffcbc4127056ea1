package sched

import "github.com/adaptio/adaptio/rw"

// Access is one access to a data server built from batches a scheduler
// released one after another: the I/O node's aggregation (Bez et al., FGCS 2020, V-A,
// IOFSL "aggregating up to 16 requests in dispatch"). The daemon (package
// fwd, on backends of per-server objects) and the simulator both build
// their accesses with it, so they send a data server the same ones.
type Access struct {
	Queue    int
	File     uint64
	Op       rw.Op
	Offset   int64 // the lowest offset of the batches joined
	Length   int64
	Requests int // requests of the batches joined
}

// AccessOf starts an access with batch b, of requests requests (a caller
// that took b.Requests away passes their number).
func AccessOf(b Batch, requests int) Access {
	return Access{Queue: b.Queue, File: b.File, Op: b.Op, Offset: b.Offset, Length: b.Length, Requests: requests}
}

// Continues reports whether batch b, of requests requests, continues a:
// same queue (data server), file and operation, contiguous just after or
// just before it, and a would stay within limit requests.
func (a Access) Continues(b Batch, requests, limit int) bool {
	return b.Queue == a.Queue && b.File == a.File && b.Op == a.Op && a.Requests+requests <= limit &&
		(b.Offset == a.Offset+a.Length || b.Offset+b.Length == a.Offset)
}

// Join extends a with b if b continues it (Continues) and reports whether
// it did.
func (a *Access) Join(b Batch, requests, limit int) bool {
	if !a.Continues(b, requests, limit) {
		return false
	}
	a.Offset = min(a.Offset, b.Offset)
	a.Length += b.Length
	a.Requests += requests
	return true
}
