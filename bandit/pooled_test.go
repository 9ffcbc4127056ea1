package bandit

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The heavy-tailed arm (heavyTail: arm 1 best in the mean only through one
// repetition in five) is lost by thompson-warm in about a third of the runs
// once three of its common rewards made its posterior narrow; thompson-pool
// keeps it: its variance borrows arm 0's, and the log floor pulls it again
// while its mean is within two of its standard errors of the leader's, so
// its rare high reward is seen. At their defaults (log floor 2), and with
// the log floor at 4, which pulls more and keeps it more. Since the floor
// judges plausibility by the pooled data rather than thompson's prior
// (plausibleSEs, 2026-11-27) it keeps the arm in 0.741 of the last bin
// (0.778 before; thompson-warm 0.675), and 0.787 at floor 4: the price of
// not forcing windows 10 to 20% worse in the real demo's read phases. With
// the warm-up in random order: 0.726 and 0.776 (thompson-warm 0.650), the
// same runs drawing differently, within the shares' noise (600 runs: a
// standard error of 0.018).
func TestThompsonPoolKeepsHeavyTailedArm(t *testing.T) {
	const steps, bin, runs = 200, 20, 600
	warm := bestShare(t, "thompson-warm", Options{}, steps, bin, runs)
	for _, c := range []struct {
		floor, min, gain float64
	}{{0, 0.70, 0.06}, {4, 0.75, 0.1}} {
		pool := bestShare(t, "thompson-pool", Options{LogFloor: c.floor}, steps, bin, runs)
		t.Logf("share of the heavy-tailed best arm in the last bin: thompson-pool (log floor %v: 0 is the default) %.3f, thompson-warm %.3f", c.floor, pool, warm)
		if pool < c.min || pool < warm+c.gain {
			t.Errorf("thompson-pool (log floor %v) %.3f, thompson-warm %.3f: want >= %v and a gain of at least %v", c.floor, pool, warm, c.min, c.gain)
		}
	}
}

// The log floor pulls an arm that may still be the best at least
// LogFloor*ln(t/k) times, and leaves alone an arm far below the leader.
func TestThompsonPoolLogFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p, err := New("thompson-pool", 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lf := OptionsOf(p).LogFloor
	if lf != 2 || OptionsOf(p).Pool != 4 {
		t.Fatalf("defaults %+v, want Pool 4, LogFloor 2", OptionsOf(p))
	}
	// Arm 0 pays 100, arm 1 N(99, 10^2) (close: plausible), arm 2 10 (far below).
	reward := func(a int) float64 {
		switch a {
		case 0:
			return 100 + rng.NormFloat64()
		case 1:
			return 99 + 10*rng.NormFloat64()
		}
		return 10 + rng.NormFloat64()
	}
	const steps = 2000
	for range steps {
		a, _ := p.(Chooser).Choose(rng)
		p.Update(a, reward(a))
	}
	n := p.Counts()
	floor := math.Floor(lf * math.Log(float64(steps)/3))
	if float64(n[1]) < floor {
		t.Errorf("plausible arm 1 pulled %d times, floor %v", n[1], floor)
	}
	if n[2] > 3 {
		t.Errorf("arm 2, far below the leader, pulled %d times, want only its warm-up of 3", n[2])
	}
	// A forced pull is reported with probability 1, and Probs agrees.
	q, _ := New("thompson-pool", 2, Options{})
	for range 3 {
		q.Update(0, 100)
		q.Update(1, 99)
	}
	for range 20 {
		q.Update(0, 100)
	}
	// t = 26, k = 2: the floor is 4*ln(13) = 10.3 > 3 rewards of arm 1.
	if c := q.Select(rng); c.Arm != 1 || c.Prob != 1 || !c.Explore {
		t.Fatalf("floor pull %+v, want arm 1 with probability 1", c)
	}
	if pr := q.(Distribution).Probs(); pr[1] != 1 {
		t.Fatalf("Probs %v, want arm 1 certain", pr)
	}
}

// The log floor judges plausibility by the data: 7 arms whose rewards vary
// by 5 around 100, 98, 95, 90, 85, 82 and 80, the leader pulled more. Once
// the floor is due (t = 33, k = 7: 2 ln(33/7) > 3 rewards), it forces the
// arms within two standard errors of the leader (98 and 95) and not those
// 10 or more below, which thompson's prior alone (a third of the largest
// reward) would have kept plausible.
func TestThompsonPoolFloorJudgesByData(t *testing.T) {
	means := []float64{100, 98, 95, 90, 85, 82, 80}
	p, err := New("thompson-pool", len(means), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []float64{-5, 0, 5} {
		for a, m := range means {
			p.Update(a, m+d)
		}
	}
	for i := range 12 {
		p.Update(0, 100+float64(i%3-1)*5)
	}
	probs := p.(Distribution).Probs
	// Arms 1 and 2 have 3 rewards each: one of them is drawn (probability
	// 1/2 each), then the other is forced.
	if pr := probs(); pr[1] != 0.5 || pr[2] != 0.5 {
		t.Fatalf("t = %d: probabilities %.3f, want arms 1 and 2 forced with 0.5 each", p.(*policy).core.t, pr)
	}
	p.Update(1, means[1])
	if pr := probs(); pr[2] != 1 {
		t.Fatalf("t = %d: probabilities %.3f, want arm 2 forced", p.(*policy).core.t, pr)
	}
	p.Update(2, means[2])
	for a, v := range probs() {
		if v == 1 {
			t.Fatalf("t = %d: arm %d (mean %v) forced, want no arm 10 or more below the leader forced", p.(*policy).core.t, a, means[a])
		}
		if a >= 3 && v > 0.01 {
			t.Errorf("arm %d (mean %v): probability %.3f, want about 0", a, means[a], v)
		}
	}
}

// Pooling: an arm with three identical rewards gets a width from the
// context's spread (arm 0: 0, 100, 200), where without pooling (Pool tiny)
// only thompson's weak prior (Spread) keeps it above zero.
func TestThompsonPoolWidth(t *testing.T) {
	build := func(pool float64) []float64 {
		p, err := New("thompson-pool", 2, Options{Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []float64{0, 200, 100} {
			p.Update(0, r)
		}
		for range 3 {
			p.Update(1, 95)
		}
		return (pooled{}).sds(&p.(*policy).core)
	}
	pooledSD, own := build(4), build(1e-9)
	if pooledSD[1] < 1.5*own[1] {
		t.Fatalf("arm 1's width: %v pooled, %v alone: pooling should widen it", pooledSD[1], own[1])
	}
}

func TestThompsonPoolOptions(t *testing.T) {
	for _, tt := range []struct {
		pol string
		opt Options
	}{
		{"thompson-warm", Options{Pool: 2}},
		{"thompson", Options{LogFloor: 1}},
		{"thompson-np", Options{LogFloor: 1}},
		{"thompson-pool", Options{Pool: -1}},
		{"thompson-pool", Options{LogFloor: math.NaN()}},
		{"thompson-pool", Options{LogFloor: math.Inf(1)}},
	} {
		if _, err := New(tt.pol, 3, tt.opt); !errors.Is(err, ErrBadOptions) {
			t.Errorf("New(%s, %+v) error %v, want ErrBadOptions", tt.pol, tt.opt, err)
		}
	}
	if p, err := New("thompson-pool-fav", 3, Options{}); err != nil || !OptionsOf(p).TryFavourites {
		t.Fatalf("thompson-pool-fav: %v, options %+v", err, OptionsOf(p))
	}
}

// The state keeps the new options; a state without them (or with them
// for another policy) is refused, and the state does not grow with rewards.
func TestThompsonPoolState(t *testing.T) {
	p, _ := New("thompson-pool", 4, Options{})
	rng := rand.New(rand.NewPCG(1, 1))
	for range 10 {
		a, _ := p.(Chooser).Choose(rng)
		p.Update(a, rng.Float64())
	}
	small, _ := Marshal(p)
	for range 10000 {
		a, _ := p.(Chooser).Choose(rng)
		p.Update(a, rng.Float64())
	}
	data, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > len(small)+64 {
		t.Fatalf("state grew from %d to %d bytes", len(small), len(data))
	}
	if !strings.Contains(string(data), `"pool":4`) || !strings.Contains(string(data), `"log_floor":2`) {
		t.Fatalf("state %s lacks pool or log_floor", data)
	}
	q, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if OptionsOf(q) != OptionsOf(p) {
		t.Fatalf("restored options %+v, want %+v", OptionsOf(q), OptionsOf(p))
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	delete(m["options"].(map[string]any), "log_floor")
	bad, _ := json.Marshal(m)
	if _, err := Unmarshal(bad); !errors.Is(err, ErrState) {
		t.Fatalf("state without log_floor: %v, want ErrState", err)
	}
	w, _ := New("thompson-warm", 4, Options{})
	wd, _ := Marshal(w)
	wd = []byte(strings.Replace(string(wd), `"options":{`, `"options":{"pool":4,`, 1))
	if _, err := Unmarshal(wd); !errors.Is(err, ErrState) {
		t.Fatalf("thompson-warm state with a pool: %v, want ErrState", err)
	}
}

// The real demo's shared strided read context, offline: 7 windows whose
// phase times are the means of three real demos' static rows (2026-11-27:
// 0.887, 0.917, 1.00, 1.047, 1.077, 1.137 and 1.207 s from 125 us to 8 ms),
// rewarded with the phase's bandwidth relative to the best and a spread of
// 0.14 (one phase's pull at 500 ms reports), for the 48 pulls a run gives
// it. Over the last half, thompson-pool's reads must be 10% faster than
// the default window's (1 ms), the demo's target; at 1 s reports (24
// pulls a run) its warm-up and log floor leave it no time, which is why
// the demo reports every 500 ms (demo.DefaultInterval).
func TestThompsonPoolDemoReads(t *testing.T) {
	secs := []float64{0.887, 0.917, 1.00, 1.047, 1.077, 1.137, 1.207}
	gain := func(steps int, sd float64) float64 {
		var sum float64
		var n int
		for run := range uint64(400) {
			rng := rand.New(rand.NewPCG(run, 25))
			p, err := New("thompson-pool", len(secs), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for s := range steps {
				a, _ := p.(Chooser).Choose(rng)
				p.Update(a, secs[0]/secs[a]+sd*rng.NormFloat64())
				if s >= steps/2 {
					sum += secs[a]
					n++
				}
			}
		}
		return 1 - sum/float64(n)/secs[3]
	}
	half, whole := gain(48, 0.14), gain(24, 0.1)
	t.Logf("last half's reads faster than the default by %.1f%% at 48 pulls, %.1f%% at 24", 100*half, 100*whole)
	if half < 0.10 {
		t.Errorf("%.1f%% faster than the default at 48 pulls, want >= 10%%", 100*half)
	}
	if whole > half {
		t.Errorf("24 pulls (%.3f) did better than 48 (%.3f)", whole, half)
	}
}
