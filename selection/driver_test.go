package selection

import (
	"math/rand/v2"
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
	if _, change := d.Interval(0, time.Second, rate[d.Current(0)], 10, rng); change {
		t.Fatal("changed after one interval of a two-second period")
	}
	now := time.Second
	for range 600 {
		now += time.Second
		d.Interval(0, now, rate[d.Current(0)], 10, rng)
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
		d.Interval(0, now, rate[d.Current(0)], 10, rng)
	}
	cur := d.Current(0)
	for range 10 {
		now += time.Second
		if _, change := d.Interval(0, now, 0, 0, rng); change {
			t.Fatal("an idle period changed the algorithm")
		}
	}
	if d.Current(0) != cur {
		t.Fatal("idle periods moved the node off its algorithm")
	}
}
