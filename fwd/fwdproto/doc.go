// Package fwdproto is the binary protocol between forwarding clients (the
// FUSE mount, the benchmark client, applications linking fwd/client) and the
// forwarding daemon (fwd): length-prefixed frames with a magic and a
// version, client-chosen request ids, any number of outstanding requests
// per connection, and responses in any order; and the daemon's addresses
// (SplitAddr). docs/protocol.md specifies it.
//
//	r := fwdproto.NewReader(conn, fwdproto.DefaultMaxFrame)
//	for {
//		h, payload, err := r.ReadFrame()      // header errors: reply CodeBadFrame, close
//		var m fwdproto.Msg
//		err = fwdproto.Decode(h, payload, &m) // m.Data aliases payload
//		out = fwdproto.Append(out[:0], &reply)
//	}
package fwdproto
