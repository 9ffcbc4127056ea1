package council

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// env is a reward process for one I/O node in SS/write: the mean reward of
// window w at round r (from 1), before noise.
type env func(r int, w time.Duration) float64

// drive runs rounds of one node in SS/write through c, the node applying
// each decision's write window, its reward env's mean with a relative
// Gaussian noise of sd drawn from rng. It returns every decision.
func drive(t *testing.T, c *Council, rp *reporter, rounds int, e env, sd float64, rng *rand.Rand) []Decision {
	t.Helper()
	var out []Decision
	w := c.Window()
	for r := 1; r <= rounds; r++ {
		now := time.Duration(int(c.Round())+1) * time.Second
		bw := 1e6 * e(r, w) * (1 + sd*rng.NormFloat64()) // MB/s
		mustObserve(t, c, now, rp.report(obs(0, access.SS, rw.Write, w, max(bw, 1)), c.Round()))
		d, ok, _ := c.Poll(now)
		if !ok {
			t.Fatalf("round %d did not close", r)
		}
		out = append(out, d)
		if pw := d.PlanWindow(rw.Write); pw != 0 {
			w = pw
		} else {
			w = d.Window
		}
	}
	return out
}

// writeEntry returns d's plan entry for writes.
func writeEntry(t *testing.T, d Decision) PlanEntry {
	t.Helper()
	for _, e := range d.Plan {
		if e.Op == "write" {
			return e
		}
	}
	t.Fatalf("round %d: no write entry in plan %+v", d.Round, d.Plan)
	return PlanEntry{}
}

// stationary: 8 ms is the best window, 1 ms (the default) 100, the others below.
func stationary(_ int, w time.Duration) float64 {
	switch w {
	case 8 * time.Millisecond:
		return 130
	case 4 * time.Millisecond:
		return 115
	case sched.DefaultWindow:
		return 100
	}
	return 80
}

func TestShadowKeepsDefaultInForceAndLogsLearning(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Shadow: true, Policy: "egreedy", Options: banditEps(0.5), Reward: RewardBandwidth, Credit: CreditRound})
	var rp reporter
	ds := drive(t, c, &rp, 200, stationary, 0.02, rand.New(rand.NewPCG(3, 4)))
	other := 0
	for _, d := range ds {
		e := writeEntry(t, d)
		if d.Window != sched.DefaultWindow || e.Window != sched.DefaultWindow || !d.Shadow {
			t.Fatalf("round %d: window %v, write plan %v, shadow %v; want the default %v in force in shadow mode", d.Round, d.Window, e.Window, d.Shadow, sched.DefaultWindow)
		}
		if e.Control != ControlShadow || e.Learned == 0 || !(e.LearnedProb > 0 && e.LearnedProb <= 1) || e.Prob != 1 {
			t.Fatalf("round %d: write entry %+v, want control %q with learning's choice and its probability, prob 1", d.Round, e, ControlShadow)
		}
		if e.Learned != sched.DefaultWindow {
			other++
		}
	}
	// egreedy 0.5 explores half the rounds: learning would have chosen
	// other windows, and the log says so.
	if other < 50 {
		t.Errorf("learning chose another window than the default in %d of 200 rounds, want about half", other)
	}
	// Only the default earned rewards: only it has pulls.
	for _, cs := range c.Status().Contexts {
		for i, n := range cs.Counts {
			if c.Config().Windows[i] != sched.DefaultWindow && n > 0 {
				t.Errorf("%s: window %v has %d pulls in shadow mode, want 0", cs.Context, c.Config().Windows[i], n)
			}
		}
	}
	// Shadow off: learning's choices are in force again.
	c.SetShadow(false)
	ds = drive(t, c, &rp, 20, stationary, 0.02, rand.New(rand.NewPCG(3, 5)))
	for _, d := range ds[1:] {
		if e := writeEntry(t, d); e.Control != "" || d.Shadow {
			t.Fatalf("round %d after shadow off: entry %+v shadow %v, want learning in force", d.Round, e, d.Shadow)
		}
	}
}

