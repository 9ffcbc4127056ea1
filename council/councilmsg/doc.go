// Package councilmsg defines the Council's messages and NATS subjects: the
// versioned report an Announcer publishes each interval and the decision the
// Council broadcasts when it closes a round. Both are compact JSON objects
// with a "v" field; decoders reject oversized, malformed, unknown-version and
// invalid messages with errors that Reason turns into metric labels.
//
//	s := councilmsg.Subjects{Prefix: "adaptio.default"}
//	b, _ := councilmsg.MarshalReport(councilmsg.Report{Instance: id, Seq: seq, Round: round, Obs: obs})
//	nc.Publish(s.Report(obs.Node), b)
//	// Council side:
//	r, err := s.DecodeReport(msg.Subject, msg.Data) // err: count councilmsg.Reason(err)
package councilmsg
