package council

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
)

// DefaultSelectFrom are the algorithms the Council chooses among for the
// group by default: AGIOS's five, as "adaptio forward --select-from".
var DefaultSelectFrom = []string{"mlf", "to-agg", "sjf", "to", "noop"}

// SelectConfig configures the Council's one choice of scheduling algorithm
// for the I/O nodes that select theirs with the group (reports with
// councilmsg.SelectionGroup). Zero fields take the defaults listed.
type SelectConfig struct {
	// Schedulers are the algorithms to choose among (default
	// DefaultSelectFrom), names of package sched.
	Schedulers []string
	// Policy is the chooser: selection.PolicySettle (the default),
	// selection.PolicyAGIOS, or a bandit policy by name, as
	// selection.DriverConfig.Policy.
	Policy string
	// Settle configures selection.PolicySettle.
	Settle selection.SettleConfig
	// Seed seeds the draws of the policies that draw (settle draws
	// nothing).
	Seed uint64
}

func (c SelectConfig) withDefaults() SelectConfig {
	if len(c.Schedulers) == 0 {
		c.Schedulers = DefaultSelectFrom
	}
	c.Schedulers = slices.Clone(c.Schedulers)
	if c.Policy == "" {
		c.Policy = selection.PolicySettle
	}
	return c
}

func (c SelectConfig) validate() error {
	for i, s := range c.Schedulers {
		if s == "dynamic" || s == "pattern" || !slices.Contains(sched.Names(), s) {
			return fmt.Errorf("%w: Select.Schedulers[%d] = %q, want one of %v", ErrBadConfig, i, s, sched.Names())
		}
		if slices.Index(c.Schedulers, s) != i {
			return fmt.Errorf("%w: Select.Schedulers lists %q twice", ErrBadConfig, s)
		}
	}
	if _, err := c.driver(0, rand.New(rand.NewPCG(c.Seed, 0))); err != nil {
		return fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	return nil
}

// driver is the simulator's one choice for every node (selection.Driver
// with Shared) whose periods are the Council's rounds: each round fed to it
// closes a period (a period of 1 ns is always over), of the length since
// the round before.
func (c SelectConfig) driver(start time.Duration, rng *rand.Rand) (*selection.Driver, error) {
	return selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: c.Schedulers}, Period: time.Nanosecond,
		Policy: c.Policy, Settle: c.Settle, Shared: true, Start: start}, 1, rng)
}

// GroupChoice is a decision's scheduling algorithm for the group: the
// decision log's record of the Council's choice and why.
type GroupChoice struct {
	// Scheduler is the algorithm every node that follows the group runs
	// from this decision on (councilmsg.Decision.Scheduler).
	Scheduler string `json:"sched"`
	// Reason is why: the chooser's, when the round was judged ("explore",
	// "settled": the algorithm in force stays, no other estimated faster
	// by more than the margin, "estimates": another is, "draw" for the
	// policies that draw), or why the round was not ("first": the first
	// choice, when a node first follows; "transition": a node that follows
	// ran another algorithm, it had not applied the group's yet;
	// "missing": a node that follows did not report; "idle": the nodes
	// moved no bytes).
	Reason string `json:"reason"`
	// Changed: Scheduler is not the algorithm in force during the round.
	Changed bool `json:"changed,omitempty"`
	// Ran is the algorithm in force during the round.
	Ran string `json:"ran,omitempty"`
	// Nodes are the following nodes that reported in the round; Behind
	// those of them that ran another algorithm, Missing the following
	// nodes that did not report.
	Nodes   []int `json:"nodes"`
	Behind  []int `json:"behind,omitempty"`
	Missing []int `json:"missing,omitempty"`
	// Bytes and ReadBytes are the round's, summed over Nodes; Seconds its
	// length (since the round before). A judged round teaches Ran these.
	Bytes     int64   `json:"bytes"`
	ReadBytes int64   `json:"read_bytes"`
	Seconds   float64 `json:"secs,omitempty"`
	// Estimates are settle's estimated times, in seconds, for the bytes of
	// the measurements that count (absent while exploring).
	Estimates map[string]float64 `json:"estimates_s,omitempty"`
}

