package council

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/selection"
)

// groupReport is node's report of one interval in which it ran sched and
// wrote bytes, following the group.
func groupReportOf(rp *reporter, node int, sched string, bytes int64, round uint64, w time.Duration) Report {
	o := obs(node, access.SS, rw.Write, w, float64(bytes))
	o.OpBytes, o.OpSpan = bytes, time.Second
	r := rp.report(o, round)
	r.Scheduler, r.Selection = sched, councilmsg.SelectionGroup
	return r
}

// On a steady workload the Council's choice for the group settles on the
// algorithm with the least time, as the simulator's one choice for every
// node (selection.Driver with Shared) does when fed the same sums at the
// same instants: the two make the same choice every round.
func TestGroupChoiceSettlesAsTheSharedDriver(t *testing.T) {
	const nodes = 2
	c := newCouncil(t, Config{Nodes: nodes, Policy: "greedy"})
	// Each node's bytes per second under each algorithm, a steady write
	// workload; sjf is the fastest, mlf within 10% of it.
	rate := map[string]float64{"mlf": 100e6, "to-agg": 70e6, "sjf": 110e6, "to": 50e6, "noop": 80e6}
	noise := rand.New(rand.NewPCG(7, 7))
	var rp reporter
	var ref *selection.Driver
	refRNG := rand.New(rand.NewPCG(9, 9))
	group := "" // what the nodes run: their own choice until the first decision names one
	reasons := map[string]int{}
	changes := 0
	now := time.Duration(0)
	for round := uint64(0); round < 80; round++ {
		now += time.Second
		ran := group
		if ran == "" {
			ran = "noop" // the nodes' own choice before the Council's
		}
		var sum selection.Figures
		for n := range nodes {
			bytes := int64(rate[ran] * (1 + 0.04*(noise.Float64()-0.5)))
			r := groupReportOf(&rp, n, ran, bytes, round, c.Window())
			sum = sum.Add(selection.FiguresOf(r.Obs))
			mustObserve(t, c, now, r)
		}
		d, ok, _ := c.Poll(now)
		if !ok || d.Select == nil {
			t.Fatalf("round %d: decision %v, choice %+v", round+1, ok, d.Select)
		}
		w := d.Wire()
		if w.Scheduler != d.Select.Scheduler {
			t.Fatalf("round %d: the wire names %q, the log %q", d.Round, w.Scheduler, d.Select.Scheduler)
		}
		// The reference: the simulator's shared driver, created when the
		// first node followed and fed every later round's sum.
		if ref == nil {
			var err error
			ref, err = selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: DefaultSelectFrom},
				Period: time.Nanosecond, Policy: selection.PolicySettle, Shared: true, Start: now}, 1, refRNG)
			if err != nil {
				t.Fatal(err)
			}
			if d.Select.Reason != GroupFirst {
				t.Fatalf("first choice: reason %q, want %q", d.Select.Reason, GroupFirst)
			}
		} else {
			ref.Interval(0, now, sum, refRNG)
			if d.Select.Bytes != sum.Bytes || d.Select.Ran != group {
				t.Fatalf("round %d: the Council summed %d bytes under %q, the nodes %d under %q", d.Round, d.Select.Bytes, d.Select.Ran, sum.Bytes, group)
			}
			reasons[d.Select.Reason]++
			if d.Select.Changed {
				changes++
			}
		}
		if d.Select.Scheduler != ref.Current(0) {
			t.Fatalf("round %d: the Council chose %q (%s), the shared driver %q", d.Round, d.Select.Scheduler, d.Select.Reason, ref.Current(0))
		}
		group = d.Select.Scheduler
	}
	t.Logf("reasons %v, changes %d", reasons, changes)
	if group != "sjf" {
		t.Errorf("settled on %q, want sjf (the least time)", group)
	}
	if reasons["explore"] != 14 || reasons["settled"] < 60 || reasons["estimates"] > 2 {
		t.Errorf("reasons %v: want 14 explorations after the first choice (3 rounds of 5), then settled, at most 2 changes for the estimates", reasons)
	}
	if st := c.Status(); st.GroupScheduler != "sjf" || !slices.Equal(st.GroupNodes, []int{0, 1}) {
		t.Errorf("status: group scheduler %q, nodes %v", st.GroupScheduler, st.GroupNodes)
	}
}

