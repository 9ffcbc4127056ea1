package detect

import (
	"bytes"
	_ "embed"
	"sync"
)

// defaultModel is the embedded model behind Default. Regenerate it with
//
//	adaptio detect train --data DIR --model tree --out detect/default_model.json
//
//go:embed default_model.json
var defaultModel []byte

var loadDefault = sync.OnceValue(func() *Model {
	m, err := Load(bytes.NewReader(defaultModel))
	if err != nil {
		panic("detect: embedded default model: " + err.Error()) // a build defect; TestDefault catches it
	}
	return m
})

// Default returns the embedded model (a pruned decision tree); see
// Model.Info for the data it was trained on. The model is loaded once and
// shared; it is immutable and safe for concurrent use.
func Default() *Model { return loadDefault() }

// DefaultModelJSON returns a copy of the embedded model file.
func DefaultModelJSON() []byte { return bytes.Clone(defaultModel) }
