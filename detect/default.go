package detect

import (
	"bytes"
	_ "embed"
	"math/rand/v2"
	"sync"

	"github.com/adaptio/adaptio/workload"
)

// defaultModel is the embedded model behind Default: a tree trained on the
// simulator's grid, the small-job grid and the real runs in realruns/
// (README there). Regenerate it, from the repository's root and with
// DIR/grid from adaptio sim grid --repeat 3, with
//
//	adaptio detect train --data DIR/grid,synthetic-small,detect/realruns/ior-8ranks*50,detect/realruns/ior-4ranks*50,detect/realruns/demo*10 --model tree --out detect/default_model.json
//
//go:embed default_model.json
var defaultModel []byte

var loadDefault = sync.OnceValues(func() (*Model, error) {
	m, err := Load(bytes.NewReader(defaultModel))
	if err == nil {
		return m, nil
	}
	// The embedded file does not fit this build (say, the features
	// changed): fall back to a tree trained on a synthetic grid, so callers
	// keep working; DefaultError reports it and TestDefault fails.
	rng := rand.New(rand.NewPCG(1, 0xdefa))
	s, serr := Synthetic(workload.Grid(false), SyntheticOptions{PerScenario: 21, MaxRequests: 512}, rng)
	if serr != nil {
		panic("detect: default model fallback: " + serr.Error())
	}
	fb, terr := Train("tree", s.X, s.Y, TrainOptions{Source: "synthetic fallback"}, rng)
	if terr != nil {
		panic("detect: default model fallback: " + terr.Error())
	}
	return fb, err
})

// Default returns the embedded model (a pruned decision tree); see
// Model.Info for the data it was trained on. The model is loaded once and
// shared; it is immutable and safe for concurrent use. If the embedded file
// cannot be loaded by this build, Default returns a tree trained on a
// Synthetic grid instead and DefaultError says why.
func Default() *Model {
	m, _ := loadDefault()
	return m
}

// DefaultError returns nil when Default is the embedded model, or the
// reason the embedded model file could not be loaded.
func DefaultError() error {
	_, err := loadDefault()
	return err
}

// DefaultModelJSON returns a copy of the embedded model file.
func DefaultModelJSON() []byte { return bytes.Clone(defaultModel) }
