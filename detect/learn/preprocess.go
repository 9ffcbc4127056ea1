package learn

import (
	"fmt"
	"math"
	"slices"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// YeoJohnsonLogLik is the profile log-likelihood of lambda for the sample
// xs under the Yeo-Johnson normal model, up to an additive constant:
// -n/2 log(var(psi(x, lambda))) + (lambda-1) sum sign(x) log(|x|+1).
// It returns -Inf when the transformed sample has no spread or overflows.
func YeoJohnsonLogLik(xs []float64, lambda float64) float64 {
	return newYJSample(xs).logLik(lambda)
}

// yjSample caches sign(x) log(|x|+1) of a sample's distinct values with
// their multiplicities, so each likelihood evaluation costs one exponential
// per distinct value.
type yjSample struct {
	logs []float64 // sign(x) * log1p(|x|) of each distinct value
	wts  []float64 // multiplicity of each distinct value
	n    float64
	jac  float64 // sum over the sample of sign(x) log1p(|x|)
}

func newYJSample(xs []float64) *yjSample {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	s := &yjSample{n: float64(len(xs))}
	for i, x := range sorted {
		if i > 0 && x == sorted[i-1] {
			s.wts[len(s.wts)-1]++
		} else {
			l := math.Log1p(math.Abs(x))
			if x < 0 {
				l = -l
			}
			s.logs = append(s.logs, l)
			s.wts = append(s.wts, 1)
		}
	}
	for i, l := range s.logs {
		s.jac += s.wts[i] * l
	}
	return s
}

func (s *yjSample) logLik(lambda float64) float64 {
	if s.n < 2 {
		return math.Inf(-1)
	}
	// Weighted mean and variance (West's incremental update).
	var mean, m2, wsum float64
	for i, l := range s.logs {
		var t float64
		if l >= 0 {
			if math.Abs(lambda) < 1e-12 {
				t = l
			} else {
				t = math.Expm1(lambda*l) / lambda
			}
		} else {
			if l2 := 2 - lambda; math.Abs(l2) < 1e-12 {
				t = l
			} else {
				t = -math.Expm1(-l2*l) / l2
			}
		}
		w := s.wts[i]
		wsum += w
		d := t - mean
		mean += d * w / wsum
		m2 += w * d * (t - mean)
	}
	v := m2 / s.n
	if !(v > 0) || math.IsInf(v, 0) || math.IsNaN(v) {
		return math.Inf(-1)
	}
	return -s.n/2*math.Log(v) + (lambda-1)*s.jac
}

// lambdaTol is the precision of FitYeoJohnson's maximum-likelihood estimate.
const lambdaTol = 1e-6

// FitYeoJohnson returns the maximum-likelihood lambda for xs in
// [detect.LambdaMin, detect.LambdaMax] ([-5, 5]): a
// coarse scan of the profile log-likelihood locates the best bracket, then a
// golden-section search refines it to 1e-6. A sample without spread gets 1
// (the identity transform).
func FitYeoJohnson(xs []float64) float64 {
	const steps = 40
	f := newYJSample(xs).logLik
	best, bestV := 1.0, f(1)
	if math.IsInf(bestV, -1) {
		return 1
	}
	h := (detect.LambdaMax - detect.LambdaMin) / steps
	for i := 0; i <= steps; i++ {
		l := detect.LambdaMin + float64(i)*h
		if v := f(l); v > bestV {
			best, bestV = l, v
		}
	}
	a, b := math.Max(detect.LambdaMin, best-h), math.Min(detect.LambdaMax, best+h)
	const invPhi = 0.6180339887498949
	c, d := b-invPhi*(b-a), a+invPhi*(b-a)
	fc, fd := f(c), f(d)
	for b-a > lambdaTol {
		if fc >= fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
		}
	}
	l := (a + b) / 2
	if f(l) < bestV {
		return best
	}
	return l
}

// FitPreprocess fits the preprocessing on training rows: lambda by maximum
// likelihood per feature, then the mean and sample standard deviation of the
// transformed values. A feature with no spread gets Scale 1.
func FitPreprocess(X [][access.NumFeatures]float64) (detect.Preprocess, error) {
	var p detect.Preprocess
	if len(X) < 2 {
		return p, fmt.Errorf("%w: %d rows, need at least 2 to fit the preprocessing", detect.ErrData, len(X))
	}
	col := make([]float64, len(X))
	for j := range access.NumFeatures {
		for i := range X {
			col[i] = X[i][j]
		}
		p.Lambda[j] = FitYeoJohnson(col)
		var mean, m2 float64
		for i, x := range col {
			t := detect.YeoJohnson(x, p.Lambda[j])
			d := t - mean
			mean += d / float64(i+1)
			m2 += d * (t - mean)
		}
		sd := math.Sqrt(m2 / float64(len(col)-1))
		if !(sd > 0) || math.IsInf(sd, 0) {
			sd = 1
		}
		p.Mean[j], p.Scale[j] = mean, sd
	}
	return p, p.Validate()
}
