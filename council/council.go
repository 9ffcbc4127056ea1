package council

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
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

	group *groupSelection // the scheduling algorithm of the group (groupsched.go)
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
		shadow: cfg.Shadow, pins: map[string]time.Duration{}, fallbacks: map[string]Fallback{}, guard: map[string][]guardSample{},
		group: newGroupSelection(cfg.Select)}
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
