package detect

import (
	"bytes"
	_ "embed"
	"sync"
)

// defaultModel is the embedded model behind Default: a tree trained on the
// simulator's grid, the small-job grid and the real runs in realruns/
// (README there). Regenerate it, from the repository's root and with
// DIR/grid from adaptio sim grid --repeat 3, with
//
//	adaptio detect train --data DIR/grid,synthetic-small,detect/realruns/ior-8ranks*50,detect/realruns/ior-4ranks*50,detect/realruns/demo*10,detect/realruns/ior-8ranks-loaded*50,detect/realruns/ior-8ranks-hdd*50 --model tree --out detect/default_model.json
//
// and replace the grid's path in the file's training record by DIR/grid.
//
//go:embed default_model.json
var defaultModel []byte

var loadDefault = sync.OnceValues(func() (*Model, error) {
	return Load(bytes.NewReader(defaultModel))
})

// Default returns the embedded model (a pruned decision tree); see
// Model.Info for the data it was trained on. The model is decoded once and
// shared; it is immutable and safe for concurrent use. An embedded file
// this build cannot decode (say, the features changed and
// default_model.json was not regenerated) is a programmer error: Default
// panics with DefaultError's reason, and TestDefault fails.
func Default() *Model {
	m, err := loadDefault()
	if err != nil {
		panic("detect: embedded default model: " + err.Error() + " (regenerate detect/default_model.json with adaptio detect train)")
	}
	return m
}

// DefaultError returns nil when the embedded model file decodes, or the
// reason it does not (Default then panics).
func DefaultError() error {
	_, err := loadDefault()
	return err
}

// DefaultModelJSON returns a copy of the embedded model file.
func DefaultModelJSON() []byte { return bytes.Clone(defaultModel) }
