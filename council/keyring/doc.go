// Package keyring holds the keys of a Council group and signs and verifies
// its control-plane messages, end to end, whatever the NATS server's own
// configuration.
//
// A group has one Council key, one key per I/O node, operator keys (pin,
// release, shadow) and observer keys (read-only): ed25519 NKey user keys,
// the same keys NATS authenticates with. Generate makes a set and Write
// stores it in a directory:
//
//	DIR/keyring.json    the public keys and their roles (give it to every host)
//	DIR/council.nk      the Council's seed (the Council host only)
//	DIR/node-K.nk       I/O node K's seed (I/O node K only)
//	DIR/operator.nk     an operator's seed (the operators' host)
//	DIR/observer.nk     an observer's seed (monitoring)
//
// A sender signs the subject and body of each message (Signer.Header); the
// receiver checks the signature and that the signing key has the role the
// subject needs (Keyring.VerifyCouncil, Keyring.VerifyNode,
// Keyring.VerifyOperator). Seeds are written with mode 0600 and never
// travel.
//
//	set, _ := keyring.Generate(4)
//	_ = set.Write(dir)
//	h, _ := set.Council.Header(subject, body)          // Council side
//	err := set.Ring.VerifyCouncil(h, subject, body)    // I/O node side
package keyring
