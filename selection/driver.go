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
	// Announcer's interval; seed 003 found 4 s a good trade-off on
	// OrangeFS).
	Period time.Duration
	// MinRequests is the least number of requests a period must have
	// served for its reward to count and a new choice to be made
	// (default 1).
	MinRequests int64
	// Policy, if set, replaces AGIOS's rule with one of package bandit's
	// policies (e.g. "thompson-warm", the Council's default) over the same
	// algorithms, rewarded with the same bandwidth: ours, for comparison.
	Policy string
}

// Driver runs one Bandit per I/O node: at the end of each period it
// credits the period's bandwidth to the algorithm in force and chooses the
// next. A pure state machine: the caller passes each interval's figures
// and the random source, and applies the choice (the simulator's Switch,
// the daemon's Switcher).
type Driver struct {
	cfg     DriverConfig
	nodes   []nodeState
	Changes int // algorithm changes made
}

type nodeState struct {
	bandit  *Bandit
	policy  bandit.Policy // with DriverConfig.Policy
	current string
	start   time.Duration // start of the current period
	bytes   int64
	reqs    int64
	time    map[string]time.Duration // time each algorithm ran
}

// NewDriver returns a driver for nodes I/O nodes, each starting with an
// algorithm drawn as the bandit draws an untried one.
func NewDriver(cfg DriverConfig, nodes int, rng *rand.Rand) (*Driver, error) {
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.MinRequests == 0 {
		cfg.MinRequests = 1
	}
	if cfg.Period < 0 || cfg.MinRequests < 0 || nodes < 1 {
		return nil, fmt.Errorf("%w: period %v, minimum requests %d, %d nodes", ErrConfig, cfg.Period, cfg.MinRequests, nodes)
	}
	d := &Driver{cfg: cfg}
	for range nodes {
		b, err := NewBandit(cfg.Bandit)
		if err != nil {
			return nil, err
		}
		n := nodeState{bandit: b, current: b.Choose(0, rng), time: map[string]time.Duration{}}
		if cfg.Policy != "" {
			if n.policy, err = bandit.New(cfg.Policy, len(b.cfg.Schedulers), bandit.Options{}); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrConfig, err)
			}
			n.current = b.cfg.Schedulers[n.policy.Select(rng).Arm]
		}
		d.nodes = append(d.nodes, n)
	}
	return d, nil
}

// Current is the algorithm node runs.
func (d *Driver) Current(node int) string { return d.nodes[node].current }

// Interval adds one interval's figures of node (ending at now: bytes
// completed and requests served) and, when a period is over, returns the
// algorithm the node should run next (change false: keep the current).
func (d *Driver) Interval(node int, now time.Duration, bytes, requests int64, rng *rand.Rand) (next string, change bool) {
	n := &d.nodes[node]
	n.bytes += bytes
	n.reqs += requests
	if now-n.start < d.cfg.Period {
		return n.current, false
	}
	n.time[n.current] += now - n.start
	if n.reqs >= d.cfg.MinRequests {
		bw := float64(n.bytes) / (now - n.start).Seconds()
		if n.policy != nil {
			arm := slices.Index(n.bandit.cfg.Schedulers, n.current)
			n.policy.Update(arm, bw)
			next = n.bandit.cfg.Schedulers[n.policy.Select(rng).Arm]
		} else {
			_ = n.bandit.Record(n.current, bw, now) // current is one of the bandit's
			next = n.bandit.Choose(now, rng)
		}
	} else {
		next = n.current // an idle period teaches nothing
	}
	n.start, n.bytes, n.reqs = now, 0, 0
	if next == n.current {
		return next, false
	}
	n.current = next
	d.Changes++
	return next, true
}

// TimeIn returns how long node ran each algorithm, over whole periods.
func (d *Driver) TimeIn(node int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range d.nodes[node].time {
		out[k] = v
	}
	return out
}
