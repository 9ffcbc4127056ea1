package council

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// mixReport is node 0's interval shared by an SS writer (bytes w) and an
// FPP reader (bytes r) under window win, as an Announcer sends it.
func mixReport(rep *reporter, win time.Duration, w, r int64, round uint64) Report {
	ws := obs(0, access.SS, rw.Write, win, float64(w))
	rd := obs(0, access.FPP, rw.Read, win, float64(r))
	node := obs(0, access.SC, rw.Read, win, float64(w+r)) // the node's mixed metrics look like neither
	node.OpBytes, node.OpSpan = r, time.Second/2
	rp := rep.report(node, round)
	rp.Jobs = councilmsg.TrimJobs(node, []councilmsg.Job{{ID: "ckpt", Obs: ws}, {ID: "ana", Obs: rd}})
	return rp
}

func TestJobContexts(t *testing.T) {
	for _, tc := range []struct {
		mode, want, from string
		op               rw.Op
	}{
		{JobContextMix, "FPP/read+SS/write", "mix", rw.Read},
		{JobContextDominant, "FPP/read", "dominant", rw.Read},
		{JobContextNode, "SC/read", "", rw.Read},
	} {
		c := newCouncil(t, Config{Windows: sched.Windows, Nodes: 1, JobContext: tc.mode})
		var rep reporter
		if err := c.Observe(0, mixReport(&rep, time.Millisecond, 40e6, 60e6, 0)); err != nil {
			t.Fatal(err)
		}
		d, ok, _ := c.Poll(time.Millisecond)
		if !ok {
			t.Fatal("round not closed")
		}
		nr := d.Nodes[0]
		if nr.Context != tc.want || nr.From != tc.from || d.Context != tc.want {
			t.Errorf("%s: node context %q from %q, decision %q; want %q from %q", tc.mode, nr.Context, nr.From, d.Context, tc.want, tc.from)
		}
		if len(nr.Jobs) != 2 || nr.Jobs[0].ID != "ana" || nr.Jobs[0].Context != "FPP/read" || nr.Jobs[1].Context != "SS/write" || !nr.Jobs[1].Counted {
			t.Errorf("%s: jobs logged %+v", tc.mode, nr.Jobs)
		}
		if tc.mode == JobContextNode {
			continue
		}
		// The mix is rewarded with the node's bandwidth, all jobs
		// together, not the majority operation's.
		if len(d.Pulls) != 0 {
			t.Errorf("%s: pulls before the phase ended: %+v", tc.mode, d.Pulls)
		}
		if nr.Reward != 100e6 {
			t.Errorf("%s: reward %v, want the node's 1e8 B/s", tc.mode, nr.Reward)
		}
		// Both directions follow the mix's window.
		if tc.mode == JobContextMix {
			for _, op := range []rw.Op{rw.Read, rw.Write} {
				if w := d.PlanWindow(op); w != d.Window {
					t.Errorf("mix: plan for %v is %v, decision %v", op, w, d.Window)
				}
			}
		}
	}
}

// A job with less than MinJobShare of the bytes and of the requests does
// not make a mix; with
// it alone counted, the context is its own and the reward the usual one.
func TestSmallJobDoesNotMakeAMix(t *testing.T) {
	c := newCouncil(t, Config{Windows: sched.Windows, Nodes: 1, JobContext: JobContextMix})
	var rep reporter
	r := mixReport(&rep, time.Millisecond, 5e6, 95e6, 0) // requests in proportion
	if err := c.Observe(0, r); err != nil {
		t.Fatal(err)
	}
	d, _, _ := c.Poll(time.Millisecond)
	nr := d.Nodes[0]
	if nr.Context != "FPP/read" || nr.Jobs[1].Counted {
		t.Fatalf("context %q, jobs %+v; want FPP/read alone", nr.Context, nr.Jobs)
	}
	if want := 95e6 / 0.5; nr.Reward != want {
		t.Errorf("reward %v, want the reads' bandwidth while they ran %v", nr.Reward, want)
	}
}

// A mix context teaches its own policy, survives a snapshot, and the
// operator can pin it.
func TestMixContextIsAContext(t *testing.T) {
	c := newCouncil(t, Config{Windows: sched.Windows, Nodes: 1, Credit: CreditRound, JobContext: JobContextMix})
	var rep reporter
	for i := range 4 {
		if err := c.Observe(time.Duration(i)*time.Second, mixReport(&rep, time.Millisecond, 40e6, 60e6, c.Round())); err != nil {
			t.Fatal(err)
		}
		c.Poll(time.Duration(i) * time.Second)
	}
	const mix = "FPP/read+SS/write"
	if n := pulls(c, mix); n < 3 {
		t.Fatalf("mix context: %d pulls", n)
	}
	if err := c.Pin(mix, 8*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Pin("SS/write+FPP/read", 8*time.Millisecond); err == nil {
		t.Error("an unsorted mix pinned")
	}
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	c2 := newCouncil(t, Config{Windows: sched.Windows, Nodes: 1, Credit: CreditRound, JobContext: JobContextMix})
	if err := c2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if pulls(c2, mix) != pulls(c, mix) {
		t.Error("the mix's pulls did not survive a snapshot")
	}
}

func TestJobContextConfig(t *testing.T) {
	if c := newCouncil(t, Config{}); c.Config().JobContext != JobContextNode {
		t.Errorf("default JobContext %q", c.Config().JobContext)
	}
	if _, err := New(Config{JobContext: "largest"}, nil); err == nil {
		t.Error("an unknown JobContext accepted")
	}
}

func pulls(c *Council, ctx string) (n int64) {
	for _, k := range c.bands.Policy(ctx).Counts() {
		n += k
	}
	return n
}
