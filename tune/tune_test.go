package tune

import (
	"errors"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/tune/knob"
)

// response is a synthetic client: bandwidth peaks at 64 pages per RPC and
// 32 RPCs in flight, falling with the distance in doublings.
func response(k []knob.Knob) float64 {
	d := func(v, best int) float64 { x := math.Log2(float64(v) / float64(best)); return x * x }
	return 1000 * math.Exp(-0.15*(d(k[0].Value, 64)+d(k[1].Value, 32)))
}

// Every Interval one knob moves, the two in turn, by a factor of two;
// between decisions nothing changes.
func TestIOPathTuneAlternatesEveryInterval(t *testing.T) {
	tn, err := NewIOPathTune(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s := tn.Step(0, Observation{Bandwidth: 100}); s != nil {
		t.Fatalf("first observation: %v, want to watch only", s)
	}
	if s := tn.Step(5*time.Second, Observation{Bandwidth: 100}); s != nil {
		t.Fatalf("5 s in: %v, want nothing before the 10 s interval", s)
	}
	s1 := tn.Step(10*time.Second, Observation{Bandwidth: 100})
	s2 := tn.Step(20*time.Second, Observation{Bandwidth: 120})
	if len(s1) != 1 || len(s2) != 1 || s1[0].Knob == s2[0].Knob {
		t.Fatalf("two decisions: %v then %v, want one knob each, alternating", s1, s2)
	}
	if s1[0] != (Setting{"max_pages_per_rpc", 512}) || s2[0] != (Setting{"max_rpcs_in_flight", 16}) {
		t.Errorf("first moves %v, %v: want both doubled from Lustre's defaults (256, 8)", s1, s2)
	}
}

// Driving the synthetic client, the heuristic climbs to the peak and stays
// near it: its last 50 intervals reach at least 85% of the best bandwidth.
func TestIOPathTuneClimbsToThePeak(t *testing.T) {
	tn, _ := NewIOPathTune(Config{})
	var late float64
	for i := range 150 {
		bw := response(tn.Knobs())
		tn.Step(time.Duration(i)*10*time.Second, Observation{Bandwidth: bw})
		if i >= 100 {
			late += bw / 50
		}
	}
	t.Logf("mean bandwidth over the last 50 intervals %.0f of 1000 (Lustre defaults: %.0f); knobs %+v", late, response(LustreKnobs()), tn.Knobs())
	if late < 850 {
		t.Errorf("mean bandwidth over the last 50 intervals %.0f of 1000 (knobs %+v)", late, tn.Knobs())
	}
}

// When the cache fills while the bandwidth falls, the last change is
// reverted at once.
func TestIOPathTuneRevertsUnderContention(t *testing.T) {
	tn, _ := NewIOPathTune(Config{})
	tn.Step(0, Observation{Bandwidth: 100, DirtyBytes: 1 << 20})
	s := tn.Step(10*time.Second, Observation{Bandwidth: 100, DirtyBytes: 1 << 20}) // pages 256 -> 512
	if s[0].Value != 512 {
		t.Fatalf("first move %v", s)
	}
	r := tn.Step(20*time.Second, Observation{Bandwidth: 60, DirtyBytes: 8 << 20})
	if len(r) != 1 || r[0] != (Setting{"max_pages_per_rpc", 256}) || tn.Reverts != 1 {
		t.Fatalf("contention after doubling the pages: %v (reverts %d), want pages back to 256", r, tn.Reverts)
	}
}

// Property: whatever the bandwidths, every value stays within its knob's
// range and each change is a doubling or a halving (or a clamp to a bound).
func TestIOPathTuneStaysInRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tn, _ := NewIOPathTune(Config{})
		prev := tn.Knobs()
		for i := range rapid.IntRange(1, 200).Draw(t, "steps") {
			tn.Step(time.Duration(i)*10*time.Second, Observation{
				Bandwidth:  rapid.Float64Range(0, 1e10).Draw(t, "bw"),
				DirtyBytes: rapid.Int64Range(0, 1<<34).Draw(t, "dirty")})
			for j, k := range tn.Knobs() {
				if k.Value < k.Min || k.Value > k.Max {
					t.Fatalf("%s = %d outside [%d, %d]", k.Name, k.Value, k.Min, k.Max)
				}
				p := prev[j].Value
				if k.Value != p && k.Value != 2*p && k.Value != p/2 && k.Value != k.Min && k.Value != k.Max {
					t.Fatalf("%s moved %d -> %d", k.Name, p, k.Value)
				}
			}
			prev = tn.Knobs()
		}
	})
}

func TestIOPathTuneConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Knobs: []knob.Knob{}},
		{Knobs: []knob.Knob{{Name: "x", Value: 0, Min: 1, Max: 4}}},
		{Knobs: []knob.Knob{{Name: "x", Value: 2, Min: 4, Max: 1}}},
		{Interval: -time.Second},
	} {
		if _, err := NewIOPathTune(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}

var _ Tuner = (*IOPathTune)(nil)
