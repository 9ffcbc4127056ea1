package detect

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/adaptio/adaptio/access"
)

// Model file format: JSON with a format tag and version. "features" lists
// every feature name of the build that wrote it (access.FeatureNames) and
// "uses" the subset the classifier uses (TrainOptions.Features). Load refuses
// any other version and any file whose feature or class names differ from
// access.FeatureNames and access.Classes.
//
// Version 2 added the sixth feature (proc_offset_dist) and "uses";
// version 3 the seventh (proc_dist_ratio); version 4 file_sharers, before
// proc_dist_ratio.
const (
	FormatName    = "adaptio-detect-model"
	FormatVersion = 4
)

type modelFile struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Kind       string          `json:"kind"`
	Features   []string        `json:"features"`
	Uses       []string        `json:"uses"`
	Classes    []string        `json:"classes"`
	Preprocess *Preprocess     `json:"preprocess"`
	Classifier json.RawMessage `json:"classifier"`
	Training   TrainInfo       `json:"training"`
}

func featureNames() []string { return append([]string(nil), access.FeatureNames[:]...) }

func classNames() []string {
	out := make([]string, len(access.Classes))
	for i, c := range access.Classes {
		out[i] = c.String()
	}
	return out
}

// Save writes the model as versioned JSON. Equal models give equal bytes.
func (m *Model) Save(w io.Writer) error {
	clf, err := json.Marshal(m.clf)
	if err != nil {
		return fmt.Errorf("detect: encoding %s classifier: %w", m.kind, err)
	}
	pre := m.pre
	b, err := json.Marshal(modelFile{
		Format: FormatName, Version: FormatVersion, Kind: m.kind,
		Features: featureNames(), Uses: m.use.names(), Classes: classNames(),
		Preprocess: &pre, Classifier: clf, Training: m.info,
	})
	if err != nil {
		return fmt.Errorf("detect: encoding model: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// Load reads a model written by Save from r (learn.LoadFile opens a path
// for it). It fails with ErrVersion for another format version, ErrFeatures
// when the feature or class names differ from this build's, ErrUnknownKind
// for an unknown classifier, and ErrModel for anything malformed.
func Load(r io.Reader) (*Model, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("detect: reading model: %w", err)
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: not a model file: %w", ErrModel, err)
	}
	if head.Format != FormatName {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrModel, head.Format, FormatName)
	}
	if head.Version != FormatVersion {
		return nil, fmt.Errorf("%w: file has version %d, this build reads version %d; retrain with adaptio detect train", ErrVersion, head.Version, FormatVersion)
	}
	var f modelFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	if !slices.Equal(f.Features, featureNames()) {
		return nil, fmt.Errorf("%w: file has features %v, this build uses %v; retrain with adaptio detect train", ErrFeatures, f.Features, featureNames())
	}
	if !slices.Equal(f.Classes, classNames()) {
		return nil, fmt.Errorf("%w: file has classes %v, this build uses %v", ErrFeatures, f.Classes, classNames())
	}
	if f.Uses == nil {
		return nil, fmt.Errorf("%w: no list of used features", ErrModel)
	}
	use, err := maskOf(f.Uses, ErrModel)
	if err != nil {
		return nil, err
	}
	decode, ok := registry[f.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q in model file (want one of %v)", ErrUnknownKind, f.Kind, Kinds())
	}
	if f.Preprocess == nil {
		return nil, fmt.Errorf("%w: no preprocessing", ErrModel)
	}
	if err := f.Preprocess.Validate(); err != nil {
		return nil, err
	}
	if len(f.Classifier) == 0 {
		return nil, fmt.Errorf("%w: no classifier", ErrModel)
	}
	clf, err := decode(f.Classifier, *f.Preprocess, use)
	if err != nil {
		return nil, err
	}
	f.Training.Options.Features = use.names()
	return &Model{kind: f.Kind, use: use, pre: *f.Preprocess, clf: clf, info: f.Training}, nil
}
