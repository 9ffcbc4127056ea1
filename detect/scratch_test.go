package detect

import (
	"fmt"
	"sort"
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
)

func TestScratchErrors(t *testing.T) {
	m := Default()
	rows, err := dataset.LoadObservations("/work/data/grid")
	if err != nil {
		t.Fatal(err)
	}
	type agg struct {
		n, e, es int
		seq      []int // per node sequence correctness
	}
	by := map[string]*agg{}
	// smoothing: EMA of probs per (run,node)
	ema := map[string][3]float64{}
	tot, errs, serrs := 0, 0, 0
	for _, r := range rows {
		if r.Obs.Idle() || r.Run.Scheduler != "twins" {
			continue
		}
		k := r.Run.Key()
		a := by[k]
		if a == nil {
			a = &agg{}
			by[k] = a
		}
		a.n++
		c, p := m.Detect(r.Obs)
		nk := fmt.Sprint(k, r.Obs.Node)
		e, ok := ema[nk]
		if !ok {
			e = p
		} else {
			for i := range e {
				e[i] = 0.7*e[i] + 0.3*p[i]
			}
		}
		ema[nk] = e
		best := 0
		for i := 1; i < 3; i++ {
			if e[i] > e[best] {
				best = i
			}
		}
		tot++
		if c != r.Class {
			a.e++
			errs++
		}
		if access.Classes[best] != r.Class {
			a.es++
			serrs++
		}
	}
	t.Logf("all twins rows %d: errors %d (%.3f%%), smoothed errors %d (%.3f%%)", tot, errs, 100*float64(errs)/float64(tot), serrs, 100*float64(serrs)/float64(tot))
	var keys []string
	for k, a := range by {
		if a.e > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return by[keys[i]].e > by[keys[j]].e })
	for _, k := range keys[:min(30, len(keys))] {
		t.Logf("%-55s %5d/%5d smoothed %5d", k, by[k].e, by[k].n, by[k].es)
	}
}