// A round is judged only when every node that follows reported under the
// group's algorithm: a node still on its own, or silent, leaves the
// choice as it is and teaches nothing; nodes that do not follow are not
// counted; with no node following, decisions name no algorithm.
func TestGroupChoiceJudgesWholeRounds(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 3, Policy: "greedy", Timeout: 100 * time.Millisecond, Forget: 2})
	var rp reporter
	w := c.Window()
	alone := func(node int, round uint64) Report {
		r := rp.report(obs(node, access.SS, rw.Write, w, 1e8), round)
		r.Scheduler, r.Selection = "twins", ""
		return r
	}
	closeRound := func(now time.Duration, reports ...Report) Decision {
		t.Helper()
		for _, r := range reports {
			mustObserve(t, c, now, r)
		}
		d, ok, _ := c.Poll(now + time.Second/2)
		if !ok {
			t.Fatalf("round not closed")
		}
		return d
	}
	// No node follows: no choice.
	d := closeRound(time.Second, alone(0, 0), alone(1, 0), alone(2, 0))
	if d.Select != nil || d.Wire().Scheduler != "" {
		t.Fatalf("no follower: choice %+v, wire %q", d.Select, d.Wire().Scheduler)
	}
	// Nodes 0 and 1 follow; 2 does not.
	d = closeRound(2*time.Second, groupReportOf(&rp, 0, "sjf", 1e8, 1, w), groupReportOf(&rp, 1, "mlf", 1e8, 1, w), alone(2, 1))
	if d.Select == nil || d.Select.Reason != GroupFirst || !slices.Equal(d.Select.Nodes, []int{0, 1}) {
		t.Fatalf("first choice %+v", d.Select)
	}
	g := d.Select.Scheduler
	other := "noop"
	if g == other {
		other = "mlf"
	}
	// Node 1 has not switched yet.
	d = closeRound(3*time.Second, groupReportOf(&rp, 0, g, 1e8, 2, w), groupReportOf(&rp, 1, other, 1e8, 2, w), alone(2, 2))
	if d.Select.Reason != GroupTransition || !slices.Equal(d.Select.Behind, []int{1}) || d.Select.Scheduler != g {
		t.Fatalf("a node behind: %+v", d.Select)
	}
	// Node 1 is silent.
	d = closeRound(4*time.Second, groupReportOf(&rp, 0, g, 1e8, 3, w), alone(2, 3))
	if d.Select.Reason != GroupMissing || !slices.Equal(d.Select.Missing, []int{1}) || d.Select.Scheduler != g {
		t.Fatalf("a node missing: %+v", d.Select)
	}
	// Both ran g, nothing moved.
	d = closeRound(5*time.Second, groupReportOf(&rp, 0, g, 0, 4, w), groupReportOf(&rp, 1, g, 0, 4, w), alone(2, 4))
	if d.Select.Reason != GroupIdle || d.Select.Scheduler != g {
		t.Fatalf("an idle round: %+v", d.Select)
	}
	// Both ran g and moved bytes: judged (settle explores), over the
	// second since the round before.
	d = closeRound(6*time.Second, groupReportOf(&rp, 0, g, 1e8, 5, w), groupReportOf(&rp, 1, g, 1e8, 5, w), alone(2, 5))
	if d.Select.Reason != "explore" || d.Select.Bytes != 2e8 || d.Select.Seconds != 1 || d.Select.Ran != g {
		t.Fatalf("a judged round: %+v", d.Select)
	}
	// Both stop following: after Forget rounds no algorithm is named.
	for k := range 2 {
		d = closeRound(time.Duration(7+k)*time.Second, alone(2, uint64(6+k)))
	}
	if d.Select != nil {
		t.Fatalf("followers gone for %d rounds: choice %+v", 2, d.Select)
	}
	if st := c.Status(); st.GroupScheduler != "" || st.GroupNodes != nil {
		t.Errorf("status with no follower: %q %v", st.GroupScheduler, st.GroupNodes)
	}
}

func TestGroupSelectConfigValidated(t *testing.T) {
	for _, s := range []SelectConfig{
		{Schedulers: []string{"mlf", "dynamic"}},
		{Schedulers: []string{"mlf", "nope"}},
		{Schedulers: []string{"mlf", "mlf"}},
		{Schedulers: []string{"mlf"}}, // settle needs two
		{Policy: "nope"},
	} {
		if _, err := New(Config{Select: s}, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}
