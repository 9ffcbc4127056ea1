package eval_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/forge"
)

// A synthetic machine's file reads back as FORGE, with its arms, its
// patterns and, where direct access is an arm, direct access best for about
// the share asked; the same seed gives the same bytes.
func TestSyntheticMachineIsAFORGEFile(t *testing.T) {
	m := eval.SyntheticMachine{Name: "t", Forwarders: []int{0, 1, 2, 4, 8}, Patterns: 200, Reps: 4, Noise: 0.1, DirectBest: 0.3, Seed: 7}
	file := func() []byte {
		rows, err := m.Rows()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := forge.Write(&b, rows); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	data := file()
	if !bytes.Equal(data, file()) {
		t.Fatal("two generations with one seed differ")
	}
	rows, err := eval.ReadForge(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the generated file does not read as FORGE: %v", err)
	}
	envs, skipped, err := eval.ForgeEnvs(rows)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("envs: %v, skipped %v", err, skipped)
	}
	if len(envs) != 200 || len(envs[0].Arms) != 5 || envs[0].Arms[0] != "direct" {
		t.Fatalf("%d patterns with arms %v, want 200 with direct, 1, 2, 4, 8", len(envs), envs[0].Arms)
	}
	direct := 0
	for _, e := range envs {
		if e.Best == 0 {
			direct++
		}
	}
	if direct < 40 || direct > 80 {
		t.Errorf("direct access best for %d of 200 patterns, want about 60 (30%%)", direct)
	}
	for _, bad := range []eval.SyntheticMachine{
		{Name: "one arm", Forwarders: []int{1}, Patterns: 1, Reps: 1},
		{Name: "unsorted", Forwarders: []int{4, 2}, Patterns: 1, Reps: 1},
		{Name: "share", Forwarders: []int{0, 1}, Patterns: 1, Reps: 1, DirectBest: 2},
	} {
		if _, err := bad.Rows(); err == nil {
			t.Errorf("%s: accepted", bad.Name)
		}
	}
}

