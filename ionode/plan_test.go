package ionode_test

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

func twinsNode(t *testing.T, w time.Duration) *ionode.Node {
	t.Helper()
	sw, err := sched.NewSwitcher("twins", sched.Config{Servers: 2, Window: w})
	if err != nil {
		t.Fatal(err)
	}
	return ionode.New(sw, ionode.Config{})
}

// addRun adds n pieces of op from id on, returning the next id.
func addRun(t *testing.T, nd *ionode.Node, now time.Duration, id uint64, n int, op rw.Op) uint64 {
	t.Helper()
	for range n {
		r := req(id, int(id%2), 1, int64(id)<<15)
		r.Op = op
		if err := nd.Add(now, r); err != nil {
			t.Fatal(err)
		}
		id++
	}
	return id
}

func window(nd *ionode.Node) time.Duration { return nd.Scheduler().Params().Window }

func TestFollowPlanTurnsWithTheRequests(t *testing.T) {
	nd := twinsNode(t, time.Millisecond)
	plan := ionode.Plan{Read: 250 * time.Microsecond, Write: 8 * time.Millisecond}
	// Before any request the node has no direction: the fallback applies.
	if err := nd.Follow(0, plan, 4*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if w, ch := nd.Switched(); !ch || w != 4*time.Millisecond {
		t.Fatalf("Switched = %v, %v; want 4ms, true", w, ch)
	}
	id := addRun(t, nd, 1, 1, 40, rw.Write)
	if got := window(nd); got != 4*time.Millisecond {
		t.Fatalf("first direction seen turned the window to %v; a turn needs the other direction", got)
	}
	// A new decision while writes flow applies the plan's write window.
	if err := nd.Follow(2, plan, 4*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := window(nd); got != 8*time.Millisecond {
		t.Fatalf("window while writing = %v, want the plan's 8ms", got)
	}
	// A few reads among the writes do not turn the node.
	id = addRun(t, nd, 3, id, ionode.FollowAfter-1, rw.Read)
	id = addRun(t, nd, 3, id, 1, rw.Write)
	if got := window(nd); got != 8*time.Millisecond {
		t.Fatalf("%d reads turned the window to %v", ionode.FollowAfter-1, got)
	}
	if _, ch := nd.Switched(); !ch {
		t.Fatal("Switched missed the change by Follow")
	}
	// A run of reads does.
	id = addRun(t, nd, 4, id, ionode.FollowAfter, rw.Read)
	if got := window(nd); got != 250*time.Microsecond {
		t.Fatalf("window after %d reads = %v, want the plan's 250µs", ionode.FollowAfter, got)
	}
	if w, ch := nd.Switched(); !ch || w != 250*time.Microsecond {
		t.Fatalf("Switched = %v, %v; want 250µs, true", w, ch)
	}
	if _, ch := nd.Switched(); ch {
		t.Fatal("Switched reported one change twice")
	}
	// Each direction is credited with the window its pieces ran under.
	if w := nd.WindowOf(rw.Read); w != 250*time.Microsecond {
		t.Errorf("WindowOf(read) = %v, want 250µs", w)
	}
	if w := nd.WindowOf(rw.Write); w != 8*time.Millisecond {
		t.Errorf("WindowOf(write) = %v, want 8ms", w)
	}
	// The next decision, made from reports of the writes, still finds the
	// node reading: it keeps the read window of the new plan.
	plan2 := ionode.Plan{Read: 125 * time.Microsecond, Write: 8 * time.Millisecond}
	if err := nd.Follow(5, plan2, 8*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := window(nd); got != 125*time.Microsecond {
		t.Fatalf("window after a decision while reading = %v, want the plan's 125µs", got)
	}
	addRun(t, nd, 6, id, ionode.FollowAfter, rw.Write)
	if got := window(nd); got != 8*time.Millisecond {
		t.Fatalf("window after turning back to writes = %v, want 8ms", got)
	}
}

func TestFollowWithoutPlanKeepsTheDecision(t *testing.T) {
	nd := twinsNode(t, time.Millisecond)
	if err := nd.Follow(0, ionode.Plan{}, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	id := addRun(t, nd, 1, 1, 40, rw.Write)
	addRun(t, nd, 1, id, 40, rw.Read)
	if got := window(nd); got != 2*time.Millisecond {
		t.Fatalf("window = %v, want the decision's 2ms whatever the requests do", got)
	}
	if w := nd.WindowOf(rw.Write); w != 2*time.Millisecond {
		t.Fatalf("WindowOf(write) = %v, want the window in force", w)
	}
	// A plan entry of zero leaves that direction on the decision's window.
	if err := nd.Follow(2, ionode.Plan{Write: 8 * time.Millisecond}, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := window(nd); got != 2*time.Millisecond {
		t.Fatalf("reading node took %v from a plan without a read window", got)
	}
}

func TestFollowLeavesOtherSchedulers(t *testing.T) {
	nd := node(t, ionode.Config{}) // FIFO
	if err := nd.Follow(0, ionode.Plan{Read: time.Millisecond, Write: 2 * time.Millisecond}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	addRun(t, nd, 1, 1, 40, rw.Read)
	if _, ch := nd.Switched(); ch {
		t.Fatal("a FIFO node reported a window change")
	}
	if w := nd.WindowOf(rw.Read); w != 0 {
		t.Fatalf("WindowOf on FIFO = %v, want 0", w)
	}
}
