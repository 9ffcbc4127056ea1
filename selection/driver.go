package selection

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/adaptio/adaptio/bandit"
)

// DriverConfig configures dynamic selection on one or more I/O nodes.
type DriverConfig struct {
	Bandit BanditConfig
	// Period is how often a node may change algorithm (default 1 s, the
	// Announcer's interval; the JLESC AGIOS selection report found 4 s a good trade-off on
	// OrangeFS).
	Period time.Duration
	// MinRequests is the least number of requests a period must have
	// served (default 1). A shorter period is extended: its figures are
	// kept and the next interval's added, as AGIOS waits for
	// min_requests before it judges a scheduler.
	MinRequests int64
	// Policy, if set (and not PolicyAGIOS), replaces AGIOS's rule: PolicySettle (Settle,
	// explore-then-commit; ours) or one of package bandit's policies
	// (e.g. "thompson", "thompson-warm") over the same algorithms,
	// rewarded with the same bandwidth.
	Policy string
	// Settle configures PolicySettle.
	Settle SettleConfig
	// Start is when the first period starts, on the caller's clock
	// (default 0). With PolicySettle, nodes whose clocks agree (a daemon
	// passes the time since the Unix epoch) explore in lockstep.
	Start time.Duration
	// Shared makes one choice for every I/O node, as the Council does
	// for TWINS's window: the caller sums every node's figures into one
	// Interval (node 0) and applies the choice to every node. AGIOS's
	// nodes choose alone; a node's bandwidth then depends on what the
	// others run (they share the data servers), and each learns from a
	// quarter of the periods on four nodes.
	Shared bool
	// Patterns, if set, adds the JLESC AGIOS selection report's pattern matching: each period's
	// access series (the first MaxSeries requests the caller passes to
	// Request) joins the knowledge base, the period's reward is credited
	// to its pattern, and the Markov chain's predicted next pattern
	// chooses the next algorithm. Under AGIOS's rule the prediction's
	// best-known algorithm runs, else the bandit decides; with Policy (ours)
	// each pattern has its own policy (a contextual bandit keyed by the
	// pattern), the predicted pattern's chooses, and without a prediction
	// the node's.
	Patterns *KBConfig
	// MaxSeries bounds the requests of a period kept for its series
	// (default 512).
	MaxSeries int
}

// DriverConfig.Policy's names for Settle and for AGIOS's rule (also "").
const (
	PolicySettle = "settle"
	PolicyAGIOS  = "agios"
)

// Figures are what an I/O node did in one interval.
type Figures struct {
	Bytes     int64 // bytes completed
	ReadBytes int64 // of Bytes, those read (the rest were written)
	Served    int64 // requests completed (a caller without a count passes 1 when Bytes > 0)
}

// Driver runs dynamic selection on I/O nodes: at the end of each period
// it credits the period's bandwidth to the algorithm in force and chooses
// the next. A pure state machine: the caller passes each interval's
// figures and the random source, and applies the choice (the simulator's
// Switch, the daemon's Switcher).
type Driver struct {
	cfg     DriverConfig
	nodes   []nodeState
	Changes int // algorithm changes made
}

// learner is a node's chooser: AGIOS's bandit, Settle or a bandit policy.
type learner struct {
	agios  *Bandit
	settle *Settle
	policy bandit.Policy
}

type nodeState struct {
	learner
	kb        *KnowledgeBase
	byPattern map[int]*learner // with Patterns and Policy: each pattern's
	reqs      []Request        // the period's first MaxSeries requests
	current   string
	start     time.Duration // start of the current period
	bytes     int64
	read      int64
	served    int64
	time      map[string]time.Duration // time each algorithm ran
	last      Choice                   // the last choice and why
	judged    int                      // periods judged
}

