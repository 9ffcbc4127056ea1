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
	return newCoreConfig(t, council.Config{Nodes: nodes})
}

func newCoreConfig(t *testing.T, cfg council.Config) *council.Council {
	t.Helper()
	cfg.Windows = sched.Windows
	c, err := council.New(cfg, rand.New(rand.NewPCG(3, 4)))
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
// the last decision's made while the run went on (with a plan, the plan's
// window for the direction the node's requests took last).
func TestHooksApplyTheDecisionsToTheSimulator(t *testing.T) {
	for _, noPlan := range []bool{true, false} {
		p := workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: 32 << 10, TotalBytes: 64 << 20}
		s, err := sim.New(sim.Config{Patterns: sim.WriteRead(p, 3), IONodes: 2, Seed: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		loop := virtual.New(newCoreConfig(t, council.Config{Nodes: 2, NoPlan: noPlan}))
		var decisions []council.Decision
		h := loop.Hooks(func(_ time.Duration, d council.Decision) { decisions = append(decisions, d) })
		inner := h.OnNodeInterval
		var applied council.Decision
		planned := 0
		h.OnNodeInterval = func(s *sim.Sim, now time.Duration, obs []access.Observation) error {
			before := len(decisions)
			err := inner(s, now, obs)
			if len(decisions) > before && !s.Done() {
				applied = decisions[len(decisions)-1]
				if len(applied.Plan) == 2 {
					planned++
				}
			}
			return err
		}
		if _, err := s.Run(context.Background(), h); err != nil {
			t.Fatal(err)
		}
		if applied.Round == 0 || len(decisions) < 2 {
			t.Fatalf("%d decisions, none applied while the run went on", len(decisions))
		}
		if noPlan != (planned == 0) {
			t.Fatalf("NoPlan %v: %d decisions with a plan for both directions", noPlan, planned)
		}
		for k := range 2 {
			w := s.Window(k)
			if w != applied.Window && (noPlan || w != applied.PlanWindow(rw.Read) && w != applied.PlanWindow(rw.Write)) {
				t.Errorf("NoPlan %v: I/O node %d ends with window %v, want the last applied decision's %v (plan %+v)", noPlan, k, w, applied.Window, applied.Plan)
			}
		}
		windows := decisions
		if got := loop.Core().Round(); got != uint64(len(windows)) {
			t.Errorf("core at round %d after %d decisions", got, len(windows))
		}
	}
}
