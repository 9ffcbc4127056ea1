package virtual_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/virtual"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

func newCore(t *testing.T, nodes int) *council.Council {
	t.Helper()
	c, err := council.New(council.Config{Windows: sched.Windows, Nodes: nodes}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An interval in which every node reports closes the round at once; an
// interval without observations decides nothing.
func TestIntervalClosesTheRound(t *testing.T) {
	loop := virtual.New(newCore(t, 2))
	if _, ok, err := loop.Interval(time.Second, nil); ok || err != nil {
		t.Fatalf("no observation: decided %v (%v)", ok, err)
	}
	obs := make([]access.Observation, 2)
	for i := range obs {
		obs[i] = access.Observation{Node: i, Start: 0, Interval: time.Second, DataServers: 4, Processes: 16, Op: rw.Read,
			FileHandles: 1, ReqAvg: 32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10, OffsetDist: 1 << 20, ProcDist: 512 << 10,
			Bandwidth: 5e7, Bytes: 5e7, Requests: 1500, Window: time.Millisecond}
	}
	d, ok, err := loop.Interval(time.Second, obs)
	if err != nil || !ok || d.Reason != "all" || len(d.Nodes) != 2 || d.Voters != 2 {
		t.Fatalf("decision %+v ok %v err %v; want a round closed by both nodes' reports", d, ok, err)
	}
	if got := loop.Core().Round(); got != 1 {
		t.Errorf("round %d after one interval, want 1", got)
	}
}

// The hooks apply every decision's window to every I/O node of the
// simulator, but after the last interval: the window in force at the end is
// the last decision's made while the run went on.
func TestHooksApplyTheDecisionsToTheSimulator(t *testing.T) {
	p := workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: 32 << 10, TotalBytes: 64 << 20}
	s, err := sim.New(sim.Config{Patterns: sim.WriteRead(p, 3), IONodes: 2, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loop := virtual.New(newCore(t, 2))
	var windows []time.Duration
	h := loop.Hooks(func(_ time.Duration, d council.Decision) { windows = append(windows, d.Window) })
	inner := h.OnNodeInterval
	var applied time.Duration
	h.OnNodeInterval = func(s *sim.Sim, now time.Duration, obs []access.Observation) error {
		before := len(windows)
		err := inner(s, now, obs)
		if len(windows) > before && !s.Done() {
			applied = windows[len(windows)-1]
		}
		return err
	}
	if _, err := s.Run(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if applied == 0 || len(windows) < 2 {
		t.Fatalf("%d decisions, none applied while the run went on", len(windows))
	}
	for k := range 2 {
		if w := s.Window(k); w != applied {
			t.Errorf("I/O node %d ends with window %v, want the last applied decision's %v", k, w, applied)
		}
	}
	if got := loop.Core().Round(); got != uint64(len(windows)) {
		t.Errorf("core at round %d after %d decisions", got, len(windows))
	}
}
