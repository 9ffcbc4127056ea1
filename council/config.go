package council

import (
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/sched"
)

// Config configures a Council core. Zero fields take the defaults listed.
type Config struct {
	Policy    string          // bandit policy by name (bandit.Names); default "egreedy"
	Options   bandit.Options  // policy options; zero values take the bandit package's defaults
	Windows   []time.Duration // the arms: TWINS windows to choose from (default sched.Windows)
	Default   time.Duration   // window in force before the first decision (default sched.DefaultWindow); must be one of Windows
	Consensus string          // Majority (default) or Bandwidth
	Reward    string          // RewardOpBandwidth (default), RewardBandwidth (the papers'), RewardPerProcess or RewardServed
	Timeout   time.Duration   // a round closes at most this long after its first report, even if known nodes are silent (default 500 ms)
	Nodes     int             // I/O nodes 0..Nodes-1 are known from the start (others become known when they report); with none known, the first round closes at its deadline
	Forget    int             // a known node that misses this many consecutive rounds is forgotten until it reports again (default 3)
	MaxNodes  int             // reports from node indexes >= MaxNodes are refused, bounding the state a rogue reporter can create (default 65536)
	Detector  Detector        // pattern detector (default detect.Default())
	// NoPlan makes each decision one window only, as the papers' Council.
	// By default a decision also carries a plan: a window for each direction
	// of requests, for the pattern that direction is expected to take next
	// (Decision.Plan), which I/O nodes apply as soon as their requests turn.
	NoPlan bool
	// Credit is how rewards teach the policies (Decision.Credit):
	//
	// CreditPhase (the default): the consecutive rounds in which a
	// context's reports ran one window are one pull, up to MaxPull of
	// intervals, whose reward is their bytes over their spans (Reward
	// op-bandwidth; the mean of their rewards otherwise); and a plan keeps
	// a direction's window while its context's pull is open
	// (PlanEntry.Held), so that a phase up to MaxPull long runs under one
	// window and is one pull. Why: a phase about as long as the interval
	// straddles two or three of them, and its tail, the last processes
	// finishing, earned a reward a third to a half of the rest (in the real
	// demo, 11 to 38 MB/s against 60 to 90 for the shared strided reads,
	// over most of the interval); credited apart, and often under the
	// window drawn at the boundary, the tails doubled the spread of the
	// reads' rewards (static runs: a standard deviation of 13 to 18 MB/s
	// around 56 to 78 per interval, 5 to 10 per phase) and gave the window
	// drawn for them a reward of the tail alone. A pull is credited when
	// the round after its last closes: that round may still extend it.
	//
	// CreditRound: each round credits each (context,
	// window) once, when it closes, with the mean of the rewards its nodes
	// reported under it: the I/O nodes of one round run one window through
	// the same second of one phase, so their rewards hardly differ (the real
	// demo: a standard deviation 10 times smaller within a round than
	// between rounds under one window).
	//
	// CreditNode: each I/O node's reward is a pull, as the papers' Council.
	// Counted apart, the nodes' rewards narrow a policy's estimates as if
	// they were independent samples, so one unlucky round can leave the best
	// window for good.
	//
	// Rewards waiting for a round's close or a pull's end are not in
	// snapshots.
	Credit string
	// MaxPull is how long one pull of CreditPhase lasts at most, in report
	// intervals (default DefaultMaxPull): a phase up to MaxPull long is one
	// pull, a longer one a pull every MaxPull and a last one of its tail.
	MaxPull time.Duration
	// Shadow starts the Council in shadow mode (SetShadow): it learns and
	// logs what it would decide, and every decision keeps Default (or a
	// pinned window) in force.
	Shadow bool
	// JobContext is how a report that carries its node's jobs
	// (councilmsg.Report.Jobs) is learned from: JobContextNode (the
	// default: the node's metrics; each job's pattern is detected and
	// logged), JobContextMix or JobContextDominant. Reports without jobs
	// are learned from alike under each.
	JobContext string
	// Guardrail keeps a share of each context's decisions at Default as a
	// control and falls back to it when the learned window does worse
	// (zero value: off).
	Guardrail Guardrail
	// Select configures the Council's one choice of scheduling algorithm
	// for the I/O nodes that select theirs with the group (reports with
	// councilmsg.SelectionGroup; Decision.Select). Without such nodes it
	// chooses nothing.
	Select SelectConfig
}

func (c Config) withDefaults() Config {
	if c.Policy == "" {
		c.Policy = DefaultPolicy
	}
	if len(c.Windows) == 0 {
		c.Windows = sched.Windows
	}
	c.Windows = slices.Clone(c.Windows)
	if c.Default == 0 {
		c.Default = sched.DefaultWindow
	}
	if c.Consensus == "" {
		c.Consensus = Majority
	}
	if c.Reward == "" {
		c.Reward = RewardOpBandwidth
	}
	if c.Credit == "" {
		c.Credit = CreditPhase
	}
	if c.JobContext == "" {
		c.JobContext = JobContextNode
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxPull == 0 {
		c.MaxPull = DefaultMaxPull
	}
	if c.Forget == 0 {
		c.Forget = DefaultForget
	}
	if c.MaxNodes == 0 {
		c.MaxNodes = DefaultMaxNodes
	}
	if c.Detector == nil {
		c.Detector = detect.Default()
	}
	c.Select = c.Select.withDefaults()
	return c
}

func (c Config) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	for i, w := range c.Windows {
		if w <= 0 {
			return bad("Windows[%d] = %v, want > 0", i, w)
		}
		if slices.Index(c.Windows, w) != i {
			return bad("window %v listed twice", w)
		}
	}
	switch {
	case slices.Index(c.Windows, c.Default) < 0:
		return bad("Default = %v is not one of Windows %v", c.Default, c.Windows)
	case c.Consensus != Majority && c.Consensus != Bandwidth:
		return bad("Consensus = %q, want %q or %q", c.Consensus, Majority, Bandwidth)
	case c.Credit != CreditPhase && c.Credit != CreditRound && c.Credit != CreditNode:
		return bad("Credit = %q, want %q, %q or %q", c.Credit, CreditPhase, CreditRound, CreditNode)
	case c.JobContext != JobContextMix && c.JobContext != JobContextDominant && c.JobContext != JobContextNode:
		return bad("JobContext = %q, want %q, %q or %q", c.JobContext, JobContextMix, JobContextDominant, JobContextNode)
	case c.Reward != RewardOpBandwidth && c.Reward != RewardBandwidth && c.Reward != RewardPerProcess && c.Reward != RewardServed:
		return bad("Reward = %q, want %q, %q, %q or %q", c.Reward, RewardOpBandwidth, RewardBandwidth, RewardPerProcess, RewardServed)
	case c.Timeout < 0:
		return bad("Timeout = %v, want > 0", c.Timeout)
	case c.MaxPull < 0:
		return bad("MaxPull = %v, want > 0", c.MaxPull)
	case c.Nodes < 0:
		return bad("Nodes = %d, want >= 0", c.Nodes)
	case c.Forget < 1:
		return bad("Forget = %d, want >= 1", c.Forget)
	case c.MaxNodes < 1 || c.Nodes > c.MaxNodes:
		return bad("MaxNodes = %d with Nodes = %d, want MaxNodes >= max(1, Nodes)", c.MaxNodes, c.Nodes)
	}
	if err := c.Select.validate(); err != nil {
		return err
	}
	return c.Guardrail.validate()
}
