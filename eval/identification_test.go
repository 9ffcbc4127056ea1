package eval_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/adaptio/adaptio/eval"
)

// noisyEnv has arms whose rewards are their means plus Gaussian noise of
// the given standard deviation (2,000 samples each, drawn once).
func noisyEnv(t *testing.T, key string, sd float64, means ...float64) *eval.Env {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(len(means))))
	arms := make([]string, len(means))
	samples := make([][]float64, len(means))
	for a, m := range means {
		arms[a] = string(rune('a' + a))
		for range 2000 {
			samples[a] = append(samples[a], m+sd*rng.NormFloat64())
		}
	}
	e, err := eval.NewEnv(key, arms, samples)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Sequential halving names the best arm whatever its index when the arms
// lie far apart against their noise, and not always when they lie within
// it: the reference separates patterns by their noise.
func TestIdentificationReference(t *testing.T) {
	sharp := noisyEnv(t, "clear", 0.05, 0.5, 0.6, 1.0, 0.7, 0.4, 0.8, 0.3)
	noisy := noisyEnv(t, "noisy", 0.6, 0.84, 0.81, 0.86, 0.88, 0.89, 0.94, 1.0)
	cfg := eval.Config{Reps: 200, Bin: 10, Steps: 200, Seed: 1}
	id, err := eval.IdentificationOf([]*eval.Env{sharp, noisy}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if id.Budget != 190 {
		t.Errorf("budget %d, want 190 (steps minus the last bin)", id.Budget)
	}
	if v := id.ByEnv["clear"]; v != 1 {
		t.Errorf("clear pattern: reference %.3f, want 1 (the best arm every time)", v)
	}
	// Seven arms within 16% under a spread of 0.6: 190 pulls cannot tell
	// them apart reliably.
	if v := id.ByEnv["noisy"]; !(v < 0.97 && v > 0.85) {
		t.Errorf("noisy pattern: reference %.3f, want between 0.85 and 0.97", v)
	}
	if id.WorstEnv != "noisy" || id.Worst != id.ByEnv["noisy"] || id.Below != 1 {
		t.Errorf("worst %s %.3f, below %d; want the noisy pattern, 1 below", id.WorstEnv, id.Worst, id.Below)
	}
	// More pulls tell them apart better.
	cfg.Steps = 2000
	more, err := eval.IdentificationOf([]*eval.Env{noisy}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if more.Worst <= id.Worst {
		t.Errorf("2,000 steps: %.3f, not above 200 steps' %.3f", more.Worst, id.Worst)
	}
	// Reproducible: the streams depend on the seed, the pattern and the repetition only.
	again, err := eval.IdentificationOf([]*eval.Env{noisy, sharp}, eval.Config{Reps: 200, Bin: 10, Steps: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.ByEnv["noisy"] != id.ByEnv["noisy"] {
		t.Errorf("same seed, other order: %.4f against %.4f", again.ByEnv["noisy"], id.ByEnv["noisy"])
	}
}

// A budget smaller than one pull per arm is refused, not scored.
func TestIdentificationNeedsOnePullPerArm(t *testing.T) {
	e := noisyEnv(t, "x", 0.1, 1, 2, 3, 4)
	if _, err := eval.IdentificationOf([]*eval.Env{e}, eval.Config{Reps: 2, Bin: 10, Steps: 13}); err == nil {
		t.Error("3 pulls for 4 arms: no error")
	}
	if _, err := eval.IdentificationOf(nil, eval.Config{Reps: 2, Bin: 10, Steps: 100}); err == nil {
		t.Error("no environments: no error")
	}
}

// Ties are broken by index, so equal arms all score 1.
func TestSequentialHalvingEqualArms(t *testing.T) {
	e := noisyEnv(t, "flat", 0, 1, 1, 1, 1, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	if a := eval.SequentialHalving(e, 50, rng); a != 0 || math.Abs(e.Relative(a)-1) > 1e-12 {
		t.Errorf("equal arms: named %d (relative %.3f), want 0", a, e.Relative(a))
	}
}
