package tune

import (
	"math"
	"testing"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

// peaked is a synthetic client whose bandwidth peaks at (pages, rpcs),
// falling with the distance in doublings, as response does.
func peaked(k []knob.Knob, pages, rpcs int) float64 {
	d := func(v, best int) float64 { x := math.Log2(float64(v) / float64(best)); return x * x }
	return 1000 * math.Exp(-0.15*(d(k[0].Value, pages)+d(k[1].Value, rpcs)))
}

// On one pattern the bandit climbs from Lustre's defaults to the peak and
// stays there, bar its rechecks of a neighbour.
func TestPatternBanditClimbs(t *testing.T) {
	tn, err := NewPatternBandit(BanditConfig{Knobs: LustreKnobs()})
	if err != nil {
		t.Fatal(err)
	}
	pt := Pattern{Key: "write-fpp-1m-nppc"}
	var late float64
	for i := range 150 {
		bw := response(tn.Knobs())
		tn.Step(time.Duration(i)*time.Second, Observation{Bandwidth: bw, Pattern: pt})
		if i >= 100 {
			late += bw / 50
		}
	}
	t.Logf("mean bandwidth over the last 50 of 150 intervals %.0f of 1000; knobs %+v", late, tn.Knobs())
	if late < 970 {
		t.Errorf("mean bandwidth over the last 50 intervals %.0f of 1000, want >= 970 (knobs %+v)", late, tn.Knobs())
	}
}

// Two patterns whose peaks differ take turns: once both are learnt, the
// interval after a change of pattern already runs at the new pattern's
// peak (the jump), and so do all later ones but the rechecks of a
// neighbour (one in 30).
func TestPatternBanditJumpsToWhatAPatternLearnt(t *testing.T) {
	tn, _ := NewPatternBandit(BanditConfig{Knobs: LustreKnobs()})
	peaks := map[string][2]int{"a": {64, 32}, "b": {1024, 2}}
	now := time.Duration(0)
	for round := range 6 {
		for _, key := range []string{"a", "b"} {
			pk := peaks[key]
			off := 0
			for i := range 60 {
				bw := peaked(tn.Knobs(), pk[0], pk[1])
				if round >= 3 && i >= 1 && bw < 950 {
					if off++; i == 1 || off > 2 {
						t.Fatalf("round %d, pattern %s, interval %d after the change: %.0f of 1000 at %+v (%d off the peak)", round, key, i, bw, tn.Knobs(), off)
					}
				}
				tn.Step(now, Observation{Bandwidth: bw, Pattern: Pattern{Key: key}})
				now += time.Second
			}
		}
	}
	if tn.Switches != 11 || tn.Jumps < 9 {
		t.Errorf("%d changes of pattern, %d jumps: want 11, >= 9", tn.Switches, tn.Jumps)
	}
}

// An interval of unknown pattern changes nothing, and one that follows a
// change of pattern is not credited to the setting in force.
func TestPatternBanditIgnoresUnknownAndMixedIntervals(t *testing.T) {
	tn, _ := NewPatternBandit(BanditConfig{Knobs: LustreKnobs()})
	if s := tn.Step(0, Observation{Bandwidth: 500}); s != nil {
		t.Fatalf("unknown pattern: %v, want nothing", s)
	}
	tn.Step(time.Second, Observation{Bandwidth: 500, Pattern: Pattern{Key: "a"}})
	p := tn.ctx.Policy("a#0")
	for _, n := range p.Counts() {
		if n != 0 {
			t.Fatalf("the first interval of a pattern was credited: counts %v", p.Counts())
		}
	}
}

// When the same pattern's bandwidth changes by more than Drift under the
// setting it had learnt (a re-read served from the page cache), it starts
// afresh and finds the new peak.
func TestPatternBanditStartsAfreshWhenAPatternDrifts(t *testing.T) {
	tn, _ := NewPatternBandit(BanditConfig{Knobs: LustreKnobs()})
	pt := Pattern{Key: "read-shared-1m-nppc"}
	now := time.Duration(0)
	step := func(scale float64, pages, rpcs int) float64 {
		bw := scale * peaked(tn.Knobs(), pages, rpcs)
		tn.Step(now, Observation{Bandwidth: bw, Pattern: pt})
		now += time.Second
		return bw
	}
	for range 100 {
		step(1, 64, 32)
	}
	var late float64
	for i := range 150 {
		if bw := step(3, 1024, 2); i >= 100 {
			late += bw / 50
		}
	}
	if tn.Drifts == 0 || late < 0.95*3000 {
		t.Errorf("%d fresh starts, mean %.0f of 3000 over the last 50 intervals at %+v; want a fresh start and >= 2850", tn.Drifts, late, tn.Knobs())
	}
}

var _ Tuner = (*PatternBandit)(nil)
