// Package fake builds plausible demo recordings for tests and previews of
// the views, without running the stack.
package fake

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/sched"
)

// Windows are the papers' seven TWINS windows.
var Windows = slices.Clone(sched.Windows)

// Meta describes a fake 4-node run.
func Meta() record.Meta {
	return record.Meta{Mode: "sim", Title: "adaptio demo (preview)", ValueUnit: "MiB/s", Nodes: 4, Servers: 4, Windows: Windows,
		Policy: "egreedy", Epsilon: 0.15, Phases: []string{"SS write", "SS read", "FPP write"},
		Workload: "128 processes write then read a shared file in 32 KiB 1D-strided requests"}
}

// Step appends one second at time t to rec, advancing a simple phase cycle;
// it returns the phase that ran.
func Step(rec *record.Recorder, t int, rng *rand.Rand) {
	phases := []string{"SS write", "SS read", "FPP write"}
	lens := []int{12, 8, 5}
	cycle := 0
	for _, l := range lens {
		cycle += l
	}
	pos := (t - 1) % cycle
	it := (t - 1) / cycle
	ph := 0
	for pos >= lens[ph] {
		pos -= lens[ph]
		ph++
	}
	best := []int{1, 6, 3}[ph]
	pat, op := []string{"SS", "SS", "FPP"}[ph], []string{"write", "read", "write"}[ph]
	sec := record.Second{T: float64(t), Phase: phases[ph]}
	for n := 0; n < 4; n++ {
		k, explore := best, rng.Float64() < 0.15
		if explore || it == 0 {
			k = rng.IntN(len(Windows))
		}
		sec.Nodes = append(sec.Nodes, record.NodeSecond{Node: n, Pattern: pat, Op: op, Window: Windows[k], Explore: explore,
			Prob: 0.85, Bandwidth: (60 - 5*float64(absInt(k-best)) + rng.Float64()*5) * (1 << 20)})
	}
	rec.AddSecond(sec)
	if pos == lens[ph]-1 {
		rec.AddIteration(record.Iteration{Phase: phases[ph], Workload: fmt.Sprintf("128p-%s-%s-32k", pat, op),
			Start: float64(t - lens[ph]), Seconds: float64(lens[ph]) * (1 + 0.3/float64(it+1) + rng.Float64()*0.05), Bytes: 64 << 20})
		rec.AddEvent(float64(t), "phase", phases[ph]+" done")
	}
	var es []record.Estimate
	for i, c := range []string{"SS write", "SS read", "FPP write"} {
		e := record.Estimate{Context: c, Best: []int{1, 6, 3}[i]}
		for k := range Windows {
			e.Values = append(e.Values, 60-5*float64(absInt(k-e.Best)))
			e.Counts = append(e.Counts, int64(1+t/(10+absInt(k-e.Best))))
		}
		es = append(es, e)
	}
	rec.SetEstimates(es)
}

// Recording returns a finished fake run of the given seconds.
func Recording(seconds int, seed uint64) record.Recording {
	rec := record.New(Meta())
	rng := rand.New(rand.NewPCG(seed, 1))
	for t := 1; t <= seconds; t++ {
		Step(rec, t, rng)
	}
	var st []record.StaticResult
	for i, w := range Windows {
		st = append(st, record.StaticResult{Window: w, Phases: map[string]float64{"SS write": 12 + float64(absInt(i-1)), "SS read": 8 + float64(absInt(i-6)), "FPP write": 5 + float64(absInt(i-3))/2},
			Total: 25 + float64(absInt(i-1)+absInt(i-6)) + float64(absInt(i-3))/2})
	}
	rec.SetStatic(st)
	rec.Finish()
	return rec.Snapshot()
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