// RunGeneralise judges each policy, cold and shared, on every file and
// writes the machines, the summary and the report; a policy that cannot
// keep exploring (egreedy 0.15) misses the last-bin target.
func TestGeneraliseJudgesEveryFile(t *testing.T) {
	out := t.TempDir()
	specs := eval.DefaultSpecs(3)
	var picked []eval.Spec
	for _, s := range specs {
		if s.Label == "thompson" || s.Label == "egreedy eps=0.15 (papers)" {
			picked = append(picked, s)
		}
	}
	machines := eval.DefaultSyntheticMachines()[:2]
	rows, err := eval.RunGeneralise(context.Background(), eval.GeneraliseConfig{
		Config: eval.Config{Reps: 5, Bin: 10, Steps: 100, Seed: 1, Workers: 2}, Machines: machines, Specs: picked, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*2*2 {
		t.Fatalf("%d rows, want 2 machines x 2 policies x 2 modes", len(rows))
	}
	for _, name := range []string{"machines/three-arms.csv", "machines/direct-best.csv", "generalise_summary.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	for _, r := range rows {
		if !(r.FirstMean > 0.3 && r.FirstMean <= 1 && r.LastMedian > 0.8 && r.LastMedian <= 1 && r.Worst <= r.LastMedian) {
			t.Errorf("%s %s on %s: first %.3f last %.3f worst %.3f: not a learning curve", r.Label, r.Mode, r.File, r.FirstMean, r.LastMedian, r.Worst)
		}
		if r.Ident.Budget != 90 || !(r.WorstIdent > 0.5 && r.WorstIdent <= 1) || r.Ident.Worst > r.WorstIdent {
			t.Errorf("%s %s on %s: identification reference %+v, worst pattern's %.3f", r.Label, r.Mode, r.File, r.Ident, r.WorstIdent)
		}
		// egreedy's 15% exploration keeps its last bin below 0.995.
		if r.Label == "egreedy eps=0.15 (papers)" && r.Met() {
			t.Errorf("egreedy 0.15 meets the targets on %s (last %.3f): its exploration alone should cost more", r.File, r.LastMedian)
		}
	}
}

// TestPriorQuality: neighbours that share a pattern's best arm predict it
// (hit 1, favourite 1); neighbours that rank the arms in reverse put the
// prior's favourite on the pattern's worst arm.
func TestPriorQuality(t *testing.T) {
	env := func(key string, x float64, means ...float64) *eval.Env {
		samples := make([][]float64, len(means))
		for a, m := range means {
			samples[a] = []float64{m}
		}
		e, err := eval.NewEnv(key, []string{"1", "2", "4"}, samples)
		if err != nil {
			t.Fatal(err)
		}
		e.Features = []float64{x}
		return e
	}
	for _, tt := range []struct {
		name                   string
		envs                   []*eval.Env
		hit, favourite, topTwo float64
	}{
		{"alike", []*eval.Env{env("a", 0, 1, 2, 4), env("b", 1, 2, 3, 5), env("c", 2, 1, 1, 3)}, 1, 1, 1},
		{"two kinds far apart", []*eval.Env{env("a", 0, 4, 2, 1), env("b", 0.1, 8, 4, 2), env("c", 10, 1, 2, 4), env("d", 10.1, 2, 4, 8)}, 1, 1, 1},
		// Each pattern's nearest is of the other kind: favourite = its worst arm (1/4), second = its middle (1/2).
		{"reversed", []*eval.Env{env("a", 0, 4, 2, 1), env("b", 1, 1, 2, 4)}, 0, 0.25, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, err := eval.PriorQualityOf(tt.envs, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(q.Hit-tt.hit) > 1e-9 || math.Abs(q.Favourite-tt.favourite) > 1e-9 || math.Abs(q.TopTwo-tt.topTwo) > 1e-9 {
				t.Errorf("got %+v, want hit %v favourite %v top two %v", q, tt.hit, tt.favourite, tt.topTwo)
			}
		})
	}
	if _, err := eval.PriorQualityOf(nil, 3); err == nil {
		t.Error("no environments: no error")
	}
}

// The shared evaluation gives a pattern its neighbours' favourites to try
// (Contextual.Share): on a machine where direct access is best for a random
// 30% of patterns, thompson-warm-fav's first bin is well above
// thompson-warm's (0.87 against 0.81 with 100 repetitions), and it is the
// same policy when cold.
func TestSharedModeTriesNeighboursFavourites(t *testing.T) {
	rows, err := eval.DefaultSyntheticMachines()[1].Rows()
	if err != nil {
		t.Fatal(err)
	}
	envs, _, err := eval.ForgeEnvs(rows)
	if err != nil {
		t.Fatal(err)
	}
	specs := []eval.Spec{
		{Label: "thompson-warm", Policy: "thompson-warm", Options: bandit.Options{Neighbors: 3}},
		{Label: "thompson-warm-fav", Policy: "thompson-warm-fav", Options: bandit.Options{Neighbors: 3}},
	}
	r, err := eval.EvaluateForge(context.Background(), envs, eval.ForgeConfig{Config: eval.Config{Reps: 8, Seed: 1, Workers: 2}, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	warm, fav := r.Summaries[0], r.Summaries[1]
	t.Logf("shared first-bin mean: thompson-warm %.3f, thompson-warm-fav %.3f", warm.SharedFirst.Mean, fav.SharedFirst.Mean)
	if fav.SharedFirst.Mean < warm.SharedFirst.Mean+0.03 {
		t.Errorf("shared first-bin mean %.3f with the favourites tried, %.3f without: want a gain of at least 0.03", fav.SharedFirst.Mean, warm.SharedFirst.Mean)
	}
	if fav.ColdFirst != warm.ColdFirst || fav.ColdLast != warm.ColdLast {
		t.Errorf("cold: thompson-warm-fav %+v %+v differs from thompson-warm %+v %+v", fav.ColdFirst, fav.ColdLast, warm.ColdFirst, warm.ColdLast)
	}
}
