package eval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/adaptio/adaptio/forge"
)

// permuted returns copies of envs with their arms reordered by perm
// (arm i of the copy is arm perm[i] of the original).
func permuted(t *testing.T, envs []*Env, perm []int) []*Env {
	t.Helper()
	out := make([]*Env, len(envs))
	for i, e := range envs {
		arms := make([]string, len(perm))
		samples := make([][]float64, len(perm))
		for a, p := range perm {
			arms[a], samples[a] = e.Arms[p], e.Samples[p]
		}
		c, err := NewEnv(e.Key, arms, samples)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// firstBin is the mean first-bin performance of spec over envs (100
// repetitions of one bin of 10 steps each).
func firstBin(t *testing.T, envs []*Env, policy string) float64 {
	t.Helper()
	var sum float64
	for _, e := range envs {
		c, err := Simulate(e, Spec{Label: policy, Policy: policy}, Config{Reps: 100, Bin: 10, Steps: 10, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		_, perf := c.First()
		sum += perf
	}
	return sum / float64(len(envs))
}

// orderFree checks that the cold first bin of the policies on envs is the
// same, within tol, under the arms in their order, reversed, and in
// random orders: no policy's warm-up may favour the first arms of a file.
func orderFree(t *testing.T, envs []*Env, tol float64) {
	k := len(envs[0].Arms)
	perms := [][]int{make([]int, k), make([]int, k)}
	for i := range k {
		perms[0][i], perms[1][i] = i, k-1-i
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 3 {
		perms = append(perms, rng.Perm(k))
	}
	for _, policy := range []string{"thompson-pool", "thompson-warm", "egreedy", "ucb1", "softmax"} {
		var lo, hi float64 = math.Inf(1), math.Inf(-1)
		for _, p := range perms {
			v := firstBin(t, permuted(t, envs, p), policy)
			lo, hi = min(lo, v), max(hi, v)
		}
		t.Logf("%s: first bin %.3f to %.3f over %d orders of the arms", policy, lo, hi, len(perms))
		if hi-lo > tol {
			t.Errorf("%s: first bin %.3f to %.3f over the orders of the arms, want within %v", policy, lo, hi, tol)
		}
	}
}

// The cold first bin on the MareNostrum 4 FORGE file does not depend on
// the order of its arms (the numbers of forwarders): the warm-up draws
// among the arms it must try.
func TestFirstBinOrderFreeForge(t *testing.T) {
	path, err := forge.Find()
	if err != nil {
		t.Skipf("FORGE data (shared/data/%s) not found above the working directory, the order test runs on synthetic data only: %v", forge.File, err)
	}
	rows, err := LoadForge(path)
	if err != nil {
		t.Fatal(err)
	}
	envs, _, err := ForgeEnvs(rows)
	if err != nil {
		t.Fatal(err)
	}
	orderFree(t, envs, 0.01)
}

// The same on synthetic patterns where the best arm is the last, the
// first or in the middle, and the arms differ by up to a factor of 5.
func TestFirstBinOrderFreeSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	var envs []*Env
	for i := range 60 {
		const k = 7
		arms := make([]string, k)
		samples := make([][]float64, k)
		best := i % k
		for a := range k {
			arms[a] = string(rune('a' + a))
			mean := 20 + 80*rng.Float64()
			if a == best {
				mean = 100
			}
			for range 5 {
				samples[a] = append(samples[a], mean*(1+0.1*rng.NormFloat64()))
			}
		}
		e, err := NewEnv(string(rune('A'+i%26))+string(rune('0'+i/26)), arms, samples)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	orderFree(t, envs, 0.01)
}