func TestPinAndRelease(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Policy: "greedy", Reward: RewardBandwidth, Credit: CreditRound})
	for _, tt := range []struct {
		ctx string
		w   time.Duration
	}{{"SS/write", 3 * time.Millisecond}, {"XX/write", 4 * time.Millisecond}, {"SS/append", 4 * time.Millisecond}, {"", time.Millisecond}} {
		if err := c.Pin(tt.ctx, tt.w); !errors.Is(err, ErrOperator) {
			t.Errorf("Pin(%q, %v) = %v, want ErrOperator", tt.ctx, tt.w, err)
		}
	}
	ctx, err := ParseContext("ss", "WRITE")
	if err != nil || ctx != "SS/write" {
		t.Fatalf("ParseContext(ss, WRITE) = %q, %v", ctx, err)
	}
	if err := c.Pin(ctx, 4*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ds := drive(t, c, &reporter{}, 10, stationary, 0, rand.New(rand.NewPCG(1, 1)))
	for _, d := range ds[1:] { // the first round's report ran the default
		if e := writeEntry(t, d); e.Window != 4*time.Millisecond || e.Control != ControlPin || d.Window != 4*time.Millisecond {
			t.Fatalf("round %d: %+v, decision window %v; want the pin 4ms in force", d.Round, e, d.Window)
		}
	}
	// The pin survives a snapshot, as does shadow mode.
	c.SetShadow(true)
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	c2 := newCouncil(t, Config{Nodes: 1, Policy: "greedy", Reward: RewardBandwidth, Credit: CreditRound})
	if err := c2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if op := c2.Operator(); !op.Shadow || len(op.Pins) != 1 || op.Pins[0] != (Pin{"SS/write", 4 * time.Millisecond}) {
		t.Fatalf("restored operator state %+v, want shadow and the pin of SS/write at 4ms", op)
	}
	c2.SetShadow(false)
	pin, fell, err := c2.Release(ctx)
	if err != nil || pin != 4*time.Millisecond || fell {
		t.Fatalf("Release = %v, %v, %v; want the 4ms pin released", pin, fell, err)
	}
	ds = drive(t, c2, &reporter{}, 5, stationary, 0, rand.New(rand.NewPCG(1, 1)))
	for _, d := range ds {
		if e := writeEntry(t, d); e.Control != "" {
			t.Fatalf("round %d after release: %+v, want learning's window", d.Round, e)
		}
	}
	// A snapshot with a pin of a window the Council does not have is refused.
	bad := newCouncil(t, Config{Nodes: 1, Policy: "greedy", Windows: []time.Duration{time.Millisecond, 2 * time.Millisecond}})
	if err := bad.Restore(snap); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("Restore with other windows = %v, want ErrSnapshot", err)
	}
}

// misled returns an environment in which 8 ms earns good (or poisoned)
// rewards until round change and 60 after, worse than the default's 100.
func misled(change int, early float64) env {
	return func(r int, w time.Duration) float64 {
		if w == 8*time.Millisecond {
			if r <= change {
				return early
			}
			return 60
		}
		return stationary(r, w)
	}
}

func guardrailConfig(g Guardrail) Config {
	return Config{Nodes: 1, Reward: RewardBandwidth, Credit: CreditRound, Guardrail: g}
}

func TestGuardrailFallsBackWhenLearningIsMisled(t *testing.T) {
	g := Guardrail{Share: 0.05, Threshold: 0.1, Span: 200, MinSamples: 4}
	for _, tt := range []struct {
		name   string
		change int
		early  float64
	}{
		{"looks best while explored, then worse than the control", 400, 150},
		{"poisoned early rewards", 40, 2000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCouncil(t, guardrailConfig(g))
			ds := drive(t, c, &reporter{}, tt.change+g.Span+100, misled(tt.change, tt.early), 0.05, rand.New(rand.NewPCG(7, 8)))
			var fell *GuardrailEvent
			for _, d := range ds {
				for i := range d.Guardrail {
					if fell == nil {
						fell = &d.Guardrail[i]
					}
				}
				if fell != nil && d.Round > fell.Round+1 {
					if e := writeEntry(t, d); e.Window != sched.DefaultWindow || e.Control != ControlGuardrail {
						t.Fatalf("round %d after the fallback: %+v, want the control %v in force", d.Round, e, sched.DefaultWindow)
					}
				}
			}
			if fell == nil {
				t.Fatalf("no fallback in %d rounds; operator state %+v", len(ds), c.Operator())
			}
			if fell.Action != GuardFallback || fell.Context != "SS/write" || fell.Learned != 8*time.Millisecond || fell.Control != sched.DefaultWindow ||
				!(fell.LearnedMean < 0.9*fell.ControlMean) || fell.LearnedN < g.MinSamples || fell.ControlN < g.MinSamples || fell.Until != 0 {
				t.Fatalf("fallback %+v, want SS/write from 8ms (mean below 90%% of the control's) to 1ms, until released", *fell)
			}
			if late := int(fell.Round) - tt.change; late <= 0 || late > g.Span {
				t.Fatalf("fell back at round %d, %d rounds after learning went wrong at %d; want within the span of %d", fell.Round, late, tt.change, g.Span)
			}
			t.Logf("fell back %d rounds after the change: %+v", int(fell.Round)-tt.change, *fell)
			// Learning goes on behind the fallback; release puts it back in force.
			if op := c.Operator(); len(op.Fallbacks) != 1 {
				t.Fatalf("operator state %+v, want one fallback", op)
			}
			if _, fallback, _ := c.Release("SS/write"); !fallback {
				t.Fatal("Release did not report the fallback")
			}
			if op := c.Operator(); len(op.Fallbacks) != 0 {
				t.Fatalf("after release: %+v", op)
			}
		})
	}
}

