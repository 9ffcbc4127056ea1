package selection

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// On a node where one algorithm moves twice the bytes of the others, the
// driver, after trying each, spends most of its periods on it; an idle
// period changes nothing; periods longer than an interval accumulate.
func TestDriverSettlesOnTheFastestAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	d, err := NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}, Period: 2 * time.Second}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	rate := map[string]int64{"mlf": 200, "to-agg": 100, "sjf": 100, "to": 90, "noop": 80}
	if _, change := d.Interval(0, time.Second, Figures{Bytes: rate[d.Current(0)], Served: 10}, rng); change {
		t.Fatal("changed after one interval of a two-second period")
	}
	now := time.Second
	for range 600 {
		now += time.Second
		d.Interval(0, now, Figures{Bytes: rate[d.Current(0)], Served: 10}, rng)
	}
	// AGIOS's probabilities follow the bandwidth shares (plus a rank
	// bonus), so the fastest gets the largest share of the time, not all.
	tm := d.TimeIn(0)
	var total time.Duration
	for _, v := range tm {
		total += v
	}
	for _, n := range names[1:] {
		if tm["mlf"] <= tm[n]*3/2 {
			t.Errorf("time in mlf %v, in %s %v: want mlf, twice as fast, at least 1.5 times as long", tm["mlf"], n, tm[n])
		}
	}
	if tm["mlf"] < total*3/10 {
		t.Errorf("mlf ran %v of %v, want >= 30%%", tm["mlf"], total)
	}
	// Idle periods change nothing.
	d, _ = NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}}, 1, rng)
	now = 0
	for range 20 {
		now += time.Second
		d.Interval(0, now, Figures{Bytes: rate[d.Current(0)], Served: 10}, rng)
	}
	cur := d.Current(0)
	for range 10 {
		now += time.Second
		if _, change := d.Interval(0, now, Figures{Bytes: 0, Served: 0}, rng); change {
			t.Fatal("an idle period changed the algorithm")
		}
	}
	if d.Current(0) != cur {
		t.Fatal("idle periods moved the node off its algorithm")
	}
}

// A period that served fewer than MinRequests requests is extended: its
// bytes count with the next interval's, and the choice waits for the
// period that reached the minimum.
func TestDriverExtendsShortPeriods(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b"}
	d, err := NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}, Policy: "greedy", MinRequests: 4}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	first := d.Current(0)
	for i := 1; i <= 3; i++ {
		if _, change := d.Interval(0, time.Duration(i)*time.Second, Figures{Bytes: 100, Served: 1}, rng); change {
			t.Fatalf("changed after %d requests, minimum 4", i)
		}
	}
	// The fourth request closes a 4-second period of 400 bytes: 100 B/s.
	d.Interval(0, 4*time.Second, Figures{Bytes: 100, Served: 1}, rng)
	if got := d.TimeIn(0)[first]; got != 4*time.Second {
		t.Fatalf("time in %s %v, want the extended period's 4s", first, got)
	}
	p := d.nodes[0].policy
	if v := p.Values()[slices.Index(names, first)]; v != 100 {
		t.Fatalf("reward %v, want 400 bytes over 4 s = 100", v)
	}
}

// With Shared, every node runs the one choice, made from the figures the
// caller sums.
func TestDriverSharedMakesOneChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	d, err := NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}, Policy: "thompson", Shared: true}, 4, rng)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Shared() {
		t.Fatal("Shared() false")
	}
	rate := map[string]int64{"mlf": 100, "to-agg": 400, "sjf": 100, "to": 50, "noop": 50}
	now := time.Duration(0)
	for range 200 {
		now += time.Second
		d.Interval(0, now, Figures{Bytes: 4 * rate[d.Current(0)], Served: 4}, rng)
		for n := 1; n < 4; n++ {
			if d.Current(n) != d.Current(0) {
				t.Fatalf("node %d runs %s, node 0 %s", n, d.Current(n), d.Current(0))
			}
		}
	}
	if tm := d.TimeIn(3); tm["to-agg"] < 150*time.Second {
		t.Errorf("to-agg, 4 times faster, ran %v of 200 s: %v", tm["to-agg"], tm)
	}
}

// Two access patterns alternate period by period, each with its own best
// algorithm. With pattern matching the Markov chain predicts the next
// pattern and that pattern's policy chooses: the right algorithm runs most
// of the time. Without it one policy sees both and cannot do better than
// about half.
func TestDriverPatternsFollowAnAlternation(t *testing.T) {
	names := []string{"sjf", "to-agg", "mlf"}
	best := []string{"sjf", "to-agg"}
	series := func(k int) []Request {
		var out []Request
		n, step := 20, int64(4096) // pattern 0: 20 contiguous requests
		if k == 1 {
			n, step = 40, 1<<30 // pattern 1: 40 requests far apart
		}
		for i := range n {
			out = append(out, Request{File: 1, Offset: int64(i) * step, Length: 4096, Write: true})
		}
		return out
	}
	run := func(patterns *KBConfig) float64 {
		rng := rand.New(rand.NewPCG(7, 8))
		d, err := NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}, Policy: "thompson", Patterns: patterns}, 1, rng)
		if err != nil {
			t.Fatal(err)
		}
		right := 0
		const periods = 400
		for p := range periods {
			k := p % 2
			for _, r := range series(k) {
				d.Request(0, r)
			}
			bytes := int64(50)
			if d.Current(0) == best[k] {
				bytes = 100
				if p >= periods/2 {
					right++
				}
			}
			d.Interval(0, time.Duration(p+1)*time.Second, Figures{Bytes: bytes, Served: 1}, rng)
		}
		return float64(right) / (periods / 2)
	}
	with, without := run(&KBConfig{}), run(nil)
	if with < 0.8 || without > 0.6 {
		t.Errorf("right algorithm in the second half: with patterns %.2f (want >= 0.8), without %.2f (want <= 0.6)", with, without)
	}
	t.Logf("right algorithm in the second half: with patterns %.2f, without %.2f", with, without)
}

// A period too short for the knowledge base (fewer requests than
// MinPatternSize: a 16 MiB test's period) is not a pattern: the node's
// own learner, credited with it, chooses for the next one, not the policy
// of the pattern predicted from the last long period, which short periods
// never credit.
func TestDriverShortPeriodsLearnWithoutAPattern(t *testing.T) {
	names := []string{"sjf", "to-agg", "mlf"}
	rng := rand.New(rand.NewPCG(3, 4))
	d, err := NewDriver(DriverConfig{Bandit: BanditConfig{Schedulers: names}, Policy: "thompson", Patterns: &KBConfig{}}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	const long, short = 100, 300 // long periods first (20 contiguous requests, sjf best), then short ones (2 requests, mlf best)
	for p := range long + short {
		n, best := 20, "sjf"
		if p >= long {
			n, best = 2, "mlf"
		}
		for i := range n {
			d.Request(0, Request{File: 1, Offset: int64(i) * 4096, Length: 4096, Write: true})
		}
		bytes := int64(50)
		if d.Current(0) == best {
			bytes = 100
			if p >= long+short/2 {
				right++
			}
		}
		d.Interval(0, time.Duration(p+1)*time.Second, Figures{Bytes: bytes, Served: 1}, rng)
	}
	if got := float64(right) / (short / 2); got < 0.8 {
		t.Errorf("short periods under their best algorithm in their second half: %.2f, want >= 0.8", got)
	}
}
