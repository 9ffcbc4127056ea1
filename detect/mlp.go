package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/adaptio/adaptio/access"
)

// maxHidden bounds the hidden width so Probs can keep its activations on
// the stack.
const maxHidden = 32

// MLP is the papers' network: the preprocessed features feed two hidden
// ReLU layers of Hidden units (5 by default) and a softmax output of 3
// units, trained with RMSProp on the categorical cross-entropy in
// mini-batches.
type MLP struct {
	pre    Preprocess
	use    featureMask // excluded features enter as 0
	hidden int
	// Parameters, row-major: w1 [hidden][NumFeatures], w2 [hidden][hidden], w3 [NumClasses][hidden].
	w1, b1, w2, b2, w3, b3 []float64
}

var _ Classifier = (*MLP)(nil)

// Kind returns "mlp".
func (m *MLP) Kind() string { return "mlp" }

// Probs preprocesses x, zeroes the excluded features and returns the
// softmax output.
func (m *MLP) Probs(x [access.NumFeatures]float64) [NumClasses]float64 {
	z := m.use.zero(m.pre.Apply(x))
	var h1, h2 [maxHidden]float64
	var o [NumClasses]float64
	m.forward(&z, &h1, &h2, &o)
	return softmax(o)
}

// forward computes the hidden activations (after ReLU) and the logits.
func (m *MLP) forward(z *[access.NumFeatures]float64, h1, h2 *[maxHidden]float64, o *[NumClasses]float64) {
	H := m.hidden
	for i := range H {
		s := m.b1[i]
		w := m.w1[i*access.NumFeatures : (i+1)*access.NumFeatures]
		for j, v := range z {
			s += w[j] * v
		}
		h1[i] = max(s, 0)
	}
	for i := range H {
		s := m.b2[i]
		w := m.w2[i*H : (i+1)*H]
		for j := range H {
			s += w[j] * h1[j]
		}
		h2[i] = max(s, 0)
	}
	for k := range NumClasses {
		s := m.b3[k]
		w := m.w3[k*H : (k+1)*H]
		for j := range H {
			s += w[j] * h2[j]
		}
		o[k] = s
	}
}

func softmax(o [NumClasses]float64) [NumClasses]float64 {
	mx := max(o[0], o[1], o[2])
	e0, e1, e2 := math.Exp(o[0]-mx), math.Exp(o[1]-mx), math.Exp(o[2]-mx)
	s := e0 + e1 + e2
	return [NumClasses]float64{e0 / s, e1 / s, e2 / s}
}

// params returns the parameter slices in a fixed order.
func (m *MLP) params() [6]*[]float64 {
	return [6]*[]float64{&m.w1, &m.b1, &m.w2, &m.b2, &m.w3, &m.b3}
}

func mlpShapes(h int) [6]int {
	return [6]int{h * access.NumFeatures, h, h * h, h, NumClasses * h, NumClasses}
}

