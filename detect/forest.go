package detect

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/adaptio/adaptio/access"
)

// Forest is a random forest (Breiman 2001): unpruned CART trees, each grown
// on a bootstrap sample of the training rows and choosing each split among
// Mtry randomly drawn features; its probabilities are the mean of the
// trees' leaf class proportions. Like Tree it splits on raw feature values.
type Forest struct {
	f    flatForest
	mtry int
	fast []fastNode // f.Nodes with self-looping leaves, for Probs
}

// fastNode is a flatNode for lock-step traversal: a leaf loops to itself
// (Thr +Inf, Kid its own index) and Leaf holds its probabilities' index.
type fastNode struct {
	Thr  float64
	Feat int32
	Kid  int32
	Leaf int32
}

func (t *Forest) prepare() {
	t.fast = make([]fastNode, len(t.f.Nodes))
	for i, n := range t.f.Nodes {
		if n.Feat < 0 {
			t.fast[i] = fastNode{Thr: math.Inf(1), Feat: 0, Kid: int32(i), Leaf: n.Kid}
		} else {
			t.fast[i] = fastNode{Thr: n.Thr, Feat: n.Feat, Kid: n.Kid, Leaf: -1}
		}
	}
}

var _ Classifier = (*Forest)(nil)

// Kind returns "forest".
func (t *Forest) Kind() string { return "forest" }

// Trees returns the number of trees.
func (t *Forest) Trees() int { return len(t.f.Roots) }

// Probs returns the mean leaf class proportions over the trees. It walks
// four trees in lock step, so their memory accesses overlap.
func (t *Forest) Probs(x [access.NumFeatures]float64) [NumClasses]float64 {
	var s0, s1, s2 float64
	leaves := t.f.Leaves
	nodes := t.fast
	roots := t.f.Roots
	add := func(i int32) {
		p := &leaves[nodes[i].Leaf]
		s0 += p[0]
		s1 += p[1]
		s2 += p[2]
	}
	step := func(i int32) int32 {
		n := &nodes[i]
		if x[n.Feat] > n.Thr {
			return n.Kid + 1
		}
		return n.Kid
	}
	r := 0
	for ; r+4 <= len(roots); r += 4 {
		a, b, c, d := roots[r], roots[r+1], roots[r+2], roots[r+3]
		for nodes[a].Leaf < 0 || nodes[b].Leaf < 0 || nodes[c].Leaf < 0 || nodes[d].Leaf < 0 {
			a, b, c, d = step(a), step(b), step(c), step(d)
		}
		add(a)
		add(b)
		add(c)
		add(d)
	}
	for ; r < len(roots); r++ {
		i := roots[r]
		for nodes[i].Leaf < 0 {
			i = step(i)
		}
		add(i)
	}
	n := float64(len(t.f.Roots))
	return [NumClasses]float64{s0 / n, s1 / n, s2 / n}
}

type forestJSON struct {
	Mtry int `json:"mtry"`
	Flat
}

// MarshalJSON encodes the forest for a model file.
func (t *Forest) MarshalJSON() ([]byte, error) {
	return json.Marshal(forestJSON{Mtry: t.mtry, Flat: t.f.toJSON()})
}

func decodeForest(data []byte, _ Preprocess, use featureMask) (Classifier, error) {
	var j forestJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: forest: %w", ErrModel, err)
	}
	fr, err := newForest(j.Flat, j.Mtry, use)
	if err != nil {
		return nil, err // not a nil *Forest in a non-nil Classifier
	}
	return fr, nil
}

// NewForest returns the forest f (its trees at f.Roots), grown trying mtry
// features per split (metadata), splitting only on features (names as in
// TrainOptions.Features; nil: all). It checks f as Load checks a model file
// (errors wrap ErrModel or ErrFeatures) and takes ownership of its slices.
func NewForest(f Flat, mtry int, features []string) (*Forest, error) {
	use, err := maskOf(features, ErrModel)
	if err != nil {
		return nil, err
	}
	return newForest(f, mtry, use)
}

func newForest(j Flat, mtry int, use featureMask) (*Forest, error) {
	f, err := j.toFlat(use)
	if err != nil {
		return nil, err
	}
	fr := &Forest{f: *f, mtry: mtry}
	fr.prepare()
	return fr, nil
}
