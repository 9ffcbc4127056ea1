package council

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// Report is one Announcer report, as decoded by package councilmsg.
type Report = councilmsg.Report

// Detector classifies an observation's access pattern; *detect.Model is one.
// It returns access.Unknown when it cannot tell, and the class
// probabilities in access.Classes order.
type Detector interface {
	Detect(o access.Observation) (access.Class, [3]float64)
}

var _ Detector = (*detect.Model)(nil)

// Errors returned by the core.
var (
	ErrBadConfig = errors.New("council: invalid configuration")
	ErrInvalid   = errors.New("council: invalid report")
	ErrStale     = errors.New("council: stale or duplicate report")
	ErrSnapshot  = errors.New("council: snapshot does not fit this configuration")
)

// Consensus rules for the exploitation step.
const (
	Majority  = "majority"  // the window recommended for the most I/O nodes (Bez et al., FGCS 2020, Algorithm 1 line 17)
	Bandwidth = "bandwidth" // the window recommended for the most bandwidth (each vote weighted by the node's bandwidth)
)

// Reward functions: what one interval's observation is worth to the window
// that was in force during it.
const (
	RewardBandwidth  = "bandwidth"   // bytes per second (the papers)
	RewardPerProcess = "per-process" // bytes per second per client process: normalises by demand (Bez et al., FGCS 2020, V-F)
	RewardServed     = "served"      // bytes completed / bytes requested in the interval: normalises by demand
	// RewardOpBandwidth is the bandwidth of the interval's majority
	// operation while it ran (access.Observation.OpBandwidth: its bytes over
	// the span from its first request's arrival to its last one's end in
	// the interval); the papers' bandwidth for a report that does not carry
	// them. A phase shorter than the interval otherwise earns the same
	// reward under every window: its bytes, over a second.
	RewardOpBandwidth = "op-bandwidth"
)

// Defaults of the Config fields.
const (
	DefaultPolicy   = "thompson-pool"
	DefaultTimeout  = 500 * time.Millisecond
	DefaultForget   = 3
	DefaultMaxNodes = 1 << 16
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
	// Guardrail keeps a share of each context's decisions at Default as a
	// control and falls back to it when the learned window does worse
	// (zero value: off).
	Guardrail Guardrail
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
	return c.Guardrail.validate()
}

// NodeReport is what the Council made of one I/O node's report in a round:
// the decision log's per-node entry.
type NodeReport struct {
	Node      int           `json:"node"`
	Seq       uint64        `json:"seq"`
	Round     uint64        `json:"round"`          // decision in force at the node when it reported
	Reports   int           `json:"reports"`        // reports from the node in this round (the latest is shown)
	Late      bool          `json:"late,omitempty"` // observed under a decision older than the last: credited, but neither counted in the round nor voting
	Idle      bool          `json:"idle,omitempty"` // no request received: no pattern, no reward, no vote
	Op        string        `json:"op,omitempty"`
	Pattern   string        `json:"pattern,omitempty"` // detected class
	Probs     [3]float64    `json:"probs"`             // class probabilities (FPP, SC, SS)
	Context   string        `json:"context,omitempty"` // bandit context: pattern/op
	Bandwidth float64       `json:"bw"`                // bytes per second
	Window    time.Duration `json:"win_ns"`            // window in force during the interval
	Credited  bool          `json:"credited"`          // the reward updated (context, window)
	Reward    float64       `json:"reward"`
	Recommend time.Duration `json:"rec_ns,omitempty"` // best window for the node's context by the estimates when the round closed
	// Features are the measured detection features of the report
	// (access.Observation.Features, the first access.NumMeasuredFeatures),
	// so that a run's log can be labelled and trained on (detect's
	// decision-log source).
	Features []float64 `json:"feat,omitempty"`
	Requests int64     `json:"reqs,omitempty"` // requests received in the interval
	// Interval is the length of the interval the report covers (the
	// Announcer's; 1 s by default).
	Interval time.Duration `json:"iv_ns,omitempty"`
}

