package learn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// trainTree grows a CART tree on every row and prunes it at the
// cost-complexity parameter cross-validation picks (opt.Folds; none below 2).
func trainTree(d *trainSet, opt detect.TrainOptions, rng *rand.Rand) (detect.Classifier, error) {
	if len(d.X) == 0 {
		return nil, fmt.Errorf("%w: no training rows", detect.ErrData)
	}
	c := newColumns(d.X, d.Y)
	p := cartParams{feats: d.Feats, mtry: len(d.Feats), minLeaf: float64(opt.MinLeaf), maxDepth: opt.MaxDepth}
	ones := make([]float64, len(d.Y))
	for i := range ones {
		ones[i] = 1
	}
	full := newGrower(c, ones, p, nil).grow()
	alpha := 0.0
	if opt.Folds >= 2 && len(d.Y) >= 2*opt.Folds {
		alpha = cvAlpha(c, full, p, opt.Folds, rng)
	}
	pruneAt(full, alpha)
	var f detect.Flat
	appendTree(&f, full)
	t, err := detect.NewTree(f, alpha, d.Names)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// cvAlpha picks the pruning parameter by stratified k-fold cross-validation
// over the geometric means of the full tree's critical alphas.
func cvAlpha(c *columns, full []growNode, p cartParams, folds int, rng *rand.Rand) float64 {
	alphas := ccpAlphas(full)
	cands := make([]float64, len(alphas))
	for i := range alphas {
		if i+1 < len(alphas) {
			cands[i] = math.Sqrt(alphas[i] * alphas[i+1])
		} else {
			cands[i] = alphas[i] * 2
		}
	}
	// Stratified fold assignment.
	n := len(c.y)
	fold := make([]int, n)
	var byClass [detect.NumClasses][]int
	for i, y := range c.y {
		byClass[y] = append(byClass[y], i)
	}
	k := 0
	for _, rows := range byClass {
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		for _, r := range rows {
			fold[r] = k % folds
			k++
		}
	}
	errs := make([]int, len(cands))
	w := make([]float64, n)
	var x [access.NumFeatures]float64
	for f := range folds {
		for i := range w {
			w[i] = 1
			if fold[i] == f {
				w[i] = 0
			}
		}
		nodes := newGrower(c, w, p, nil).grow()
		for j, a := range cands {
			pruneAt(nodes, a)
			for i := range n {
				if fold[i] != f {
					continue
				}
				for ft := range x {
					x[ft] = c.x[ft][i]
				}
				if classify(nodes, &x) != int(c.y[i]) {
					errs[j]++
				}
			}
		}
	}
	best := 0
	for j := range errs {
		if errs[j] <= errs[best] { // ties: larger alpha, smaller tree
			best = j
		}
	}
	return cands[best]
}