// NewDriver returns a driver for nodes I/O nodes (one choice for all with
// Shared), each starting with an algorithm drawn as the bandit draws an
// untried one.
func NewDriver(cfg DriverConfig, nodes int, rng *rand.Rand) (*Driver, error) {
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.MinRequests == 0 {
		cfg.MinRequests = 1
	}
	if cfg.Period < 0 || cfg.MinRequests < 0 || nodes < 1 || cfg.Start < 0 {
		return nil, fmt.Errorf("%w: period %v, minimum requests %d, %d nodes", ErrConfig, cfg.Period, cfg.MinRequests, nodes)
	}
	if err := cfg.Bandit.defaults(); err != nil {
		return nil, err
	}
	if cfg.Shared {
		nodes = 1
	}
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = 512
	}
	if cfg.MaxSeries < 0 {
		return nil, fmt.Errorf("%w: series of at most %d requests", ErrConfig, cfg.MaxSeries)
	}
	d := &Driver{cfg: cfg}
	for range nodes {
		n := nodeState{time: map[string]time.Duration{}, start: cfg.Start}
		l, err := newLearner(cfg)
		if err != nil {
			return nil, err
		}
		n.learner = *l
		if cfg.Patterns != nil {
			if n.kb, err = NewKnowledgeBase(*cfg.Patterns); err != nil {
				return nil, err
			}
			n.byPattern = map[int]*learner{}
		}
		n.last = n.choose(cfg.Bandit.Schedulers, "", cfg.Start, rng)
		n.current = n.last.Scheduler
		d.nodes = append(d.nodes, n)
	}
	return d, nil
}

// newLearner returns AGIOS's bandit or cfg.Policy over cfg's algorithms.
func newLearner(cfg DriverConfig) (*learner, error) {
	l := &learner{}
	var err error
	if cfg.Policy == PolicySettle {
		if l.settle, err = NewSettle(cfg.Settle, cfg.Bandit.Schedulers, cfg.Period); err != nil {
			return nil, err
		}
	} else if cfg.Policy != "" && cfg.Policy != PolicyAGIOS {
		if l.policy, err = bandit.New(cfg.Policy, len(cfg.Bandit.Schedulers), bandit.Options{}); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	} else if l.agios, err = NewBandit(cfg.Bandit); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *learner) choose(names []string, current string, now time.Duration, rng *rand.Rand) Choice {
	switch {
	case l.settle != nil:
		return l.settle.Choose(current, now)
	case l.policy != nil:
		c := l.policy.Select(rng)
		return Choice{Scheduler: names[c.Arm], Reason: map[bool]string{true: "explore", false: "draw"}[c.Explore]}
	}
	if l.agios.Probabilities(now) == nil {
		return Choice{Scheduler: l.agios.Choose(now, rng), Reason: "explore"}
	}
	return Choice{Scheduler: l.agios.Choose(now, rng), Reason: "draw"}
}

// record credits a period of secs seconds that moved bytes (read of them
// read) to algorithm s.
func (l *learner) record(names []string, s string, secs float64, bytes, read int64, now time.Duration) {
	switch {
	case l.settle != nil:
		_ = l.settle.Record(s, secs, read, bytes-read, now) // s is one of the names
	case l.policy != nil:
		l.policy.Update(slices.Index(names, s), float64(bytes)/secs)
	default:
		_ = l.agios.Record(s, float64(bytes)/secs, now) // s is one of the bandit's
	}
}

// Shared reports whether the driver makes one choice for every node
// (DriverConfig.Shared): the caller then passes node 0 only.
func (d *Driver) Shared() bool { return d.cfg.Shared }

// Current is the algorithm node runs.
func (d *Driver) Current(node int) string { return d.nodes[d.index(node)].current }

func (d *Driver) index(node int) int {
	if d.cfg.Shared {
		return 0
	}
	return node
}

// Request records a request node received, in arrival order, for the
// period's access series (with Patterns; ignored otherwise).
func (d *Driver) Request(node int, r Request) {
	n := &d.nodes[d.index(node)]
	if n.kb != nil && len(n.reqs) < d.cfg.MaxSeries {
		n.reqs = append(n.reqs, r)
	}
}

