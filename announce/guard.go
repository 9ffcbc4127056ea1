package announce

import (
	"errors"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/council/councilmsg"
)

// Defaults of Freshness.
const (
	DefaultMaxAge      = 30 * time.Second
	DefaultMaxSkew     = 5 * time.Second
	DefaultMinRoundGap = time.Millisecond
	DefaultRoundSlack  = 16
)

// Errors of Guard.Admit; RejectReason maps them to metric labels.
var (
	ErrUnstamped = errors.New("announce: decision carries no epoch and time")
	ErrStale     = errors.New("announce: decision too old")
	ErrFuture    = errors.New("announce: decision from the future")
	ErrReplay    = errors.New("announce: decision not newer than the last applied")
	ErrJump      = errors.New("announce: decision round too far ahead")
)

// RejectReasons lists every label of adaptio_announce_decisions_rejected_total.
var RejectReasons = []string{"unsigned", "signature", "key", "unstamped", "stale", "future", "replay", "jump", "other"}

// RejectReason returns the metric label of a Guard error.
func RejectReason(err error) string {
	switch {
	case errors.Is(err, ErrUnstamped):
		return "unstamped"
	case errors.Is(err, ErrStale):
		return "stale"
	case errors.Is(err, ErrFuture):
		return "future"
	case errors.Is(err, ErrReplay):
		return "replay"
	case errors.Is(err, ErrJump):
		return "jump"
	}
	return "other"
}

// Freshness bounds the decisions a Guard admits. Zero fields take the
// defaults.
type Freshness struct {
	// MaxAge: a decision made longer ago than this (by its Time, on this
	// host's clock) is refused as stale (default 30 s: decisions travel in
	// milliseconds; the bound is the clock skew between hosts plus a
	// margin).
	MaxAge time.Duration
	// MaxSkew: a decision made more than this in the future is refused
	// (default 5 s: NTP keeps hosts' clocks within milliseconds).
	MaxSkew time.Duration
	// MinRoundGap and RoundSlack bound how far ahead a round may be within
	// an epoch: at most RoundSlack plus one round per MinRoundGap of the
	// Council's own time between the last decision applied and this one
	// (defaults 1 ms and 16; a Council closes a round per report
	// interval, a second by default).
	MinRoundGap time.Duration
	RoundSlack  uint64
	// RequireStamp refuses decisions without an epoch and time (the
	// Announcer sets it with a keyring: every signing Council stamps its
	// decisions).
	RequireStamp bool
}

func (f Freshness) withDefaults() Freshness {
	if f.MaxAge <= 0 {
		f.MaxAge = DefaultMaxAge
	}
	if f.MaxSkew <= 0 {
		f.MaxSkew = DefaultMaxSkew
	}
	if f.MinRoundGap <= 0 {
		f.MinRoundGap = DefaultMinRoundGap
	}
	if f.RoundSlack == 0 {
		f.RoundSlack = DefaultRoundSlack
	}
	return f
}

// Guard decides which decisions an I/O node applies: within one epoch of
// the Council, rounds move forward, and not faster than a Council can
// close them; a new epoch (a restarted Council) is taken only with a
// decision made after the last one applied; every stamped decision must be
// fresh on this host's clock. A decision without a stamp (from a Council
// that predates stamps) is refused with RequireStamp, else admitted unless
// it repeats the last round. It is a pure state machine: the caller passes
// the time; it is not safe for concurrent use.
type Guard struct {
	f       Freshness
	applied bool
	epoch   uint64
	round   uint64
	at      time.Time // the last applied decision's Time (zero: unstamped)
}

// NewGuard returns a Guard with f's bounds (zero fields: defaults).
func NewGuard(f Freshness) *Guard { return &Guard{f: f.withDefaults()} }

// Admit checks d, received at now, and records it as the last applied
// when it passes. The error wraps one of ErrUnstamped, ErrStale,
// ErrFuture, ErrReplay or ErrJump.
func (g *Guard) Admit(d councilmsg.Decision, now time.Time) error {
	if d.Epoch == 0 || d.Time.IsZero() {
		if g.f.RequireStamp {
			return fmt.Errorf("%w (round %d)", ErrUnstamped, d.Round)
		}
		if g.applied && g.epoch == 0 && d.Round == g.round {
			return fmt.Errorf("%w: round %d again", ErrReplay, d.Round)
		}
		g.applied, g.epoch, g.round, g.at = true, 0, d.Round, time.Time{}
		return nil
	}
	switch age := now.Sub(d.Time); {
	case age > g.f.MaxAge:
		return fmt.Errorf("%w: round %d made %v ago (at most %v)", ErrStale, d.Round, age.Round(time.Millisecond), g.f.MaxAge)
	case -age > g.f.MaxSkew:
		return fmt.Errorf("%w: round %d made %v ahead of this host's clock (at most %v)", ErrFuture, d.Round, (-age).Round(time.Millisecond), g.f.MaxSkew)
	}
	if g.applied && d.Epoch == g.epoch {
		if d.Round <= g.round {
			return fmt.Errorf("%w: round %d after round %d of the same epoch", ErrReplay, d.Round, g.round)
		}
		allowed := g.f.RoundSlack
		if el := d.Time.Sub(g.at); el > 0 {
			allowed += uint64(el / g.f.MinRoundGap)
		}
		if d.Round-g.round > allowed {
			return fmt.Errorf("%w: round %d after round %d, %v later (at most %d rounds)", ErrJump, d.Round, g.round, d.Time.Sub(g.at), allowed)
		}
	} else if g.applied && !g.at.IsZero() && !d.Time.After(g.at) {
		return fmt.Errorf("%w: epoch %x round %d made at %v, not after the last applied (%v)", ErrReplay, d.Epoch, d.Round, d.Time, g.at)
	}
	g.applied, g.epoch, g.round, g.at = true, d.Epoch, d.Round, d.Time
	return nil
}

// Round returns the last admitted decision's round (0: none).
func (g *Guard) Round() uint64 { return g.round }
