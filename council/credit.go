package council

import (
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
)

// creditKey is a (context, arm) of a round's pending rewards.
type creditKey struct {
	context string
	arm     int
}

// creditSum is the rewards pending for one creditKey: their sum and
// count, and the operation's bytes, the spans it ran and the intervals'
// lengths, summed over the reports.
type creditSum struct {
	sum    float64
	n      int
	bytes  float64
	span   time.Duration
	iv     time.Duration
	length time.Duration // the intervals merged (carried pulls): each round's mean report interval
	// openings counts the reports in which the node turned to the context
	// (its previous detected report was of another).
	openings int
}

func (s creditSum) add(o creditSum) creditSum {
	return creditSum{s.sum + o.sum, s.n + o.n, s.bytes + o.bytes, s.span + o.span, s.iv + o.iv, s.length + o.length, s.openings + o.openings}
}

// openingOnly reports whether every report of s opened its node's phase.
func (s creditSum) openingOnly() bool { return s.n > 0 && s.openings == s.n }

// DefaultMaxPull is how long one pull of CreditPhase lasts at most
// (Config.MaxPull), in report intervals: a phase of up to 2 s is one pull
// (4 rounds at 500 ms reports, 2 at the papers' 1 s), a longer one a pull
// every 2 s, its window drawn afresh as often.
const DefaultMaxPull = 2 * time.Second

// open reports whether the carried pull s may still be extended, pulls
// lasting at most limit.
func (s creditSum) open(limit time.Duration) bool { return s.length < limit }

// roundLength is the length a round's rewards x add to a pull: their mean
// report interval (1 s for reports that do not say).
func roundLength(x creditSum) time.Duration {
	if x.n > 0 && x.iv > 0 {
		return x.iv / time.Duration(x.n)
	}
	return time.Second
}

// reward is the pull's reward: with op-bandwidth, the bytes over the spans
// (the bandwidth while the operation ran, over every report merged);
// otherwise, or when the reports lack them, the mean reward.
func (s creditSum) reward(opBandwidth bool) float64 {
	if opBandwidth && s.bytes > 0 && s.span > 0 {
		return s.bytes / s.span.Seconds()
	}
	return s.sum / float64(s.n)
}

func (c *Council) reward(o access.Observation) float64 {
	switch c.cfg.Reward {
	case RewardPerProcess:
		return o.Bandwidth / float64(max(o.Processes, 1))
	case RewardServed:
		asked := float64(o.Requests) * o.ReqAvg
		if asked <= 0 {
			return 0
		}
		return float64(o.Bytes) / asked
	case RewardOpBandwidth:
		if bw := o.OpBandwidth(); bw > 0 {
			return bw
		}
	}
	return o.Bandwidth
}

// creditRound credits the round's pending rewards, each (context, arm)
// once, in a fixed order: with Config.Credit round at once, with their
// mean; with phase added to the carried pull of the same (context, arm)
// while it is open (shorter than MaxPull), a carried pull being credited
// when the round does not extend it, unless it is a phase's opening alone
// (SkippedOpening).
func (c *Council) creditRound() []Pull {
	opbw := c.cfg.Reward == RewardOpBandwidth
	var due []creditKey
	credit, skipped := map[creditKey]creditSum{}, map[creditKey]bool{}
	if c.cfg.Credit == CreditRound {
		credit, c.pending = c.pending, credit
	} else {
		for k, x := range c.pending {
			x.length = roundLength(x)
			a, ok := c.carry[k]
			switch {
			case ok && a.open(c.cfg.MaxPull):
				c.carry[k] = a.add(x)
			case ok:
				credit[k] = a
				c.carry[k] = x
			default:
				c.carry[k] = x
			}
		}
		for k, a := range c.carry {
			if _, ok := c.pending[k]; !ok {
				credit[k] = a
				skipped[k] = a.openingOnly() && c.pendingIn(k.context)
				delete(c.carry, k)
			}
		}
		clear(c.pending)
	}
	for k := range credit {
		due = append(due, k)
	}
	slices.SortFunc(due, func(a, b creditKey) int {
		if a.context != b.context {
			return strings.Compare(a.context, b.context)
		}
		return a.arm - b.arm
	})
	pulls := make([]Pull, 0, len(due))
	for _, k := range due {
		s := credit[k]
		r := s.reward(opbw && c.cfg.Credit == CreditPhase)
		pull := Pull{Context: k.context, Window: c.cfg.Windows[k.arm], Reward: r, Reports: s.n}
		if skipped[k] {
			pull.Skipped = SkippedOpening
		} else {
			c.teach(k.context, k.arm, r)
		}
		pulls = append(pulls, pull)
	}
	return pulls
}