// Decision is the outcome of one round.
type Decision struct {
	Round   uint64        `json:"round"`
	At      time.Duration `json:"at_ns"`  // when the round closed (the caller's clock)
	Reason  string        `json:"reason"` // "all": every known node reported; "deadline": Timeout passed
	Window  time.Duration `json:"win_ns"` // the window every I/O node applies from now on
	Explore bool          `json:"explore"`
	Prob    float64       `json:"prob"`              // probability the decision rule chose Window
	Context string        `json:"context,omitempty"` // context whose policy governed exploration ("" when nobody voted)
	Voters  int           `json:"voters"`            // nodes that voted (reported I/O with a detected pattern)
	Nodes   []NodeReport  `json:"nodes"`             // one per reporting node, by node index
	Missing []int         `json:"missing,omitempty"` // known nodes that did not report
	Late    []NodeReport  `json:"late,omitempty"`    // late reports received since the previous decision
	// Plan is the window for each direction of requests (reads first),
	// for the context that direction is expected to take next; absent with
	// Config.NoPlan, and for a direction never seen.
	Plan []PlanEntry `json:"plan,omitempty"`
	// Credit is how the round's rewards taught the policies (Config.Credit):
	// "phase", "round" or "node". Logs written before it was recorded
	// credited each node.
	Credit string `json:"credit,omitempty"`
	// Pulls are the rewards credited when the round closed, in the order
	// credited (Credit "phase" and "round"; with "node" each credited node
	// report is a pull of its own), and those set aside (Pull.Skipped).
	Pulls []Pull `json:"pulls,omitempty"`
	// Shadow: the Council was in shadow mode; learning's choices are in
	// Learned (and each plan entry's), the windows in force are Default's
	// or pins'.
	Shadow bool `json:"shadow,omitempty"`
	// Control says why Window is not learning's choice: ControlShadow,
	// ControlPin, ControlGuardrail or ControlShare ("": it is). Learned and
	// LearnedProb are then learning's choice and the probability it had.
	Control     string        `json:"control,omitempty"`
	Learned     time.Duration `json:"learned_ns,omitempty"`
	LearnedProb float64       `json:"learned_prob,omitempty"`
	// Guardrail lists the guardrail's fallbacks (and, with a cool-down,
	// returns to learning) decided when the round closed.
	Guardrail []GuardrailEvent `json:"guardrail,omitempty"`
}

// Pull is one reward a policy was taught.
type Pull struct {
	Context string        `json:"context"`
	Window  time.Duration `json:"win_ns"`
	Reward  float64       `json:"reward"`
	Reports int           `json:"reports"` // node reports merged into it
	// Skipped, when set, says why this pull taught nothing (SkippedOpening).
	Skipped string `json:"skipped,omitempty"`
}

// SkippedOpening is Pull.Skipped of a phase's opening set aside: with
// Config.Credit phase, a pull made only of reports in which the nodes
// turned to a context (the previous phase's tail and the new one's first
// requests in one interval), cut off because the next round went on in
// that context under another window. Alone, such an interval measures the
// turn, not the window: in real demo runs it earned a read window 20 to 60%
// of the context's median reward (the first read phase, which started
// under the write plan's window and turned to its own plan's a round
// later), and that one reward widened the pooled spread that decides
// which windows stay plausible for the whole run. Merged with the rounds
// after it, as when the window holds, it counts as part of the phase.
const SkippedOpening = "a phase's opening interval alone: it measures the turn between phases, not the window"

// Credit modes of Decision.Credit.
const (
	CreditPhase = "phase"
	CreditRound = "round"
	CreditNode  = "node"
)

