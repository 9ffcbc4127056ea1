// Package shm is what the forwarding daemon (fwd) and its client library
// (fwd/client) share of the shared-memory transport (docs/protocol.md,
// "Shared-memory data path" and "Rings"): the layout of the submission and
// completion rings in a client's region, the encoding of their entries,
// the wake-up frames, and the rule by which either side's poller decides
// to sleep. The client places the rings and submits; the daemon checks
// everything it reads from them and completes.
//
//	r := shm.NewRings(region[off:off+shm.RingBytes(n)], n)
//	shm.PutSQE(r.SQE(tail), &m)                // client: submit
//	r.Counter(shm.OffSQTail).Store(tail + 1)
//	err := shm.DecodeSQE(entry, &m)           // daemon: a copy of r.SQE(head)
//	shm.PutCQE(r.CQE(ctail), m.ID, n)         // daemon: complete
//
//	var s shm.Spinner
//	for s.More(polls, spin) { /* sweep again */ } // then sleep until a wake-up
package shm
