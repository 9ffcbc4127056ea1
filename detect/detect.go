package detect

import (
	"errors"
	"fmt"
	"sort"

	"github.com/adaptio/adaptio/access"
)

// Errors returned by the package, wrapped with details.
var (
	// ErrUnknownKind: the classifier kind is not in the registry.
	ErrUnknownKind = errors.New("detect: unknown classifier kind")
	// ErrData: the training or evaluation data is unusable.
	ErrData = errors.New("detect: bad data")
	// ErrOptions: a training option is out of range.
	ErrOptions = errors.New("detect: bad training options")
	// ErrModel: a model file is malformed or inconsistent.
	ErrModel = errors.New("detect: bad model")
	// ErrVersion: a model file has another format version.
	ErrVersion = errors.New("detect: unsupported model format version")
	// ErrFeatures: a model file was trained on other features.
	ErrFeatures = errors.New("detect: model feature mismatch")
)

// NumClasses is the number of detectable classes (access.Classes).
const NumClasses = 3

// Classifier maps raw features (access.Observation.Features order) to class
// probabilities in access.Classes order, summing to 1. Implementations are
// immutable after training or loading, safe for concurrent use, and do not
// allocate in Probs.
type Classifier interface {
	Kind() string
	Probs(x [access.NumFeatures]float64) [NumClasses]float64
}

// TrainOptions tunes training (package detect/learn). The zero value means
// the defaults given per field; learn.Train records the effective options in
// the model's metadata, so a model file carries them (Model.Info).
type TrainOptions struct {
	// Features names the features the classifier may use, a subset of
	// access.FeatureNames in any order; default all of them. PaperFeatures
	// names the papers' five. Trees and forests never split on an excluded
	// feature; the network sees excluded features as 0 after preprocessing.
	// Recorded in the model file (its "uses" list).
	Features []string `json:"-"`

	// Decision tree (CART, Gini) and forest trees.
	// Minimum training rows (bootstrap weight) per leaf; default 1 for the
	// tree (pruning controls its size) and 20 for the forest's unpruned
	// trees (on the simulator's dataset, where shared contiguous and strided
	// intervals overlap, 20 beats Breiman's 1 by 0.8 points of accuracy).
	MinLeaf  int `json:"min_leaf"`
	MaxDepth int `json:"max_depth"` // default 40
	// Folds of the cross-validation that picks the cost-complexity pruning
	// parameter of the single tree; default 5, -1 disables pruning.
	Folds int `json:"folds"`

	// Random forest.
	Trees   int `json:"trees"` // default 500
	Mtry    int `json:"mtry"`  // features tried per split, at most len(Features); default 3 (the papers' best)
	Workers int `json:"-"`     // goroutines; default GOMAXPROCS. Does not change the result.

	// Network (6 inputs, excluded features 0 -> Hidden ReLU -> Hidden ReLU -> 3 softmax).
	Hidden       int     `json:"hidden"`        // default 5
	Epochs       int     `json:"epochs"`        // default 50
	Batch        int     `json:"batch"`         // default 32
	LearningRate float64 `json:"learning_rate"` // RMSProp step; default 0.001
	Rho          float64 `json:"rho"`           // RMSProp decay of the squared-gradient average; default 0.9
	Init         string  `json:"init"`          // weight init: "normal" (default: N(0, 0.05^2), the papers' Keras "normal") or "he" (N(0, 2/fan_in))

	// Progress, if not nil, is called as training advances (forest: per
	// tree, from the training goroutines one call at a time; network: per
	// epoch) with the work done and the total. Not recorded.
	Progress func(done, total int) `json:"-"`

	// Metadata only: recorded in the model file.
	Seed   uint64 `json:"seed"`             // the seed the caller derived rng from
	Source string `json:"source,omitempty"` // description of the training data
}

// featureMask marks the features a model uses.
type featureMask [access.NumFeatures]bool

// indices returns the used feature indices, increasing.
func (m featureMask) indices() []int {
	var out []int
	for j, u := range m {
		if u {
			out = append(out, j)
		}
	}
	return out
}

// names returns the used feature names in access.FeatureNames order.
func (m featureMask) names() []string {
	var out []string
	for _, j := range m.indices() {
		out = append(out, access.FeatureNames[j])
	}
	return out
}

// PaperFeatures returns the names of the papers' five features (Bez et al., 2019 preprint
// section 5, Bez et al., SBAC-PAD 2019); the others, proc_offset_dist, file_sharers and
// proc_dist_ratio, are ours.
func PaperFeatures() []string {
	return append([]string(nil), access.FeatureNames[:access.NumPaperFeatures]...)
}

// AllFeatures returns every feature name (access.FeatureNames), the default.
func AllFeatures() []string { return append([]string(nil), access.FeatureNames[:]...) }

// FeatureSet returns the feature names of a named set: "papers"
// (PaperFeatures) or "all" (AllFeatures).
func FeatureSet(name string) ([]string, error) {
	switch name {
	case "papers":
		return PaperFeatures(), nil
	case "all":
		return AllFeatures(), nil
	}
	return nil, fmt.Errorf("%w: feature set %q, want papers or all", ErrOptions, name)
}