// Interval adds one interval's figures of node (ending at now) and, when
// a period is over and served at least MinRequests requests, returns the
// algorithm the node should run next (change false: keep the current). A
// period that served fewer is extended; a period with nothing completed
// and nothing served (an idle one) teaches nothing and is dropped.
func (d *Driver) Interval(node int, now time.Duration, f Figures, rng *rand.Rand) (next string, change bool) {
	n := &d.nodes[d.index(node)]
	n.bytes += f.Bytes
	n.read += min(max(f.ReadBytes, 0), f.Bytes)
	n.served += f.Served
	if now-n.start < d.cfg.Period {
		return n.current, false
	}
	if n.bytes == 0 && n.served == 0 {
		n.time[n.current] += now - n.start
		n.start, n.read, n.reqs = now, 0, n.reqs[:0]
		return n.current, false // idle
	}
	if n.served < d.cfg.MinRequests {
		return n.current, false // extended
	}
	n.time[n.current] += now - n.start
	names := d.cfg.Bandit.Schedulers
	secs := (now - n.start).Seconds()
	bw := float64(n.bytes) / secs
	n.record(names, n.current, secs, n.bytes, n.read, now)
	// The pattern knowledge base, when it predicts a pattern it knows,
	// decides; the node's own learner chooses only otherwise (so it draws
	// nothing it then throws away).
	pick, ok := "", false
	if n.kb != nil {
		pick, ok = d.matchPatterns(n, secs, bw, now, rng)
	}
	if ok {
		n.last = Choice{Scheduler: pick, Reason: "pattern"}
	} else {
		n.last = n.choose(names, n.current, now, rng)
	}
	n.judged++
	next = n.last.Scheduler
	n.start, n.bytes, n.read, n.served, n.reqs = now, 0, 0, 0, n.reqs[:0]
	if next == n.current {
		return next, false
	}
	n.current = next
	d.Changes++
	return next, true
}

// matchPatterns joins the period's series to n's knowledge base, credits
// the period's reward bw to its pattern, and returns the algorithm the
// predicted next pattern calls for (false: none, the node's learner
// decides).
func (d *Driver) matchPatterns(n *nodeState, secs, bw float64, now time.Duration, rng *rand.Rand) (string, bool) {
	names := d.cfg.Bandit.Schedulers
	m := n.kb.Observe(SeriesOf(n.reqs))
	perPattern := n.policy != nil                    // a bandit policy per pattern; AGIOS's rule and Settle take the knowledge base's advice
	for _, id := range append(m.Merged, m.Evicted) { // their policies go; the merged pattern keeps its own
		delete(n.byPattern, id)
	}
	if m.ID < 0 {
		return "", false // too short to be a pattern: the node's learner, which this period credits, decides
	}
	_ = n.kb.Credit(m.ID, n.current, bw) // m.ID is known
	if perPattern {
		l := n.byPattern[m.ID]
		if l == nil {
			var err error
			if l, err = newLearner(d.cfg); err != nil {
				panic("selection: configuration validated by NewDriver no longer valid: " + err.Error())
			}
			// A new pattern starts from what the node learned over
			// every pattern, as a prior (package bandit: a wrong one
			// costs at most a pull per algorithm).
			if slices.ContainsFunc(n.policy.Counts(), func(c int64) bool { return c > 0 }) {
				_ = bandit.SetPrior(l.policy, n.policy.Values(), 0) // l is new
			}
			n.byPattern[m.ID] = l
		}
		l.record(names, n.current, secs, n.bytes, n.read, now)
	}
	if !perPattern {
		return n.kb.Advise()
	}
	id, ok := n.kb.Predict()
	if l := n.byPattern[id]; ok && l != nil {
		return l.choose(names, n.current, now, rng).Scheduler, true
	}
	return "", false
}

// Last is node's last choice and why (after NewDriver: its first).
func (d *Driver) Last(node int) Choice { return d.nodes[d.index(node)].last }

// Judged is how many of node's periods were judged (each made a Choice).
func (d *Driver) Judged(node int) int { return d.nodes[d.index(node)].judged }

// Patterns is node's knowledge base (nil without DriverConfig.Patterns).
func (d *Driver) Patterns(node int) *KnowledgeBase { return d.nodes[d.index(node)].kb }

// TimeIn returns how long node ran each algorithm, over whole periods.
func (d *Driver) TimeIn(node int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range d.nodes[d.index(node)].time {
		out[k] = v
	}
	return out
}
