package selection

import (
	"math/rand/v2"
	"testing"
	"time"
)

// phaseWorkload is a workload that writes for 3 periods then reads for 1,
// over and over; an algorithm's seconds per MB read and written.
type phaseWorkload struct {
	rate map[string][2]float64 // algorithm: seconds per MB read, written
}

// period runs algorithm s for 1 s in period k: the MB it reads and
// writes, with noise of +-noise.
func (w phaseWorkload) period(s string, k int, rng *rand.Rand, noise float64) (read, write int64) {
	f := 1 + noise*(2*rng.Float64()-1)
	if k%4 == 3 {
		return int64(f * 1e6 / w.rate[s][0]), 0
	}
	return 0, int64(f * 1e6 / w.rate[s][1])
}

// Settle explores in lockstep: the period starting at t runs the
// algorithm at index t / period modulo their number, Rounds times each,
// so that two nodes started at different times run the same algorithm in
// the same period.
func TestSettleExploresInLockstep(t *testing.T) {
	names := []string{"a", "b", "c"}
	for _, start := range []time.Duration{0, 7 * time.Second} {
		st, err := NewSettle(SettleConfig{Rounds: 2}, names, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cur := ""
		for k := range 6 {
			now := start + time.Duration(k)*time.Second
			c := st.Choose(cur, now)
			want := names[int(now/time.Second)%3]
			if c.Scheduler != want || c.Reason != "explore" {
				t.Fatalf("start %v, period %d: %+v, want %s by exploring", start, k, c, want)
			}
			cur = c.Scheduler
			if err := st.Record(cur, 1, 0, 1e6, now+time.Second); err != nil {
				t.Fatal(err)
			}
		}
		if c := st.Choose(cur, start+6*time.Second); c.Reason == "explore" {
			t.Errorf("start %v: still exploring after 2 rounds: %+v", start, c)
		}
	}
}

// An algorithm that happened to run in the fast read periods is not
// taken for the faster: "fast" is 10% faster than "slow" at both reads
// and writes, but exploration ran "slow" in more read periods. A
// period's bandwidth ranks "slow" first; Settle's fit ranks "fast".
func TestSettleSeparatesTheAlgorithmFromThePhase(t *testing.T) {
	w := phaseWorkload{rate: map[string][2]float64{"fast": {0.2, 1}, "slow": {0.22, 1.1}}}
	st, err := NewSettle(SettleConfig{}, []string{"fast", "slow"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// fast in write periods 0, 1, 2 and read period 3 ...; slow in read
	// periods 7, 11 and write period 4.
	var bw = map[string]float64{}
	var n = map[string]float64{}
	for _, run := range []struct {
		s string
		k int
	}{{"fast", 0}, {"fast", 1}, {"fast", 2}, {"fast", 3}, {"slow", 4}, {"slow", 7}, {"slow", 11}} {
		r, wr := w.period(run.s, run.k, rng, 0.01)
		if err := st.Record(run.s, 1, r, wr, time.Duration(run.k+1)*time.Second); err != nil {
			t.Fatal(err)
		}
		bw[run.s] += float64(r + wr)
		n[run.s]++
	}
	if bw["slow"]/n["slow"] <= bw["fast"]/n["fast"] {
		t.Fatalf("the mean bandwidth ranks fast first (%v over %v): the test no longer tests the fit", bw, n)
	}
	c := st.Choose("slow", 12*time.Second)
	if c.Scheduler != "fast" || c.Reason != "estimates" {
		t.Errorf("chose %+v, want fast by the estimates", c)
	}
	if e := c.Estimates; e["slow"] < 1.05*e["fast"] || e["slow"] > 1.15*e["fast"] {
		t.Errorf("estimates %v: want slow 10%% above fast", e)
	}
}

// A steady workload settles: two algorithms 2% apart, measured with
// 3% noise over 600 periods, cause no change once settled, and a third
// 20% slower is never run after exploring.
func TestSettleSettlesOnASteadyWorkload(t *testing.T) {
	w := phaseWorkload{rate: map[string][2]float64{"a": {0.2, 1}, "b": {0.204, 1.02}, "c": {0.24, 1.2}}}
	st, err := NewSettle(SettleConfig{Validity: time.Hour}, []string{"a", "b", "c"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cur, changes, inC := "", 0, 0
	for k := range 600 {
		now := time.Duration(k) * time.Second
		c := st.Choose(cur, now)
		if k >= 9 {
			if c.Scheduler != cur {
				changes++
			}
			if c.Scheduler == "c" {
				inC++
			}
		}
		cur = c.Scheduler
		r, wr := w.period(cur, k, rng, 0.03)
		_ = st.Record(cur, 1, r, wr, now+time.Second)
	}
	if changes > 1 || inC > 0 {
		t.Errorf("after exploring: %d changes, %d periods in the slowest; want at most 1 and 0", changes, inC)
	}
}

// Measurements expire after Validity: the algorithms are explored again,
// so that a changed workload is noticed.
func TestSettleExploresAgainAfterValidity(t *testing.T) {
	st, _ := NewSettle(SettleConfig{Rounds: 1, Validity: 10 * time.Second}, []string{"a", "b"}, time.Second)
	_ = st.Record("a", 1, 0, 2e6, time.Second)
	_ = st.Record("b", 1, 0, 1e6, 2*time.Second)
	if c := st.Choose("b", 2*time.Second); c.Scheduler != "a" || c.Reason != "estimates" {
		t.Fatalf("%+v, want a by the estimates", c)
	}
	for k := 3; k <= 12; k++ {
		_ = st.Record("a", 1, 0, 2e6, time.Duration(k)*time.Second)
	}
	if c := st.Choose("a", 12*time.Second+time.Millisecond); c.Scheduler != "b" || c.Reason != "explore" {
		t.Errorf("after b's measurement expired: %+v, want b explored", c)
	}
}
