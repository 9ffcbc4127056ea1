package bandit

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// favouritesContext returns a Contextual of policy name with three known
// contexts near the origin: two estimate arm 0 best, one arm 1, so the
// prior of a new context there favours arm 0 (0.83 against 0.73).
func favouritesContext(t *testing.T, name string) *Contextual {
	t.Helper()
	c, err := NewContextual(name, 5, Options{Neighbors: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, means := range [][]float64{{100, 60, 30, 30, 30}, {100, 60, 30, 30, 30}, {50, 100, 30, 30, 30}} {
		p := c.PolicyWith(string(rune('a'+i)), []float64{float64(i), 0})
		for n := range 15 {
			p.Update(n%5, means[n%5])
		}
	}
	return c
}

// With TryFavourites a new context first pulls the prior's favourite, then
// the best arm of each nearest context that disagrees with it, once each
// (with probability 1), and then learns as before; without it, only the
// favourite is pulled first.
func TestTryFavouritesPullsEachNeighboursBest(t *testing.T) {
	c := favouritesContext(t, "thompson-warm-fav")
	if got := c.Favourites([]float64{1, 0}, ""); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("Favourites = %v, want [0 1] (arm 0 has the higher prior)", got)
	}
	p := c.PolicyWith("new", []float64{1, 0})
	rng := rand.New(rand.NewPCG(1, 2))
	for step, want := range []int{0, 1} {
		ch := p.Select(rng)
		if ch.Arm != want || ch.Prob != 1 {
			t.Fatalf("pull %d: %+v, want arm %d with probability 1", step, ch, want)
		}
		if probs := p.(Distribution).Probs(); probs[want] != 1 {
			t.Fatalf("pull %d: Probs %v, want 1 on arm %d", step, probs, want)
		}
		p.Update(ch.Arm, 50)
	}
	if p.(*policy).try != nil {
		t.Fatalf("the arms to try are kept after each was tried: %v", p.(*policy).try)
	}
	if p.Counts()[2] != 0 {
		t.Fatal("an arm no neighbour favours was pulled")
	}

	// Without the option (thompson-warm) the second pull follows the prior.
	q := favouritesContext(t, "thompson-warm").PolicyWith("new", []float64{1, 0})
	if q.(*policy).try != nil {
		t.Fatal("thompson-warm was given arms to try")
	}
}

// firstBin is the mean of means[arm]/best over the first bin pulls of a new
// context of favouritesContext whose true means are means (10% noise).
func firstBin(t *testing.T, name string, means []float64, bin, runs int) float64 {
	t.Helper()
	best := slices.Max(means)
	var sum float64
	for run := range uint64(runs) {
		p := favouritesContext(t, name).PolicyWith("new", []float64{1, 0})
		rng := rand.New(rand.NewPCG(run, 7))
		for range bin {
			a := p.Select(rng).Arm
			p.Update(a, means[a]*(1+0.1*rng.NormFloat64()))
			sum += means[a] / best
		}
	}
	return sum / float64(bin*runs)
}

// The context's best arm is the favourite of one neighbour only: the
// relative prior puts it at 0.88 of the favourite, so after the favourite's
// first reward thompson-warm seldom tries it within the first bin; trying
// each neighbour's favourite once finds it at the second pull.
func TestTryFavouritesFirstBin(t *testing.T) {
	means := []float64{60, 100, 30, 30, 30}
	const bin, runs = 10, 60
	with := firstBin(t, "thompson-warm-fav", means, bin, runs)
	without := firstBin(t, "thompson-warm", means, bin, runs)
	t.Logf("first bin of %d: thompson-warm-fav %.3f, thompson-warm %.3f", bin, with, without)
	if with < 0.9 {
		t.Errorf("first bin with the neighbours' favourites tried: %.3f, want >= 0.9", with)
	}
	if with < without+0.1 {
		t.Errorf("first bin %.3f with the favourites tried, %.3f without: want a gain of at least 0.1", with, without)
	}
}

func TestSetTryRejects(t *testing.T) {
	p, _ := New("thompson", 3, Options{})
	for _, arms := range [][]int{{3}, {-1}, {1, 1}} {
		if err := SetTry(p, arms); !errors.Is(err, ErrPrior) {
			t.Errorf("SetTry(%v) = %v, want ErrPrior", arms, err)
		}
	}
	p.Update(0, 1)
	if err := SetTry(p, []int{1}); !errors.Is(err, ErrPrior) {
		t.Errorf("SetTry after a reward = %v, want ErrPrior", err)
	}
	// A state naming arms to try that all have rewards is inconsistent.
	if _, err := Unmarshal([]byte(`{"version":1,"policy":"thompson","arms":2,"options":{"exploration":1,"spread":0.3,"prior_weight":2},"t":2,"scale":1,"state":[{"n":1,"w":1,"q":1,"v":0},{"n":1,"w":1,"q":1,"v":0}],"try":[0]}`)); !errors.Is(err, ErrState) {
		t.Errorf("Unmarshal of a stale try list = %v, want ErrState", err)
	}
}
