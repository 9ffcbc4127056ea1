package learn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// trainMLP fits the network with RMSProp on mini-batches of the
// preprocessed rows d.Z, its weights drawn from rng (opt.Init).
func trainMLP(d *trainSet, opt detect.TrainOptions, rng *rand.Rand) (detect.Classifier, error) {
	n := len(d.Z)
	if n == 0 {
		return nil, fmt.Errorf("%w: no training rows", detect.ErrData)
	}
	H := opt.Hidden
	if H > detect.MaxHidden {
		return nil, fmt.Errorf("%w: hidden %d, the network supports at most %d", detect.ErrOptions, H, detect.MaxHidden)
	}
	m := &detect.MLPWeights{Hidden: H}
	// One flat parameter vector with views, so the optimiser is one loop.
	shapes := detect.MLPShapes(H)
	total := 0
	for _, s := range shapes {
		total += s
	}
	theta := make([]float64, total)
	grad := make([]float64, total)
	sq := make([]float64, total)
	off := 0
	fanIn := [6]int{access.NumFeatures, 0, H, 0, H, 0}
	for k, p := range m.Blocks() {
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
	var h1, h2 [detect.MaxHidden]float64
	var d1, d2 [detect.MaxHidden]float64
	var o [detect.NumClasses]float64
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
				m.Forward(z, &h1, &h2, &o)
				p := detect.Softmax(o)
				p[d.Y[r]]--
				for k := range detect.NumClasses {
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
					for k := range detect.NumClasses {
						s += m.W3[k*H+j] * p[k]
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
						s += m.W2[i*H+j] * d2[i]
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
	net, err := detect.NewMLP(*m, d.Pre, d.Names)
	if err != nil {
		return nil, err
	}
	return net, nil
}
