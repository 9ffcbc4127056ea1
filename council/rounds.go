package council

import (
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
)

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
		c.learn(&nr, o, r.Jobs)
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
	nr := &NodeReport{Node: o.Node, Seq: r.Seq, Round: r.Round, Reports: 1, Bandwidth: o.Bandwidth, Window: o.Window, Interval: o.Interval, Sched: r.Scheduler}
	if prev := c.open[o.Node]; prev != nil {
		nr.Reports = prev.Reports + 1
	} else {
		c.heard++
	}
	c.open[o.Node] = nr
	c.learn(nr, o, r.Jobs)
	c.group.observe(r)
	return nil
}

// learn detects the pattern of o (with jobs, of each job and of their
// mix, Config.JobContext) and credits its reward, filling nr.
func (c *Council) learn(nr *NodeReport, o access.Observation, jobs []councilmsg.Job) {
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
	op, mixed := o.Op, false
	if class.Index() >= 0 {
		nr.Pattern = class.String()
		nr.Context = Context(class, o.Op)
	}
	if len(jobs) > 0 {
		ctx, jop, mix := c.jobContext(nr, jobs)
		if ctx != "" && c.cfg.JobContext != JobContextNode {
			nr.Context, nr.From, op, mixed = ctx, c.cfg.JobContext, jop, mix
		}
	}
	if nr.Context == "" {
		return
	}
	opening := 0
	if c.nodes[o.Node].context != nr.Context {
		opening = 1
	}
	c.noteContext(o.Node, nr.Context, op)
	p := c.bands.Policy(nr.Context)
	if a := c.arm(o.Window); a >= 0 {
		sum := creditSum{n: 1, bytes: float64(o.OpBytes), span: o.OpSpan, iv: o.Interval, openings: opening}
		if mixed {
			nr.Reward = mixReward(o)
			sum.bytes, sum.span = float64(o.Bytes), o.Interval
		} else {
			nr.Reward = c.reward(o)
		}
		sum.sum = nr.Reward
		nr.Credited = true
		// A late report's round has closed, credited without it: it is a
		// pull of its own.
		if c.cfg.Credit != CreditNode && !nr.Late {
			k := creditKey{nr.Context, a}
			c.pending[k] = c.pending[k].add(sum)
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
	d.Select = c.group.close(now, d.Round, c.cfg.Forget)
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