func TestGuardrailQuietInAFairEnvironment(t *testing.T) {
	g := Guardrail{Share: 0.05, Threshold: 0.1, Span: 200, MinSamples: 4}
	for seed := uint64(1); seed <= 5; seed++ {
		c, err := New(Config{Nodes: 1, Reward: RewardBandwidth, Credit: CreditRound, Guardrail: g, Detector: classByHandles{}}, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			t.Fatal(err)
		}
		ds := drive(t, c, &reporter{}, 1500, stationary, 0.10, rand.New(rand.NewPCG(seed, 9)))
		control := 0
		for _, d := range ds {
			if len(d.Guardrail) > 0 {
				t.Fatalf("seed %d: round %d: guardrail %+v in a stationary environment where learning is right", seed, d.Round, d.Guardrail)
			}
			e := writeEntry(t, d)
			if e.Control == ControlShare {
				control++
				if e.Window != sched.DefaultWindow || e.Prob < g.Share || e.Prob > 1 {
					t.Fatalf("seed %d round %d: control entry %+v, want the default with probability >= the share", seed, d.Round, e)
				}
			}
		}
		if share := float64(control) / float64(len(ds)); share < 0.025 || share > 0.075 {
			t.Errorf("seed %d: %d control decisions of %d (%.3f), want about %v", seed, control, len(ds), share, g.Share)
		}
		if best := c.Status().Contexts[0].Best; best != 8*time.Millisecond {
			t.Errorf("seed %d: learned %v, want 8ms", seed, best)
		}
	}
}

func TestGuardrailCooldownTriesLearningAgain(t *testing.T) {
	g := Guardrail{Share: 0.05, Threshold: 0.1, Span: 200, MinSamples: 4, Cooldown: 30}
	c := newCouncil(t, guardrailConfig(g))
	ds := drive(t, c, &reporter{}, 500, misled(40, 2000), 0.05, rand.New(rand.NewPCG(7, 8)))
	var fell, retry uint64
	for _, d := range ds {
		for _, e := range d.Guardrail {
			switch {
			case e.Action == GuardFallback && fell == 0:
				fell = d.Round
				if e.Until != d.Round+30 {
					t.Fatalf("fallback %+v, want until round %d", e, d.Round+30)
				}
			case e.Action == GuardRetry && retry == 0:
				retry = d.Round
			}
		}
	}
	if fell == 0 || retry != fell+30 {
		t.Fatalf("fell back at round %d, retried at %d; want a retry 30 rounds after the fallback", fell, retry)
	}
}

func TestGuardrailConfigValidation(t *testing.T) {
	for _, g := range []Guardrail{
		{Share: 0.6, Threshold: 0.1, Span: 10, MinSamples: 1},
		{Share: 0.05, Threshold: 0, Span: 10, MinSamples: 1},
		{Share: 0.05, Threshold: 0.1, Span: 0, MinSamples: 1},
		{Share: 0.05, Threshold: 0.1, Span: 10, MinSamples: 0},
		{Share: 0.05, Threshold: 0.1, Span: 10, MinSamples: 1, Cooldown: -1},
	} {
		if _, err := New(Config{Guardrail: g, Detector: classByHandles{}}, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrBadConfig) {
			t.Errorf("guardrail %+v: %v, want ErrBadConfig", g, err)
		}
	}
	if _, err := New(Config{Guardrail: DefaultGuardrail(), Detector: classByHandles{}}, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("DefaultGuardrail: %v", err)
	}
}
