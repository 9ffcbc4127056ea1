package detect

import (
	"fmt"
	"math"

	"github.com/adaptio/adaptio/access"
)

// Preprocess is the fitted feature transformation: per feature a Yeo-Johnson
// power transform with parameter Lambda, then centring (subtract Mean) and
// scaling (divide by Scale, the standard deviation of the transformed
// training values). The zero value is not usable; build it with
// learn.FitPreprocess. Apply is a pure function and safe for concurrent use.
type Preprocess struct {
	Lambda [access.NumFeatures]float64 `json:"lambda"`
	Mean   [access.NumFeatures]float64 `json:"mean"`
	Scale  [access.NumFeatures]float64 `json:"scale"`
}

// LambdaMin and LambdaMax bound the Yeo-Johnson parameter of a valid
// preprocessing (learn.FitYeoJohnson searches this interval).
const (
	LambdaMin = -5.0
	LambdaMax = 5.0
)

// YeoJohnson returns the Yeo-Johnson transform of x with parameter lambda
// (Yeo and Johnson, Biometrika 2000). It is defined for every real x and is
// strictly increasing in x for every lambda.
func YeoJohnson(x, lambda float64) float64 {
	// exp and log rather than expm1 and log1p: several times faster, and the
	// transform is only ever compared with itself (fit, train and predict
	// all go through here).
	if x >= 0 {
		l := math.Log(1 + x)
		if math.Abs(lambda) < 1e-12 {
			return l
		}
		return (math.Exp(lambda*l) - 1) / lambda
	}
	l := math.Log(1 - x)
	l2 := 2 - lambda
	if math.Abs(l2) < 1e-12 {
		return -l
	}
	return -(math.Exp(l2*l) - 1) / l2
}

// Apply returns the transformed, centred and scaled features of x. It
// computes YeoJohnson up to rounding (it multiplies by precomputed
// reciprocals); training and prediction both go through it, so a model
// sees the same values in both.
func (p *Preprocess) Apply(x [access.NumFeatures]float64) [access.NumFeatures]float64 {
	var z [access.NumFeatures]float64
	for j := range access.NumFeatures {
		v, lam := x[j], p.Lambda[j]
		var t float64
		if v >= 0 {
			t = math.Log(1 + v)
			if lam != 0 {
				t = (math.Exp(lam*t) - 1) * (1 / lam)
			}
		} else {
			t = -math.Log(1 - v)
			if l2 := 2 - lam; l2 != 0 {
				t = (1 - math.Exp(-l2*t)) * (1 / l2)
			}
		}
		z[j] = (t - p.Mean[j]) * (1 / p.Scale[j])
	}
	return z
}

// Validate checks the parameters: finite, Scale > 0, Lambda in
// [LambdaMin, LambdaMax]; errors wrap ErrModel.
func (p *Preprocess) Validate() error {
	for j := range access.NumFeatures {
		for _, v := range []float64{p.Lambda[j], p.Mean[j], p.Scale[j]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: preprocessing of %s has a non-finite parameter", ErrModel, access.FeatureNames[j])
			}
		}
		if !(p.Scale[j] > 0) {
			return fmt.Errorf("%w: preprocessing of %s has scale %v, want > 0", ErrModel, access.FeatureNames[j], p.Scale[j])
		}
		if p.Lambda[j] < LambdaMin || p.Lambda[j] > LambdaMax {
			return fmt.Errorf("%w: preprocessing of %s has lambda %v outside [%v, %v]", ErrModel, access.FeatureNames[j], p.Lambda[j], LambdaMin, LambdaMax)
		}
	}
	return nil
}

// YeoJohnsonInverse returns x such that YeoJohnson(x, lambda) == t (up to
// rounding), for t in the transform's range.
func YeoJohnsonInverse(t, lambda float64) float64 {
	if t >= 0 {
		if math.Abs(lambda) < 1e-12 {
			return math.Expm1(t)
		}
		return math.Expm1(math.Log1p(lambda*t) / lambda)
	}
	l2 := 2 - lambda
	if math.Abs(l2) < 1e-12 {
		return -math.Expm1(-t)
	}
	return -math.Expm1(math.Log1p(-l2*t) / l2)
}
