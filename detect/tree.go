package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/adaptio/adaptio/access"
)

// flatNode is one node of a flattened tree. An internal node sends x to
// Kid when x[Feat] <= Thr and to Kid+1 otherwise; a leaf (Feat < 0) holds
// the index of its class probabilities in Kid.
type flatNode struct {
	Thr  float64
	Feat int32
	Kid  int32
}

// flatForest is one or more trees flattened into one node array; tree t
// starts at Roots[t]. Children are stored after their parent.
type flatForest struct {
	Nodes  []flatNode
	Leaves [][NumClasses]float64
	Roots  []int32
}

// leafOf walks tree root to its leaf for x.
func (f *flatForest) leafOf(root int32, x *[access.NumFeatures]float64) int32 {
	nodes := f.Nodes
	i := root
	for {
		n := nodes[i]
		if n.Feat < 0 {
			return n.Kid
		}
		i = n.Kid
		if x[n.Feat] > n.Thr {
			i++
		}
	}
}

// appendTree flattens a grown (possibly pruned) tree into f, breadth first
// with siblings adjacent, and returns the number of leaves added.
func (f *flatForest) appendTree(nodes []growNode) int {
	root := int32(len(f.Nodes))
	f.Roots = append(f.Roots, root)
	f.Nodes = append(f.Nodes, flatNode{})
	type item struct {
		grow int
		flat int32
	}
	queue := []item{{0, root}}
	leaves := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		n := &nodes[it.grow]
		if n.isLeaf() {
			var p [NumClasses]float64
			w := n.weight()
			for k := range p {
				p[k] = n.counts[k] / w
			}
			f.Nodes[it.flat] = flatNode{Feat: -1, Kid: int32(len(f.Leaves))}
			f.Leaves = append(f.Leaves, p)
			leaves++
			continue
		}
		kid := int32(len(f.Nodes))
		f.Nodes = append(f.Nodes, flatNode{}, flatNode{})
		f.Nodes[it.flat] = flatNode{Thr: n.thr, Feat: int32(n.feat), Kid: kid}
		queue = append(queue, item{n.left, kid}, item{n.right, kid + 1})
	}
	return leaves
}

// flatJSON is the model-file form of a flatForest: parallel arrays.
type flatJSON struct {
	Feature   []int32               `json:"feature"`
	Threshold []float64             `json:"threshold"`
	Kid       []int32               `json:"kid"`
	Leaves    [][NumClasses]float64 `json:"leaves"`
	Roots     []int32               `json:"roots"`
}

func (f *flatForest) toJSON() flatJSON {
	j := flatJSON{Leaves: f.Leaves, Roots: f.Roots}
	for _, n := range f.Nodes {
		j.Feature = append(j.Feature, n.Feat)
		j.Threshold = append(j.Threshold, n.Thr)
		j.Kid = append(j.Kid, n.Kid)
	}
	return j
}

// toFlat rebuilds and checks a flatForest: every walk must end at a leaf
// (children lie after their parent), indices in range, splits only on used
// features, values finite.
func (j flatJSON) toFlat(use featureMask) (*flatForest, error) {
	n := len(j.Feature)
	if n == 0 || len(j.Threshold) != n || len(j.Kid) != n {
		return nil, fmt.Errorf("%w: tree arrays have lengths %d/%d/%d", ErrModel, len(j.Feature), len(j.Threshold), len(j.Kid))
	}
	if len(j.Roots) == 0 || len(j.Leaves) == 0 {
		return nil, fmt.Errorf("%w: tree without roots or leaves", ErrModel)
	}
	f := &flatForest{Nodes: make([]flatNode, n), Leaves: j.Leaves, Roots: j.Roots}
	for i := range n {
		nd := flatNode{Thr: j.Threshold[i], Feat: j.Feature[i], Kid: j.Kid[i]}
		switch {
		case nd.Feat < 0:
			if nd.Feat != -1 || nd.Kid < 0 || int(nd.Kid) >= len(j.Leaves) {
				return nil, fmt.Errorf("%w: leaf node %d refers to leaf %d of %d", ErrModel, i, nd.Kid, len(j.Leaves))
			}
		case nd.Feat >= access.NumFeatures:
			return nil, fmt.Errorf("%w: node %d splits on feature %d of %d", ErrModel, i, nd.Feat, access.NumFeatures)
		case !use[nd.Feat]:
			return nil, fmt.Errorf("%w: node %d splits on %s, which the model does not use", ErrModel, i, access.FeatureNames[nd.Feat])
		case int(nd.Kid) <= i || int(nd.Kid)+1 >= n:
			return nil, fmt.Errorf("%w: node %d has children %d,%d (must follow it, < %d)", ErrModel, i, nd.Kid, nd.Kid+1, n)
		case math.IsNaN(nd.Thr):
			return nil, fmt.Errorf("%w: node %d has a NaN threshold", ErrModel, i)
		}
		f.Nodes[i] = nd
	}
	for i, r := range j.Roots {
		if r < 0 || int(r) >= n {
			return nil, fmt.Errorf("%w: root %d at node %d of %d", ErrModel, i, r, n)
		}
	}
	for i, p := range j.Leaves {
		s := 0.0
		for _, v := range p {
			if !(v >= 0 && v <= 1) {
				return nil, fmt.Errorf("%w: leaf %d has probability %v", ErrModel, i, v)
			}
			s += v
		}
		if math.Abs(s-1) > 1e-6 {
			return nil, fmt.Errorf("%w: leaf %d probabilities sum to %v", ErrModel, i, s)
		}
	}
	return f, nil
}

// Tree is a CART decision tree (Gini impurity, binary splits) pruned by
// minimal cost-complexity pruning with the parameter chosen by k-fold
// cross-validation (the one with the lowest cross-validated error; ties go
// to the smaller tree). Splits are on raw feature values: a tree is
// invariant under the monotone preprocessing, so predictions skip it.
type Tree struct {
	f      flatForest
	alpha  float64
	leaves int
}

var _ Classifier = (*Tree)(nil)

// Kind returns "tree".
func (t *Tree) Kind() string { return "tree" }

// Probs returns the class proportions of the training rows in x's leaf.
func (t *Tree) Probs(x [access.NumFeatures]float64) [NumClasses]float64 {
	return t.f.Leaves[t.f.leafOf(0, &x)]
}

// Leaves returns the number of leaves.
func (t *Tree) Leaves() int { return t.leaves }

func trainTree(d *trainSet, opt TrainOptions, rng *rand.Rand) (Classifier, error) {
	if len(d.X) == 0 {
		return nil, fmt.Errorf("%w: no training rows", ErrData)
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
	t := &Tree{alpha: alpha}
	t.leaves = t.f.appendTree(full)
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
	var byClass [NumClasses][]int
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

type treeJSON struct {
	Alpha float64 `json:"ccp_alpha"`
	flatJSON
}

// MarshalJSON encodes the tree for a model file.
func (t *Tree) MarshalJSON() ([]byte, error) {
	return json.Marshal(treeJSON{Alpha: t.alpha, flatJSON: t.f.toJSON()})
}

func decodeTree(data []byte, _ Preprocess, use featureMask) (Classifier, error) {
	var j treeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: tree: %w", ErrModel, err)
	}
	f, err := j.toFlat(use)
	if err != nil {
		return nil, err
	}
	if len(f.Roots) != 1 || f.Roots[0] != 0 {
		return nil, fmt.Errorf("%w: a tree has exactly one root at node 0", ErrModel)
	}
	return &Tree{f: *f, alpha: j.Alpha, leaves: len(f.Leaves)}, nil
}
