package council

import (
	"math"
	"strings"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/rw"
)

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
	// A mix of jobs in both directions is the last context of each.
	for _, o := range [...]rw.Op{rw.Read, rw.Write} {
		if o != op && strings.Contains(ctx, "+") && hasDirection(ctx, o) {
			c.lastOf[o] = ctx
		}
	}
}

// expect returns the context direction op is expected to take after the
// governing context from: its own when from is of direction op (a mix of
// jobs: when one of its jobs is), else the
// successor of from of direction op seen most often (ties: first by name),
// else the context op was last seen in ("" if never).
func (c *Council) expect(from string, op rw.Op) string {
	if from != "" && hasDirection(from, op) {
		return from
	}
	best, n := "", 0
	for to, k := range c.next[from] {
		if hasDirection(to, op) && (k > n || k == n && to < best) {
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