// PlanEntry is a decision's window for one direction of requests.
type PlanEntry struct {
	Op      string        `json:"op"`      // "read" or "write"
	Context string        `json:"context"` // context expected next for Op
	Window  time.Duration `json:"win_ns"`
	Explore bool          `json:"explore,omitempty"` // Window was drawn to explore Context
	Prob    float64       `json:"prob"`              // probability with which Window was chosen
	// Held: Window is the previous plan's, kept because Context's pull
	// under it is still open (Config.Credit phase); Prob is then 1.
	Held bool `json:"held,omitempty"`
	// Control, Learned and LearnedProb: as Decision's, for this entry.
	Control     string        `json:"control,omitempty"`
	Learned     time.Duration `json:"learned_ns,omitempty"`
	LearnedProb float64       `json:"learned_prob,omitempty"`
}

// PlanWindow returns the plan's window for op (0: none).
func (d Decision) PlanWindow(op rw.Op) time.Duration {
	for _, e := range d.Plan {
		if e.Op == op.String() {
			return e.Window
		}
	}
	return 0
}

// Wire returns the message broadcast for d.
func (d Decision) Wire() councilmsg.Decision {
	return councilmsg.Decision{Round: d.Round, Window: d.Window, Explore: d.Explore, Prob: d.Prob, Nodes: len(d.Nodes), Reason: d.Reason,
		Plan: rw.Pair[time.Duration]{Read: d.PlanWindow(rw.Read), Write: d.PlanWindow(rw.Write)}}
}

type nodeState struct {
	inst      uint64
	seq       uint64
	missed    int
	known     bool
	scheduler string // the algorithm the node last reported running ("": not said)
	context   string // the context of the node's last detected report
}

// Council is the Council's core: a pure, deterministic state machine. It
// never starts goroutines, reads the clock or does I/O: the caller passes
// the time of every event (time must not go backwards). Not safe for
// concurrent use.
type Council struct {
	cfg    Config
	rng    *rand.Rand
	bands  *bandit.Contextual
	nodes  map[int]*nodeState
	ids    []int  // keys of nodes, sorted
	round  uint64 // rounds closed
	window time.Duration

	open     map[int]*NodeReport // reports of the open round
	late     []NodeReport        // late reports since the last decision
	known    int                 // nodes with known set
	blind    bool                // the open round began with no known node: it closes at its deadline
	heard    int                 // known nodes that reported in the open round
	first    time.Duration       // first report of the open round
	deadline time.Duration

	// The plan's state: how often a node's context was followed by each
	// other (from -> to -> count), the context last seen for each
	// direction, and the plan of the last decision.
	next   map[string]map[string]int
	lastOf map[rw.Op]string
	plan   []PlanEntry

	// pending holds (Config.Credit phase or round) the rewards of the open
	// round by (context, arm), credited when it closes; carry (phase) the
	// pulls of closed rounds that the next round may still extend.
	pending map[creditKey]creditSum
	carry   map[creditKey]creditSum

	// The operator's state (operator.go): shadow mode, pinned windows by
	// context, the guardrail's fallbacks by context and its recent pulls.
	shadow    bool
	pins      map[string]time.Duration
	fallbacks map[string]Fallback
	guard     map[string][]guardSample
}

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

// New returns a Council core drawing its random choices from rng.
func New(cfg Config, rng *rand.Rand) (*Council, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: nil rng", ErrBadConfig)
	}
	bands, err := bandit.NewContextual(cfg.Policy, len(cfg.Windows), cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	c := &Council{cfg: cfg, rng: rng, bands: bands, nodes: map[int]*nodeState{}, window: cfg.Default, open: map[int]*NodeReport{},
		next: map[string]map[string]int{}, lastOf: map[rw.Op]string{}, pending: map[creditKey]creditSum{}, carry: map[creditKey]creditSum{},
		shadow: cfg.Shadow, pins: map[string]time.Duration{}, fallbacks: map[string]Fallback{}, guard: map[string][]guardSample{}}
	for n := range cfg.Nodes {
		c.nodes[n] = &nodeState{known: true}
		c.ids = append(c.ids, n)
	}
	c.known = cfg.Nodes
	return c, nil
}

// Config returns the configuration in use, defaults filled in.
func (c *Council) Config() Config { return c.cfg }

