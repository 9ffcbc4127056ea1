package selection

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var agios = []string{"MLF", "TO-agg", "SJF", "TO", "NOOP"}

// Every scheduler is tried once, in an order drawn at random, before any
// is chosen by reward.
func TestBanditTriesEachSchedulerFirst(t *testing.T) {
	b, err := NewBandit(BanditConfig{Schedulers: agios})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for k := range agios {
		s := b.Choose(time.Duration(k)*time.Second, rng)
		if seen[s] {
			t.Fatalf("%s chosen twice while others are untried", s)
		}
		seen[s] = true
		if err := b.Record(s, 100, time.Duration(k)*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if b.Probabilities(5*time.Second) == nil {
		t.Fatal("every scheduler tried, still no probabilities")
	}
}

// The probabilities follow AGIOS's rule: with rewards 400, 300, 200, 100
// and 0 (sum 1,000), best to worst 40+12, 30+9, 20+6, 10+3, 0+0 percent,
// normalised, and the last lifted to the 3% floor.
func TestBanditProbabilitiesAGIOSRule(t *testing.T) {
	b, _ := NewBandit(BanditConfig{Schedulers: agios})
	for i, bw := range []float64{400, 300, 200, 100, 0} {
		b.Record(agios[i], bw, 0)
	}
	p := b.Probabilities(time.Second)
	raw := []float64{52, 39, 26, 13, 0}
	var sum float64
	for _, v := range raw {
		sum += v
	}
	if math.Abs(p[4]-0.03) > 1e-12 {
		t.Errorf("worst scheduler: %v, want the floor 0.03", p[4])
	}
	// The others keep the ratios of their shares above the floor.
	for i := 1; i < 4; i++ {
		if got, want := (p[0]-0.03)/(p[i]-0.03), (raw[0]/sum-0.03)/(raw[i]/sum-0.03); math.Abs(got-want) > 1e-9 {
			t.Errorf("p[0]/p[%d] = %v, want %v (the lift taken in proportion above the floor)", i, got, want)
		}
	}
}

// Measurements older than Validity are dropped; a scheduler left with none
// is untried again and chosen before the others.
func TestBanditForgetsOldMeasurements(t *testing.T) {
	b, _ := NewBandit(BanditConfig{Schedulers: []string{"a", "b"}, Validity: 10 * time.Second})
	b.Record("a", 5, 0)
	b.Record("b", 9, 8*time.Second)
	if b.Probabilities(9*time.Second) == nil {
		t.Fatal("both tried and valid at 9 s")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	if p := b.Probabilities(11 * time.Second); p != nil {
		t.Fatalf("a's only measurement is 11 s old, validity 10 s: probabilities %v, want a untried", p)
	}
	if s := b.Choose(11*time.Second, rng); s != "a" {
		t.Errorf("chose %s, want the untried a", s)
	}
}

// Property: the probabilities are a distribution, each at least the
// floor, better schedulers never less likely than worse ones.
func TestBanditProbabilitiesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 8).Draw(t, "n")
		names := agios[:0:0]
		for i := range n {
			names = append(names, string(rune('a'+i)))
		}
		b, err := NewBandit(BanditConfig{Schedulers: names, PerformanceWindow: rapid.IntRange(1, 10).Draw(t, "window")})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			for range rapid.IntRange(1, 12).Draw(t, "k") {
				b.Record(names[i], rapid.Float64Range(0, 1e9).Draw(t, "bw"), 0)
			}
		}
		p := b.Probabilities(time.Second)
		var sum float64
		for i, v := range p {
			sum += v
			if v < 0.03-1e-12 {
				t.Fatalf("p[%d] = %v below the floor", i, v)
			}
			for j := range p {
				mi, _ := b.mean(i)
				mj, _ := b.mean(j)
				if mi > mj && p[i] < p[j]-1e-12 {
					t.Fatalf("mean %v > %v but p %v < %v", mi, mj, p[i], p[j])
				}
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("probabilities sum to %v", sum)
		}
	})
}

// Choose draws by the probabilities: over many draws each scheduler's
// share is its probability.
func TestBanditChooseFollowsProbabilities(t *testing.T) {
	b, _ := NewBandit(BanditConfig{Schedulers: []string{"fast", "slow", "mid"}})
	b.Record("fast", 300, 0)
	b.Record("slow", 50, 0)
	b.Record("mid", 150, 0)
	p := b.Probabilities(0)
	rng := rand.New(rand.NewPCG(5, 6))
	count := map[string]int{}
	const draws = 20000
	for range draws {
		count[b.Choose(0, rng)]++
	}
	for i, s := range b.Schedulers() {
		if got := float64(count[s]) / draws; math.Abs(got-p[i]) > 0.015 {
			t.Errorf("%s drawn %.3f of the time, probability %.3f", s, got, p[i])
		}
	}
}

func TestBanditConfigErrors(t *testing.T) {
	for _, c := range []BanditConfig{
		{Schedulers: []string{"a"}},
		{Schedulers: []string{"a", "a"}},
		{Schedulers: []string{"a", "b"}, MinProbability: 0.6},
		{Schedulers: []string{"a", "b"}, PerformanceWindow: -1},
	} {
		if _, err := NewBandit(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	b, _ := NewBandit(BanditConfig{Schedulers: []string{"a", "b"}})
	if err := b.Record("c", 1, 0); err == nil {
		t.Error("an unknown scheduler's reward was accepted")
	}
}
