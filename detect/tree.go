package detect

import (
	"encoding/json"
	"fmt"
	"math"

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

// Flat is a tree or a forest as a model file stores it: parallel node
// arrays. Node i splits on Feature[i] at Threshold[i], sending x to node
// Kid[i] when x[Feature[i]] <= Threshold[i] and to Kid[i]+1 otherwise; a
// leaf has Feature -1 and the index of its class probabilities (in
// access.Classes order, summing to 1) in Leaves as Kid. Tree t starts at
// node Roots[t]; children follow their parent. Package detect/learn builds
// it from grown trees.
type Flat struct {
	Feature   []int32               `json:"feature"`
	Threshold []float64             `json:"threshold"`
	Kid       []int32               `json:"kid"`
	Leaves    [][NumClasses]float64 `json:"leaves"`
	Roots     []int32               `json:"roots"`
}

func (f *flatForest) toJSON() Flat {
	j := Flat{Leaves: f.Leaves, Roots: f.Roots}
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
func (j Flat) toFlat(use featureMask) (*flatForest, error) {
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
// to the smaller tree; package detect/learn grows it). Splits are on raw feature values: a tree is
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

type treeJSON struct {
	Alpha float64 `json:"ccp_alpha"`
	Flat
}

// MarshalJSON encodes the tree for a model file.
func (t *Tree) MarshalJSON() ([]byte, error) {
	return json.Marshal(treeJSON{Alpha: t.alpha, Flat: t.f.toJSON()})
}

func decodeTree(data []byte, _ Preprocess, use featureMask) (Classifier, error) {
	var j treeJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: tree: %w", ErrModel, err)
	}
	t, err := newTree(j.Flat, j.Alpha, use)
	if err != nil {
		return nil, err // not a nil *Tree in a non-nil Classifier
	}
	return t, nil
}

// NewTree returns the tree f (one root, at node 0), pruned with
// cost-complexity parameter ccpAlpha (metadata), splitting only on features
// (names as in TrainOptions.Features; nil: all). It checks f as Load checks
// a model file (errors wrap ErrModel or ErrFeatures) and takes ownership of
// its slices.
func NewTree(f Flat, ccpAlpha float64, features []string) (*Tree, error) {
	use, err := maskOf(features, ErrModel)
	if err != nil {
		return nil, err
	}
	return newTree(f, ccpAlpha, use)
}

func newTree(j Flat, alpha float64, use featureMask) (*Tree, error) {
	f, err := j.toFlat(use)
	if err != nil {
		return nil, err
	}
	if len(f.Roots) != 1 || f.Roots[0] != 0 {
		return nil, fmt.Errorf("%w: a tree has exactly one root at node 0", ErrModel)
	}
	return &Tree{f: *f, alpha: alpha, leaves: len(f.Leaves)}, nil
}