// Window returns the window decided last (Config.Default before the first decision).
func (c *Council) Window() time.Duration { return c.window }

// Round returns the number of rounds closed.
func (c *Council) Round() uint64 { return c.round }

// Known returns the number of I/O nodes the Council currently waits for.
func (c *Council) Known() int { return c.known }

func (c *Council) arm(w time.Duration) int { return slices.Index(c.cfg.Windows, w) }

// Context returns the bandit context of a pattern and operation, such as "SS/write".
func Context(p access.Class, op rw.Op) string {
	switch op {
	case rw.Read:
		switch p {
		case access.FPP:
			return "FPP/read"
		case access.SC:
			return "SC/read"
		case access.SS:
			return "SS/read"
		}
	case rw.Write:
		switch p {
		case access.FPP:
			return "FPP/write"
		case access.SC:
			return "SC/write"
		case access.SS:
			return "SS/write"
		}
	}
	return p.String() + "/" + op.String()
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

// Observe takes one report received at time now: it detects the pattern of
// the reported interval, credits the interval's reward to (pattern,
// operation, window in force during the interval), and records the node's
// recommendation for the open round. Idle intervals count as the node having
// reported but teach nothing. A report that is invalid (ErrInvalid) or
// repeats an earlier sequence number of the same Announcer instance
// (ErrStale) changes nothing.
func (c *Council) Observe(now time.Duration, r Report) error {
	o := r.Obs
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if r.Instance == 0 || r.Seq == 0 {
		return fmt.Errorf("%w: zero instance or sequence", ErrInvalid)
	}
	if o.Node >= c.cfg.MaxNodes {
		return fmt.Errorf("%w: node %d >= MaxNodes %d", ErrInvalid, o.Node, c.cfg.MaxNodes)
	}
	s := c.nodes[o.Node]
	if s == nil {
		s = &nodeState{}
		c.nodes[o.Node] = s
		i, _ := slices.BinarySearch(c.ids, o.Node)
		c.ids = slices.Insert(c.ids, i, o.Node)
	}
	if s.inst == r.Instance && r.Seq <= s.seq {
		return fmt.Errorf("%w: node %d seq %d after %d", ErrStale, o.Node, r.Seq, s.seq)
	}
	s.inst, s.seq = r.Instance, r.Seq
	if r.Scheduler != "" {
		s.scheduler = r.Scheduler
	}

	// A report observed under a decision older than the last one belongs
	// to a round already closed (a straggler): it teaches, but it neither
	// opens nor completes the open round, and does not vote. (Round 0 is a
	// node that has not received any decision yet: it joins the open round.)
	if r.Round != 0 && r.Round < c.round {
		nr := NodeReport{Node: o.Node, Seq: r.Seq, Round: r.Round, Reports: 1, Late: true, Bandwidth: o.Bandwidth, Window: o.Window, Interval: o.Interval}
		c.learn(&nr, o)
		if len(c.late) < c.cfg.MaxNodes {
			c.late = append(c.late, nr)
		}
		return nil
	}

	if len(c.open) == 0 {
		c.first, c.deadline = now, now+c.cfg.Timeout
		c.blind = c.known == 0
	}
	if !s.known {
		s.known = true
		c.known++
	}
	nr := &NodeReport{Node: o.Node, Seq: r.Seq, Round: r.Round, Reports: 1, Bandwidth: o.Bandwidth, Window: o.Window, Interval: o.Interval}
	if prev := c.open[o.Node]; prev != nil {
		nr.Reports = prev.Reports + 1
	} else {
		c.heard++
	}
	c.open[o.Node] = nr
	c.learn(nr, o)
	return nil
}

// learn detects the pattern of o and credits its reward, filling nr.
func (c *Council) learn(nr *NodeReport, o access.Observation) {
	// An interval that received no request shows no pattern: with no I/O at
	// all (Bez et al., FGCS 2020: ignored), or with only the tail of earlier requests
	// completing, whose features are all zero and whose operation is unknown.
	// Crediting it would invent a context; it teaches nothing and does not vote.
	if o.Idle() || o.Requests == 0 || !o.Op.Valid() {
		nr.Idle = true
		return
	}
	nr.Op = o.Op.String()
	x := o.Features()
	nr.Features, nr.Requests = x[:access.NumMeasuredFeatures:access.NumMeasuredFeatures], o.Requests
	class, probs := c.cfg.Detector.Detect(o)
	nr.Probs = probs
	if class.Index() < 0 {
		return
	}
	nr.Pattern = class.String()
	nr.Context = Context(class, o.Op)
	opening := 0
	if c.nodes[o.Node].context != nr.Context {
		opening = 1
	}
	c.noteContext(o.Node, nr.Context, o.Op)
	p := c.bands.Policy(nr.Context)
	if a := c.arm(o.Window); a >= 0 {
		nr.Reward = c.reward(o)
		nr.Credited = true
		// A late report's round has closed, credited without it: it is a
		// pull of its own.
		if c.cfg.Credit != CreditNode && !nr.Late {
			k := creditKey{nr.Context, a}
			c.pending[k] = c.pending[k].add(creditSum{sum: nr.Reward, n: 1, bytes: float64(o.OpBytes), span: o.OpSpan, iv: o.Interval, openings: opening})
		} else {
			c.teach(nr.Context, a, nr.Reward)
		}
	}
	nr.Recommend = c.cfg.Windows[p.Best()]
}

// Poll closes the open round if it is due at time now: every known I/O node
// has reported, or the round's deadline has passed. It returns ok=false when
// the round is not due, with wakeAt the time to call Poll again (zero: no
// round is open; call after the next Observe).
func (c *Council) Poll(now time.Duration) (d Decision, ok bool, wakeAt time.Duration) {
	if len(c.open) == 0 {
		return Decision{}, false, 0
	}
	// A round that began knowing no node (first start without
	// Config.Nodes, or after a restart) waits for its deadline to discover
	// every node.
	all := c.heard >= c.known && !c.blind
	if !all && now < c.deadline {
		return Decision{}, false, c.deadline
	}
	d = c.close(now)
	if all {
		d.Reason = "all"
	} else {
		d.Reason = "deadline"
	}
	return d, true, 0
}

// Deadline returns when the open round closes at the latest (zero: no round open).
func (c *Council) Deadline() time.Duration {
	if len(c.open) == 0 {
		return 0
	}
	return c.deadline
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

// pendingIn reports whether the open round has rewards of context ctx.
func (c *Council) pendingIn(ctx string) bool {
	for k := range c.pending {
		if k.context == ctx {
			return true
		}
	}
	return false
}

func (c *Council) close(now time.Duration) Decision {
	pulls := c.creditRound()
	c.round++
	d := Decision{Round: c.round, At: now, Credit: c.cfg.Credit, Pulls: pulls, Shadow: c.shadow}
	d.Guardrail = c.checkGuardrail()
	d.Nodes = make([]NodeReport, 0, len(c.open))
	for _, n := range c.ids {
		s := c.nodes[n]
		if nr := c.open[n]; nr != nil {
			s.missed = 0
			d.Nodes = append(d.Nodes, *nr)
			continue
		}
		if s.known {
			d.Missing = append(d.Missing, n)
			s.missed++
			if s.missed >= c.cfg.Forget {
				s.known = false
				c.known--
			}
		}
	}
	clear(c.open)
	c.heard = 0
	d.Late, c.late = c.late, nil

	// Votes: one per node with a detected pattern, weighted by the rule.
	k := len(c.cfg.Windows)
	votes := make([]float64, k)
	bw := make([]float64, k)
	contexts := map[string]int{}
	greedy := map[string]int{} // greedy arm per context, by the estimates at close
	for i := range d.Nodes {
		nr := &d.Nodes[i]
		if nr.Context == "" {
			continue
		}
		a, ok := greedy[nr.Context]
		if !ok {
			a = c.bands.Policy(nr.Context).Best()
			greedy[nr.Context] = a
		}
		// The recommendation reflects every reward of the round, including
		// those that arrived after this node's report.
		nr.Recommend = c.cfg.Windows[a]
		d.Voters++
		contexts[nr.Context]++
		bw[a] += nr.Bandwidth
		if c.cfg.Consensus == Bandwidth {
			votes[a] += nr.Bandwidth
		} else {
			votes[a]++
		}
	}
	if d.Voters == 0 {
		// Nothing detectable: keep the window in force (Bez et al., FGCS 2020: a decision
		// is made only when the metrics allow a detection).
		d.Window, d.Prob = c.window, 1
		d.Plan = c.steerKept(&d)
		c.window, c.plan = d.Window, d.Plan
		return d
	}
	consensus := 0
	for a := 1; a < k; a++ {
		if votes[a] > votes[consensus] || votes[a] == votes[consensus] && bw[a] > bw[consensus] {
			consensus = a
		}
	}
	// The context most nodes are in governs exploration (ties: first by name).
	for ctx, n := range contexts {
		if n > contexts[d.Context] || n == contexts[d.Context] && (d.Context == "" || ctx < d.Context) {
			d.Context = ctx
		}
	}
	p := c.bands.Policy(d.Context)
	ch := p.Select(c.rng)
	best := p.Best()
	// Decision rule: the governing policy draws an arm; its greedy arm
	// stands for exploitation and is replaced by the consensus, any other
	// arm is exploration and is taken as drawn.
	arm := consensus
	if ch.Arm != best {
		arm, d.Explore = ch.Arm, true
	}
	d.Prob = propensity(p, ch, arm, best, consensus)
	d.Window = c.cfg.Windows[arm]
	if c.cfg.NoPlan {
		st := c.steer(d.Context, d.Window, d.Prob, d.Explore, func(a int) float64 { return propensity(p, ch, a, best, consensus) })
		st.apply(&d.Window, &d.Prob, &d.Explore, &d.Control, &d.Learned, &d.LearnedProb)
	} else {
		c.plan = c.makePlan(d, ch)
		d.Plan = c.plan
		// A held entry of the governing context is the decision too: the
		// window stays for the pull that is still open. So is an entry the
		// operator's controls steered: learning's choice is then Learned.
		for _, e := range c.plan {
			if e.Context != d.Context {
				continue
			}
			if e.Control != "" {
				d.Learned, d.LearnedProb, d.Control = d.Window, d.Prob, e.Control
				d.Window, d.Explore, d.Prob = e.Window, false, e.Prob
			} else if e.Held {
				d.Window, d.Explore, d.Prob = e.Window, false, 1
			}
		}
	}
	c.window = d.Window
	return d
}

// noteContext records that node reported context ctx (of direction op): a
// transition from its previous context, and the last context of op.
func (c *Council) noteContext(node int, ctx string, op rw.Op) {
	s := c.nodes[node]
	if s.context != "" && s.context != ctx {
		m := c.next[s.context]
		if m == nil {
			m = map[string]int{}
			c.next[s.context] = m
		}
		m[ctx]++
	}
	s.context = ctx
	c.lastOf[op] = ctx
}

// expect returns the context direction op is expected to take after the
// governing context from: its own when from is of direction op, else the
// successor of from of direction op seen most often (ties: first by name),
// else the context op was last seen in ("" if never).
func (c *Council) expect(from string, op rw.Op) string {
	suffix := "/" + op.String()
	if strings.HasSuffix(from, suffix) {
		return from
	}
	best, n := "", 0
	for to, k := range c.next[from] {
		if strings.HasSuffix(to, suffix) && (k > n || k == n && to < best) {
			best, n = to, k
		}
	}
	if best != "" {
		return best
	}
	return c.lastOf[op]
}

// makePlan returns decision d's plan: for each direction, the context
// expected next and that context's own choice of window: for the
// governing context's direction, the arm its policy drew for d (gov), and
// for the other, a draw from that context's policy (its exploration
// included). Not the consensus: a round of nodes in two phases votes
// across contexts, and each direction's window is its own context's.
func (c *Council) makePlan(d Decision, gov bandit.Choice) []PlanEntry {
	var plan []PlanEntry
	for _, op := range [...]rw.Op{rw.Read, rw.Write} {
		ctx := c.expect(d.Context, op)
		if ctx == "" {
			continue
		}
		_, _, forced := c.forced(ctx)
		if e, ok := c.held(op, ctx); ok && !forced {
			plan = append(plan, e)
			continue
		}
		p := c.bands.Policy(ctx)
		ch := gov
		if ctx != d.Context {
			ch = p.Select(c.rng)
		}
		best := p.Best()
		e := PlanEntry{Op: op.String(), Context: ctx, Window: c.cfg.Windows[ch.Arm], Explore: ch.Arm != best,
			Prob: propensity(p, ch, ch.Arm, best, best)}
		st := c.steer(ctx, e.Window, e.Prob, e.Explore, func(a int) float64 { return propensity(p, ch, a, best, best) })
		st.apply(&e.Window, &e.Prob, &e.Explore, &e.Control, &e.Learned, &e.LearnedProb)
		plan = append(plan, e)
	}
	return plan
}

// held returns the previous plan's entry for op, held, when its context is
// still ctx and its pull under the entry's window is open: the phase
// finishes under the window it began with, one pull.
func (c *Council) held(op rw.Op, ctx string) (PlanEntry, bool) {
	for _, e := range c.plan {
		if e.Op != op.String() || e.Context != ctx {
			continue
		}
		if s, ok := c.carry[creditKey{ctx, c.arm(e.Window)}]; ok && s.open(c.cfg.MaxPull) {
			e.Held, e.Prob, e.Explore = true, 1, false
			e.Control, e.Learned, e.LearnedProb = "", 0, 0
			return e, true
		}
	}
	return PlanEntry{}, false
}

// propensity returns the probability that the decision rule picks arm:
// P(policy draws arm) for an exploration arm, plus P(policy draws its
// greedy arm) when arm is the consensus. It is exact for policies that
// implement bandit.Distribution and falls back to the policy's own Choice.Prob.
func propensity(p bandit.Policy, ch bandit.Choice, arm, best, consensus int) float64 {
	prob := ch.Prob
	if dist, ok := p.(bandit.Distribution); ok {
		probs := dist.Probs()
		if len(probs) == p.Arms() {
			prob = 0
			if arm != best {
				prob += probs[arm]
			}
			if arm == consensus {
				prob += probs[best]
			}
		}
	}
	if math.IsNaN(prob) || prob <= 0 || prob > 1 {
		prob = min(max(prob, math.SmallestNonzeroFloat64), 1)
		if math.IsNaN(prob) {
			prob = 1
		}
	}
	return prob
}

// Status is a summary of the learned state, for /status.
type Status struct {
	Round    uint64          `json:"round"`
	Window   time.Duration   `json:"win_ns"`
	Known    int             `json:"known_nodes"`
	Policy   string          `json:"policy"`
	Windows  []time.Duration `json:"windows_ns"`
	Contexts []ContextStatus `json:"contexts"`
	Nodes    []NodeStatus    `json:"nodes"`
	Operator OperatorStatus  `json:"operator"`
}

// NodeStatus is what the Council knows of one I/O node.
type NodeStatus struct {
	Node      int    `json:"node"`
	Scheduler string `json:"scheduler,omitempty"` // the algorithm it last reported running ("": never said)
}

// ContextStatus is one bandit context's estimates.
type ContextStatus struct {
	Context string        `json:"context"`
	Values  []float64     `json:"values"`
	Counts  []int64       `json:"counts"`
	Best    time.Duration `json:"best_ns"`
}

// Status returns the current learned state, contexts in sorted order.
func (c *Council) Status() Status {
	st := Status{Round: c.round, Window: c.window, Known: c.Known(), Policy: c.cfg.Policy, Windows: slices.Clone(c.cfg.Windows)}
	for _, ctx := range c.bands.Contexts() {
		p := c.bands.Policy(ctx)
		st.Contexts = append(st.Contexts, ContextStatus{Context: ctx, Values: p.Values(), Counts: p.Counts(), Best: c.cfg.Windows[p.Best()]})
	}
	for _, id := range c.ids {
		st.Nodes = append(st.Nodes, NodeStatus{Node: id, Scheduler: c.nodes[id].scheduler})
	}
	st.Operator = c.Operator()
	return st
}

// snapshot is the persisted learned state, versioned.
type snapshot struct {
	V       int             `json:"v"`
	Round   uint64          `json:"round"`
	Window  time.Duration   `json:"win_ns"`
	Policy  string          `json:"policy"`
	Windows []time.Duration `json:"windows_ns"`
	Bandits json.RawMessage `json:"bandits"`
	// Next is the plan's count of context transitions (absent in
	// snapshots of Councils that made no plan).
	Next map[string]map[string]int `json:"next,omitempty"`
	// The operator's state: pinned windows by context, the guardrail's
	// fallbacks, shadow mode (absent: none, off).
	Pins      map[string]time.Duration `json:"pins,omitempty"`
	Fallbacks []Fallback               `json:"fallbacks,omitempty"`
	Shadow    bool                     `json:"shadow,omitempty"`
}

// Snapshot returns the learned state (round counter, window in force, every
// context's policy) as versioned JSON. The open round is not included.
func (c *Council) Snapshot() ([]byte, error) {
	b, err := c.bands.MarshalJSON()
	if err != nil {
		return nil, err
	}
	s := snapshot{V: 1, Round: c.round, Window: c.window, Policy: c.cfg.Policy, Windows: c.cfg.Windows, Bandits: b, Next: c.next, Shadow: c.shadow}
	if len(c.pins) > 0 {
		s.Pins = c.pins
	}
	s.Fallbacks = c.Operator().Fallbacks
	return json.Marshal(s)
}

// Restore replaces the learned state with a Snapshot's. The snapshot must
// come from a Council with the same policy and windows (ErrSnapshot); on
// error the state is unchanged.
func (c *Council) Restore(data []byte) error {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.V != 1 {
		return fmt.Errorf("%w: version %d", ErrSnapshot, s.V)
	}
	if s.Policy != c.cfg.Policy || !slices.Equal(s.Windows, c.cfg.Windows) {
		return fmt.Errorf("%w: learned with policy %q over windows %v, configured %q over %v (configure policy %q and those windows to continue it, or start afresh)",
			ErrSnapshot, s.Policy, s.Windows, c.cfg.Policy, c.cfg.Windows, s.Policy)
	}
	if c.arm(s.Window) < 0 {
		return fmt.Errorf("%w: window %v not among windows", ErrSnapshot, s.Window)
	}
	bands, err := bandit.NewContextual(c.cfg.Policy, len(c.cfg.Windows), c.cfg.Options)
	if err != nil {
		return err
	}
	if err := bands.UnmarshalJSON(s.Bandits); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	for _, ctx := range bands.Contexts() {
		if p := bands.Policy(ctx); p.Arms() != len(c.cfg.Windows) {
			return fmt.Errorf("%w: context %q has %d arms, want %d", ErrSnapshot, ctx, p.Arms(), len(c.cfg.Windows))
		}
	}
	if s.Next == nil {
		s.Next = map[string]map[string]int{}
	}
	pins, fallbacks, err := c.restoreOperator(s.Pins, s.Fallbacks)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	c.bands, c.round, c.window, c.next = bands, s.Round, s.Window, s.Next
	c.pins, c.fallbacks = pins, fallbacks
	c.shadow = s.Shadow || c.cfg.Shadow
	return nil
}
