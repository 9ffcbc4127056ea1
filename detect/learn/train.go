package learn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// trainSet is the training data handed to a trainer: raw features, their
// preprocessed form and class indices (0..2, access.Classes order).
type trainSet struct {
	X     [][access.NumFeatures]float64
	Z     [][access.NumFeatures]float64 // excluded features zeroed
	Y     []uint8
	Pre   detect.Preprocess
	Names []string // the used features, in access.FeatureNames order
	Feats []int    // their indices, increasing
}

// trainer fits a classifier of one kind.
type trainer func(d *trainSet, opt detect.TrainOptions, rng *rand.Rand) (detect.Classifier, error)

// trainers maps the kinds of detect.Kinds to their trainers (package
// detect lists the kinds and their decoders).
var trainers = map[string]trainer{
	"tree":   trainTree,
	"forest": trainForest,
	"mlp":    trainMLP,
}

// withDefaults fills the zero fields of o (detect.TrainOptions documents
// the defaults).
func withDefaults(o detect.TrainOptions) detect.TrainOptions {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MinLeaf, 1)
	def(&o.MaxDepth, 40)
	def(&o.Folds, 5)
	def(&o.Trees, 500)
	def(&o.Mtry, 3)
	def(&o.Workers, runtime.GOMAXPROCS(0))
	def(&o.Hidden, 5)
	def(&o.Epochs, 50)
	def(&o.Batch, 32)
	if o.LearningRate == 0 {
		o.LearningRate = 0.001
	}
	if o.Rho == 0 {
		o.Rho = 0.9
	}
	if o.Init == "" {
		o.Init = "normal"
	}
	return o
}

// validate checks options after withDefaults; errors wrap detect.ErrOptions.
func validate(o detect.TrainOptions) error {
	switch {
	case o.MinLeaf < 1:
		return fmt.Errorf("%w: min leaf %d, want >= 1", detect.ErrOptions, o.MinLeaf)
	case o.MaxDepth < 1 || o.MaxDepth > 200:
		return fmt.Errorf("%w: max depth %d, want 1..200", detect.ErrOptions, o.MaxDepth)
	case o.Folds < -1 || o.Folds == 1:
		return fmt.Errorf("%w: folds %d, want -1 (no pruning) or >= 2", detect.ErrOptions, o.Folds)
	case o.Trees < 1:
		return fmt.Errorf("%w: trees %d, want >= 1", detect.ErrOptions, o.Trees)
	case o.Mtry < 1 || o.Mtry > access.NumFeatures:
		return fmt.Errorf("%w: mtry %d, want 1..%d", detect.ErrOptions, o.Mtry, access.NumFeatures)
	case o.Workers < 1:
		return fmt.Errorf("%w: workers %d, want >= 1", detect.ErrOptions, o.Workers)
	case o.Hidden < 1 || o.Hidden > detect.MaxHidden:
		return fmt.Errorf("%w: hidden %d, want 1..%d", detect.ErrOptions, o.Hidden, detect.MaxHidden)
	case o.Epochs < 1:
		return fmt.Errorf("%w: epochs %d, want >= 1", detect.ErrOptions, o.Epochs)
	case o.Batch < 1:
		return fmt.Errorf("%w: batch %d, want >= 1", detect.ErrOptions, o.Batch)
	case !(o.LearningRate > 0) || math.IsInf(o.LearningRate, 0):
		return fmt.Errorf("%w: learning rate %v, want > 0", detect.ErrOptions, o.LearningRate)
	case !(o.Rho > 0 && o.Rho < 1):
		return fmt.Errorf("%w: rho %v, want in (0, 1)", detect.ErrOptions, o.Rho)
	case o.Init != "he" && o.Init != "normal":
		return fmt.Errorf("%w: init %q, want he or normal", detect.ErrOptions, o.Init)
	}
	return nil
}

// Train fits the preprocessing on X and trains a classifier of the given kind
// ("tree", "forest" or "mlp"; see detect.Kinds) on X labelled y. All randomness
// comes from rng, so equal inputs and an equally seeded rng give an equal
// model (and equal Save bytes), whatever opt.Workers is. Errors wrap the
// sentinels of package detect (ErrUnknownKind, ErrOptions, ErrFeatures,
// ErrData).
func Train(kind string, X [][access.NumFeatures]float64, y []access.Class, opt detect.TrainOptions, rng *rand.Rand) (*detect.Model, error) {
	train, ok := trainers[kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q (want one of %v)", detect.ErrUnknownKind, kind, detect.Kinds())
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: nil rng", detect.ErrOptions)
	}
	if opt.MinLeaf == 0 && kind == "forest" {
		opt.MinLeaf = 20
	}
	mtrySet := opt.Mtry != 0
	opt = withDefaults(opt)
	if err := validate(opt); err != nil {
		return nil, err
	}
	names, err := detect.UsedFeatures(opt.Features)
	if err != nil {
		return nil, err
	}
	opt.Features = names
	if n := len(opt.Features); opt.Mtry > n && !mtrySet {
		opt.Mtry = n
	} else if opt.Mtry > n {
		return nil, fmt.Errorf("%w: mtry %d, want at most the %d features used", detect.ErrOptions, opt.Mtry, n)
	}
	if len(X) != len(y) {
		return nil, fmt.Errorf("%w: %d feature rows but %d labels", detect.ErrData, len(X), len(y))
	}
	d := &trainSet{X: X, Y: make([]uint8, len(y)), Names: names}
	var used [access.NumFeatures]bool
	for _, n := range names {
		j := access.FeatureIndex(n)
		used[j] = true
		d.Feats = append(d.Feats, j)
	}
	info := detect.TrainInfo{Rows: len(X), Options: opt}
	for i, c := range y {
		k := c.Index()
		if k < 0 {
			return nil, fmt.Errorf("%w: row %d has label %v, want FPP, SC or SS", detect.ErrData, i, c)
		}
		for j, v := range X[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: row %d feature %s is %v", detect.ErrData, i, access.FeatureNames[j], v)
			}
		}
		d.Y[i] = uint8(k)
		info.ClassCounts[k]++
	}
	pre, err := FitPreprocess(X)
	if err != nil {
		return nil, err
	}
	d.Pre = pre
	d.Z = make([][access.NumFeatures]float64, len(X))
	for i := range X {
		z := pre.Apply(X[i])
		for j, u := range used {
			if !u {
				z[j] = 0
			}
		}
		d.Z[i] = z
	}
	clf, err := train(d, opt, rng)
	if err != nil {
		return nil, err
	}
	return detect.NewModel(clf, pre, info)
}