// Reasons of GroupChoice besides the chooser's.
const (
	GroupFirst      = "first"
	GroupTransition = "transition"
	GroupMissing    = "missing"
	GroupIdle       = "idle"
)

// GroupReasons lists every GroupChoice.Reason, for pre-registering
// metrics.
var GroupReasons = []string{"explore", "settled", "estimates", "draw", GroupFirst, GroupTransition, GroupMissing, GroupIdle}

// groupSelection is the Council's choice for the group: the reports of
// the nodes that follow it, summed each round into one period of the
// simulator's one choice for every node (eval's RunDriver with
// DriverConfig.Shared: the same Driver, chooser and figures).
type groupSelection struct {
	cfg    SelectConfig
	rng    *rand.Rand
	dr     *selection.Driver   // nil until a node follows
	follow map[int]uint64      // node -> round closed after its last report that followed
	open   map[int]groupReport // the open round's reports of following nodes
	last   time.Duration       // when the round before closed
}

type groupReport struct {
	sched string // the algorithm the node ran at the end of its interval
	f     selection.Figures
}

func newGroupSelection(cfg SelectConfig) *groupSelection {
	return &groupSelection{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x67726f7570)), follow: map[int]uint64{}, open: map[int]groupReport{}}
}

// observe takes a report of the open round (not a late one).
func (g *groupSelection) observe(r Report) {
	node := r.Obs.Node
	if r.Selection != councilmsg.SelectionGroup {
		delete(g.follow, node) // it stopped following (restarted alone)
		delete(g.open, node)
		return
	}
	prev := g.open[node] // a second report in one round: two intervals
	g.open[node] = groupReport{sched: r.Scheduler, f: prev.f.Add(selection.FiguresOf(r.Obs))}
}

// close closes round at now: it returns the group's algorithm from now
// on, or nil when no node follows (forget: rounds a following node may
// miss before it is no longer waited for).
func (g *groupSelection) close(now time.Duration, round uint64, forget int) *GroupChoice {
	defer func() { clear(g.open); g.last = now }()
	for n := range g.open {
		g.follow[n] = round
	}
	for n, at := range g.follow {
		if round-at >= uint64(forget) {
			delete(g.follow, n)
		}
	}
	if len(g.follow) == 0 {
		return nil
	}
	if g.dr == nil {
		dr, err := g.cfg.driver(now, g.rng)
		if err != nil {
			panic("council: selection configuration validated by New no longer valid: " + err.Error())
		}
		g.dr = dr
		c := &GroupChoice{Scheduler: dr.Current(0), Reason: GroupFirst, Nodes: nodeKeys(g.open)}
		return c
	}
	ran := g.dr.Current(0)
	c := &GroupChoice{Ran: ran, Nodes: nodeKeys(g.open), Seconds: (now - g.last).Seconds()}
	var sum selection.Figures
	for _, n := range c.Nodes {
		r := g.open[n]
		if r.sched != ran {
			c.Behind = append(c.Behind, n)
		}
		sum = sum.Add(r.f)
	}
	for _, n := range nodeKeys(g.follow) {
		if _, ok := g.open[n]; !ok {
			c.Missing = append(c.Missing, n)
		}
	}
	c.Bytes, c.ReadBytes = sum.Bytes, sum.ReadBytes
	judged := g.dr.Judged(0)
	switch {
	case len(c.Behind) > 0:
		c.Reason = GroupTransition
	case len(c.Missing) > 0:
		c.Reason = GroupMissing
	default:
		g.dr.Interval(0, now, sum, g.rng)
	}
	if c.Reason == "" && g.dr.Judged(0) == judged {
		c.Reason = GroupIdle
	}
	if c.Reason != "" {
		// Not judged: the period restarts now, teaching nothing (an
		// idle period, to the driver).
		g.dr.Interval(0, now, selection.Figures{}, g.rng)
	} else {
		last := g.dr.Last(0)
		c.Reason, c.Estimates = last.Reason, last.Estimates
	}
	c.Scheduler = g.dr.Current(0)
	c.Changed = c.Scheduler != ran
	return c
}

// current is the group's algorithm ("": no node follows yet).
func (g *groupSelection) current() string {
	if g.dr == nil || len(g.follow) == 0 {
		return ""
	}
	return g.dr.Current(0)
}

func nodeKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