// maskOf checks names (a non-empty subset of access.FeatureNames without
// repeats; nil: all) and returns the mask. Unknown names wrap ErrFeatures,
// empty or repeated ones errBase.
func maskOf(names []string, errBase error) (featureMask, error) {
	var m featureMask
	if names == nil {
		for j := range m {
			m[j] = true
		}
		return m, nil
	}
	if len(names) == 0 {
		return m, fmt.Errorf("%w: empty feature list", errBase)
	}
	for _, n := range names {
		j := access.FeatureIndex(n)
		if j < 0 {
			return m, fmt.Errorf("%w: unknown feature %q (want names from %v)", ErrFeatures, n, access.FeatureNames)
		}
		if m[j] {
			return m, fmt.Errorf("%w: feature %q listed twice", errBase, n)
		}
		m[j] = true
	}
	return m, nil
}

// UsedFeatures checks the feature list of a training (TrainOptions.Features:
// a non-empty subset of access.FeatureNames without repeats; nil: all) and
// returns it in access.FeatureNames order. Unknown names wrap ErrFeatures,
// an empty or repeated list ErrOptions.
func UsedFeatures(names []string) ([]string, error) {
	use, err := maskOf(names, ErrOptions)
	if err != nil {
		return nil, err
	}
	return use.names(), nil
}

// decoder rebuilds a classifier of one kind from its part of a model file.
type decoder func(data []byte, pre Preprocess, use featureMask) (Classifier, error)

// registry maps kind names to decoders; the one place where classifier
// kinds are listed (package detect/learn lists their trainers).
var registry = map[string]decoder{
	"tree":   decodeTree,
	"forest": decodeForest,
	"mlp":    decodeMLP,
}

// Kinds returns the classifier kinds a model file may hold, sorted:
// "forest", "mlp", "tree".
func Kinds() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TrainInfo is the training metadata stored with a model.
type TrainInfo struct {
	Rows        int               `json:"rows"`
	ClassCounts [NumClasses]int   `json:"class_counts"` // rows per class, access.Classes order
	Options     TrainOptions      `json:"options"`
	Extra       map[string]string `json:"extra,omitempty"` // free-form facts (e.g. the data split)
}

// Model is a trained detector: the fitted preprocessing, a classifier and
// training metadata. A Model is immutable and safe for concurrent use.
type Model struct {
	kind string
	use  featureMask
	pre  Preprocess
	clf  Classifier
	info TrainInfo
}

// NewModel assembles a trained model from its parts: clf, built by
// NewTree, NewForest or NewMLP on the features info.Options.Features names
// (nil: all) and, for the network, on pre; the fitted preprocessing pre; and
// the training metadata info. It checks the parts as Load checks a model
// file: ErrUnknownKind for a classifier kind without a decoder, ErrModel or
// ErrFeatures for a bad preprocessing or feature list. Package detect/learn
// calls it at the end of training.
func NewModel(clf Classifier, pre Preprocess, info TrainInfo) (*Model, error) {
	kind := clf.Kind()
	if _, ok := registry[kind]; !ok {
		return nil, fmt.Errorf("%w: %q (want one of %v)", ErrUnknownKind, kind, Kinds())
	}
	use, err := maskOf(info.Options.Features, ErrModel)
	if err != nil {
		return nil, err
	}
	if err := pre.Validate(); err != nil {
		return nil, err
	}
	info.Options.Features = use.names()
	return &Model{kind: kind, use: use, pre: pre, clf: clf, info: info}, nil
}

// zero returns z with the excluded features set to 0.
func (m *featureMask) zero(z [access.NumFeatures]float64) [access.NumFeatures]float64 {
	for j, u := range m {
		if !u {
			z[j] = 0
		}
	}
	return z
}

// Kind returns the classifier kind ("tree", "forest" or "mlp").
func (m *Model) Kind() string { return m.kind }

// Features returns the names of the features the model uses, in
// access.FeatureNames order. Predict takes all access.NumFeatures values and
// ignores the others.
func (m *Model) Features() []string { return m.use.names() }

// Preprocess returns the fitted preprocessing.
func (m *Model) Preprocess() Preprocess { return m.pre }

// Classifier returns the model's classifier (a *Tree, *Forest or *MLP).
func (m *Model) Classifier() Classifier { return m.clf }

// Info returns the training metadata. Its Extra map is shared: do not modify it.
func (m *Model) Info() TrainInfo { return m.info }

// WithExtra returns a copy of m whose metadata carries the given extra facts
// (merged over existing ones); the classifier is shared.
func (m *Model) WithExtra(extra map[string]string) *Model {
	c := *m
	c.info.Extra = make(map[string]string, len(m.info.Extra)+len(extra))
	for k, v := range m.info.Extra {
		c.info.Extra[k] = v
	}
	for k, v := range extra {
		c.info.Extra[k] = v
	}
	return &c
}

// Predict classifies raw features (in access.Observation.Features order)
// and returns the most probable class (ties go to the earlier class) and the
// probabilities in access.Classes order. It does not allocate.
func (m *Model) Predict(x [access.NumFeatures]float64) (access.Class, [NumClasses]float64) {
	p := m.clf.Probs(x)
	return argmax(p), p
}

// Detect classifies an observation's features. An idle observation (no
// I/O) has no pattern: Detect returns access.Unknown and zero probabilities.
// The operation is not part of the class; pair the result with o.Op.
func (m *Model) Detect(o access.Observation) (access.Class, [NumClasses]float64) {
	if o.Idle() {
		return access.Unknown, [NumClasses]float64{}
	}
	return m.Predict(o.Features())
}
