package detect

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/adaptio/adaptio/access"
)

// MaxHidden bounds the hidden width so Probs can keep its activations on
// the stack.
const MaxHidden = 32

// MLP is the papers' network: the preprocessed features feed two hidden
// ReLU layers of Hidden units (5 by default) and a softmax output of 3
// units, trained (package detect/learn) with RMSProp on the categorical
// cross-entropy in mini-batches.
type MLP struct {
	pre Preprocess
	use featureMask // excluded features enter as 0
	w   MLPWeights
}

// MLPWeights are a network's parameters, as a model file stores them.
// Hidden is the width of both hidden layers; the blocks are row-major:
// W1 [Hidden][access.NumFeatures], B1 [Hidden], W2 [Hidden][Hidden],
// B2 [Hidden], W3 [NumClasses][Hidden], B3 [NumClasses] (MLPShapes).
type MLPWeights struct {
	Hidden int       `json:"hidden"`
	W1     []float64 `json:"w1"`
	B1     []float64 `json:"b1"`
	W2     []float64 `json:"w2"`
	B2     []float64 `json:"b2"`
	W3     []float64 `json:"w3"`
	B3     []float64 `json:"b3"`
}

var _ Classifier = (*MLP)(nil)

// Kind returns "mlp".
func (m *MLP) Kind() string { return "mlp" }

// Probs preprocesses x, zeroes the excluded features and returns the
// softmax output.
func (m *MLP) Probs(x [access.NumFeatures]float64) [NumClasses]float64 {
	z := m.use.zero(m.pre.Apply(x))
	var h1, h2 [MaxHidden]float64
	var o [NumClasses]float64
	m.w.Forward(&z, &h1, &h2, &o)
	return Softmax(o)
}

// Forward computes the network's hidden activations (after ReLU) h1 and h2
// (the first Hidden entries) and its logits o for the preprocessed input z.
// Prediction and training (package detect/learn) share it. It does not
// allocate.
func (w *MLPWeights) Forward(z *[access.NumFeatures]float64, h1, h2 *[MaxHidden]float64, o *[NumClasses]float64) {
	H := w.Hidden
	for i := range H {
		s := w.B1[i]
		row := w.W1[i*access.NumFeatures : (i+1)*access.NumFeatures]
		for j, v := range z {
			s += row[j] * v
		}
		h1[i] = max(s, 0)
	}
	for i := range H {
		s := w.B2[i]
		row := w.W2[i*H : (i+1)*H]
		for j := range H {
			s += row[j] * h1[j]
		}
		h2[i] = max(s, 0)
	}
	for k := range NumClasses {
		s := w.B3[k]
		row := w.W3[k*H : (k+1)*H]
		for j := range H {
			s += row[j] * h2[j]
		}
		o[k] = s
	}
}

// Softmax returns the class probabilities of logits o.
func Softmax(o [NumClasses]float64) [NumClasses]float64 {
	mx := max(o[0], o[1], o[2])
	e0, e1, e2 := math.Exp(o[0]-mx), math.Exp(o[1]-mx), math.Exp(o[2]-mx)
	s := e0 + e1 + e2
	return [NumClasses]float64{e0 / s, e1 / s, e2 / s}
}

// Blocks returns pointers to the parameter blocks in MLPShapes order: W1,
// B1, W2, B2, W3, B3.
func (w *MLPWeights) Blocks() [6]*[]float64 {
	return [6]*[]float64{&w.W1, &w.B1, &w.W2, &w.B2, &w.W3, &w.B3}
}

// MLPShapes returns the number of values of each block of a network of
// hidden width h, in Blocks order.
func MLPShapes(h int) [6]int {
	return [6]int{h * access.NumFeatures, h, h * h, h, NumClasses * h, NumClasses}
}

// MarshalJSON encodes the network's weights (the preprocessing is stored
// once, at the model level).
func (m *MLP) MarshalJSON() ([]byte, error) {
	return json.Marshal(m.w)
}

func decodeMLP(data []byte, pre Preprocess, use featureMask) (Classifier, error) {
	var w MLPWeights
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: mlp: %w", ErrModel, err)
	}
	m, err := newMLP(w, pre, use)
	if err != nil {
		return nil, err // not a nil *MLP in a non-nil Classifier
	}
	return m, nil
}

// NewMLP returns the network of weights w on the preprocessing pre, using
// features (names as in TrainOptions.Features; nil: all; the others enter
// as 0). It checks w as Load checks a model file (errors wrap ErrModel or
// ErrFeatures) and takes ownership of its slices.
func NewMLP(w MLPWeights, pre Preprocess, features []string) (*MLP, error) {
	use, err := maskOf(features, ErrModel)
	if err != nil {
		return nil, err
	}
	return newMLP(w, pre, use)
}

func newMLP(w MLPWeights, pre Preprocess, use featureMask) (*MLP, error) {
	if w.Hidden < 1 || w.Hidden > MaxHidden {
		return nil, fmt.Errorf("%w: mlp hidden width %d, want 1..%d", ErrModel, w.Hidden, MaxHidden)
	}
	for k, s := range MLPShapes(w.Hidden) {
		p := *w.Blocks()[k]
		if len(p) != s {
			return nil, fmt.Errorf("%w: mlp parameter block %d has %d values, want %d", ErrModel, k, len(p), s)
		}
		for _, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: mlp has a non-finite weight", ErrModel)
			}
		}
	}
	return &MLP{pre: pre, use: use, w: w}, nil
}
