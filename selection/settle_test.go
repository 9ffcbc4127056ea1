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
	// (Periods recorded apart, no algorithm's in a row completing a
	// cycle: the estimates are the periods' fit.)
	if e := st.Estimates(); e["slow"] < 1.05*e["fast"] || e["slow"] > 1.15*e["fast"] {
		t.Errorf("estimates %v: want slow 10%% above fast", e)
	}
}

// A steady workload settles: two algorithms 2% apart, measured with
// 3% noise over 600 periods, cause no change once settled, and a third
// 20% slower is never run after exploring (a period each in turn until
// the workload has shown a cycle, then a cycle each).
func TestSettleSettlesOnASteadyWorkload(t *testing.T) {
	w := phaseWorkload{rate: map[string][2]float64{"a": {0.2, 1}, "b": {0.204, 1.02}, "c": {0.24, 1.2}}}
	st, err := NewSettle(SettleConfig{Validity: time.Hour}, []string{"a", "b", "c"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cur, changes, inC, explored := "", 0, 0, -1
	for k := range 600 {
		now := time.Duration(k) * time.Second
		c := st.Choose(cur, now)
		if explored < 0 && c.Reason != "explore" {
			explored = k // each algorithm ran 3 periods and a cycle of the workload (3 writes, a read)
		}
		if explored >= 0 {
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
	if explored < 0 || explored > 40 {
		t.Fatalf("explored until period %d, want at most 40", explored)
	}
	if changes > 1 || inC > 0 {
		t.Errorf("after exploring (until period %d): %d changes, %d periods in the slowest; want at most 1 and 0", explored, changes, inC)
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

// stragglerWorkload writes 200 MB, then reads 200 MB, over and over, in
// 1 s periods: the write phase's first 4 periods move 50 MB each under
// either algorithm, then the processes that "slow" held back finish, at
// 5 MB/s, for 4 periods times the share of those 4 that "slow" ran;
// the read phase takes 2 periods at 100 MB/s. Whoever runs the tail
// pays for what ran before it: a single period measures its place in
// the phase and the algorithm before as much as the one in force.
type stragglerWorkload struct {
	k        int // period in the cycle
	slowBulk int // periods of the write phase's first 4 that "slow" ran
	tail     int // periods of the current tail
}

// period runs algorithm s for one period: the bytes read and written.
func (w *stragglerWorkload) period(s string) (read, write int64) {
	switch {
	case w.k < 4:
		if s == "slow" {
			w.slowBulk++
		}
		w.k++
		if w.k == 4 {
			w.tail = w.slowBulk
		}
		return 0, 50e6
	case w.tail > 0:
		w.tail--
		return 0, 5e6
	case w.k < 6:
		w.k++
		if w.k == 6 {
			w.k, w.slowBulk = 0, 0
		}
		return 100e6, 0
	}
	return 0, 0
}

// On a workload whose write phases end with stragglers that the algorithm
// in force earlier left, Settle judges whole cycles and settles on the
// algorithm that leaves none, whichever is explored first: period by
// period, the tail's periods charge whoever runs them.
func TestSettleJudgesWholeCyclesOfAPhasedWorkload(t *testing.T) {
	for _, names := range [][]string{{"slow", "fast"}, {"fast", "slow"}} {
		for _, start := range []int{0, 1, 2, 3} {
			st, err := NewSettle(SettleConfig{Validity: time.Hour}, names, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var w stragglerWorkload
			cur, inFast, counted := "", 0, 0
			for k := start; k < start+300; k++ {
				now := time.Duration(k) * time.Second
				c := st.Choose(cur, now)
				cur = c.Scheduler
				if k >= start+50 {
					counted++
					if cur == "fast" {
						inFast++
					}
				}
				r, wr := w.period(cur)
				if err := st.Record(cur, 1, r, wr, now+time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if inFast < counted*95/100 {
				t.Errorf("%v, start %d: fast ran %d of the last %d periods, want at least 95%% (estimates %v)", names, start, inFast, counted, st.Estimates())
			}
		}
	}
}
