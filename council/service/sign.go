package service

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
)

// Keys are the Council's keys (see package keyring and docs/security.md).
type Keys struct {
	// Ring is the group's keyring. Set, a report on <prefix>.report.k is
	// accepted only when signed by node k's key in it (nodes not in it are
	// refused), and, unless Security.Keys says otherwise, it is
	// Security.Keys: the embedded NATS server admits the keyring's keys
	// with their roles' rights. Nil: reports are not authenticated.
	Ring *keyring.Keyring
	// Signer is the Council's key: it signs every decision, and the
	// Council authenticates to its embedded NATS server with it unless
	// Security gives other credentials. With a Ring it must be the Ring's
	// Council key.
	Signer *keyring.Signer
}

func (k Keys) validate() error {
	if k.Ring == nil {
		return nil
	}
	if err := k.Ring.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadOptions, err)
	}
	if k.Signer == nil {
		return fmt.Errorf("%w: a keyring without the Council's seed (%s): the Council could not sign its decisions", ErrBadOptions, keyring.CouncilSeed)
	}
	if k.Signer.PublicKey() != k.Ring.Council {
		return fmt.Errorf("%w: the Council's seed (key %s) is not the keyring's Council key %s", ErrBadOptions, k.Signer.PublicKey(), k.Ring.Council)
	}
	return nil
}

// clientOptions authenticate the Council to its embedded server with its
// key when Security gives no other credentials. (An external server that
// knows the key is joined with Security.NKeySeedFile: one that does not
// would refuse a key it was not configured for.)
func (k Keys) clientOptions(sec Security, embedded bool) []nats.Option {
	if !embedded || k.Signer == nil || sec.User != "" || sec.NKeySeedFile != "" {
		return nil
	}
	return []nats.Option{k.Signer.NATSOption()}
}

// publishDecision broadcasts d stamped with the Council's epoch and the
// wall-clock time, signed when the Council has a key. Called with s.mu
// held.
func (s *Service) publishDecision(d council.Decision) {
	w := d.Wire()
	w.Epoch, w.Time = s.epoch, time.Now().UTC()
	s.scratch = councilmsg.AppendDecision(s.scratch[:0], w)
	subject := s.subj.Decision()
	var err error
	if sg := s.opts.Keys.Signer; sg != nil {
		var msg *nats.Msg
		if msg, err = sg.Msg(subject, s.scratch); err == nil {
			err = s.nc.PublishMsg(msg)
		}
	} else {
		err = s.nc.Publish(subject, s.scratch)
	}
	if err != nil {
		s.log.Warn("publish decision", "round", d.Round, "err", err)
	}
}