func trainMLP(d *trainSet, opt TrainOptions, rng *rand.Rand) (Classifier, error) {
	n := len(d.Z)
	if n == 0 {
		return nil, fmt.Errorf("%w: no training rows", ErrData)
	}
	H := opt.Hidden
	if H > maxHidden {
		return nil, fmt.Errorf("%w: hidden %d, the network supports at most %d", ErrOptions, H, maxHidden)
	}
	m := &MLP{pre: d.Pre, use: d.Use, hidden: H}
	// One flat parameter vector with views, so the optimiser is one loop.
	shapes := mlpShapes(H)
	total := 0
	for _, s := range shapes {
		total += s
	}
	theta := make([]float64, total)
	grad := make([]float64, total)
	sq := make([]float64, total)
	off := 0
	fanIn := [6]int{access.NumFeatures, 0, H, 0, H, 0}
	for k, p := range m.params() {
		*p = theta[off : off+shapes[k] : off+shapes[k]]
		if fanIn[k] > 0 {
			sd := 0.05
			if opt.Init == "he" {
				sd = math.Sqrt(2 / float64(fanIn[k]))
			}
			for i := range *p {
				(*p)[i] = rng.NormFloat64() * sd
			}
		}
		off += shapes[k]
	}
	gw1, gb1 := grad[0:shapes[0]], grad[shapes[0]:shapes[0]+shapes[1]]
	o2 := shapes[0] + shapes[1]
	gw2, gb2 := grad[o2:o2+shapes[2]], grad[o2+shapes[2]:o2+shapes[2]+shapes[3]]
	o3 := o2 + shapes[2] + shapes[3]
	gw3, gb3 := grad[o3:o3+shapes[4]], grad[o3+shapes[4]:]

	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	const eps = 1e-7
	lr, rho := opt.LearningRate, opt.Rho
	var h1, h2 [maxHidden]float64
	var d1, d2 [maxHidden]float64
	var o [NumClasses]float64
	for epoch := range opt.Epochs {
		if opt.Progress != nil && epoch > 0 {
			opt.Progress(epoch, opt.Epochs)
		}
		rng.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
		for start := 0; start < n; start += opt.Batch {
			end := min(start+opt.Batch, n)
			clear(grad)
			for _, r := range order[start:end] {
				z := &d.Z[r]
				m.forward(z, &h1, &h2, &o)
				p := softmax(o)
				p[d.Y[r]]--
				for k := range NumClasses {
					gb3[k] += p[k]
					w := gw3[k*H : (k+1)*H]
					for j := range H {
						w[j] += p[k] * h2[j]
					}
				}
				for j := range H {
					if h2[j] <= 0 {
						d2[j] = 0
						continue
					}
					s := 0.0
					for k := range NumClasses {
						s += m.w3[k*H+j] * p[k]
					}
					d2[j] = s
				}
				for i := range H {
					gb2[i] += d2[i]
					w := gw2[i*H : (i+1)*H]
					for j := range H {
						w[j] += d2[i] * h1[j]
					}
				}
				for j := range H {
					if h1[j] <= 0 {
						d1[j] = 0
						continue
					}
					s := 0.0
					for i := range H {
						s += m.w2[i*H+j] * d2[i]
					}
					d1[j] = s
				}
				for i := range H {
					gb1[i] += d1[i]
					w := gw1[i*access.NumFeatures : (i+1)*access.NumFeatures]
					for j, v := range z {
						w[j] += d1[i] * v
					}
				}
			}
			inv := 1 / float64(end-start)
			for i, g := range grad {
				g *= inv
				sq[i] = rho*sq[i] + (1-rho)*g*g
				theta[i] -= lr * g / (math.Sqrt(sq[i]) + eps)
			}
		}
	}
	if opt.Progress != nil {
		opt.Progress(opt.Epochs, opt.Epochs)
	}
	for _, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("detect: network training diverged (non-finite weight)")
		}
	}
	return m, nil
}

type mlpJSON struct {
	Hidden int       `json:"hidden"`
	W1     []float64 `json:"w1"`
	B1     []float64 `json:"b1"`
	W2     []float64 `json:"w2"`
	B2     []float64 `json:"b2"`
	W3     []float64 `json:"w3"`
	B3     []float64 `json:"b3"`
}

// MarshalJSON encodes the network's weights (the preprocessing is stored
// once, at the model level).
func (m *MLP) MarshalJSON() ([]byte, error) {
	return json.Marshal(mlpJSON{Hidden: m.hidden, W1: m.w1, B1: m.b1, W2: m.w2, B2: m.b2, W3: m.w3, B3: m.b3})
}

func decodeMLP(data []byte, pre Preprocess, use featureMask) (Classifier, error) {
	var j mlpJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: mlp: %w", ErrModel, err)
	}
	if j.Hidden < 1 || j.Hidden > maxHidden {
		return nil, fmt.Errorf("%w: mlp hidden width %d, want 1..%d", ErrModel, j.Hidden, maxHidden)
	}
	m := &MLP{pre: pre, use: use, hidden: j.Hidden, w1: j.W1, b1: j.B1, w2: j.W2, b2: j.B2, w3: j.W3, b3: j.B3}
	for k, s := range mlpShapes(j.Hidden) {
		p := *m.params()[k]
		if len(p) != s {
			return nil, fmt.Errorf("%w: mlp parameter block %d has %d values, want %d", ErrModel, k, len(p), s)
		}
		for _, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: mlp has a non-finite weight", ErrModel)
			}
		}
	}
	return m, nil
}
