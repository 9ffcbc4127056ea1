package learn

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/adaptio/adaptio/detect"
)

// trainForest grows opt.Trees trees on opt.Workers goroutines. Tree t uses
// its own generator seeded from the t-th pair of numbers drawn from rng
// before any tree starts, so the forest does not depend on scheduling.
func trainForest(d *trainSet, opt detect.TrainOptions, rng *rand.Rand) (detect.Classifier, error) {
	n := len(d.X)
	if n == 0 {
		return nil, fmt.Errorf("%w: no training rows", detect.ErrData)
	}
	seeds := make([][2]uint64, opt.Trees)
	for i := range seeds {
		seeds[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	c := newColumns(d.X, d.Y)
	p := cartParams{feats: d.Feats, mtry: opt.Mtry, minLeaf: float64(opt.MinLeaf), maxDepth: opt.MaxDepth}
	grown := make([][]growNode, opt.Trees)
	var next atomic.Int64
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	done := 0
	for range min(opt.Workers, opt.Trees) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := make([]float64, n)
			for {
				t := int(next.Add(1) - 1)
				if t >= opt.Trees {
					return
				}
				r := rand.New(rand.NewPCG(seeds[t][0], seeds[t][1]))
				clear(w)
				for range n {
					w[r.IntN(n)]++
				}
				grown[t] = append([]growNode(nil), newGrower(c, w, p, r).grow()...)
				if opt.Progress != nil {
					progressMu.Lock()
					done++
					opt.Progress(done, opt.Trees)
					progressMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	var f detect.Flat
	for _, nodes := range grown {
		appendTree(&f, nodes)
	}
	fr, err := detect.NewForest(f, opt.Mtry, d.Names)
	if err != nil {
		return nil, err
	}
	return fr, nil
}
