package detect_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/detect/learn"
	"github.com/adaptio/adaptio/workload"
)

// FuzzLoad feeds Load arbitrary bytes: it must return a model or an error,
// never panic, and a model it returns must predict without panicking and
// survive a save/load round trip. The seeds are files of every kind
// (trained by package detect/learn on a small synthetic set) and of a
// network on the papers' five features.
func FuzzLoad(f *testing.F) {
	s, err := learn.Synthetic(workload.Grid(false), learn.SyntheticOptions{PerScenario: 5, MaxRequests: 256}, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		f.Fatal(err)
	}
	save := func(kind string, opt detect.TrainOptions) []byte {
		m, err := learn.Train(kind, s.X, s.Y, opt, rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := m.Save(&b); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	for _, kind := range detect.Kinds() {
		if kind != "forest" {
			f.Add(save(kind, detect.TrainOptions{Epochs: 2}))
		}
	}
	f.Add(detect.DefaultModelJSON())
	f.Add([]byte(`{"format":"adaptio-detect-model","version":1}`))
	// A network on the papers' five features: its file's "uses" lists them.
	f.Add(save("mlp", detect.TrainOptions{Features: detect.PaperFeatures(), Epochs: 2}))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := detect.Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, x := range [][access.NumFeatures]float64{{}, {1, 2, 3, 4, 5, 6}, {1e300, -1, 0, 7, 1e-300, 1e300}} {
			m.Predict(x)
		}
		var b bytes.Buffer
		if err := m.Save(&b); err != nil {
			t.Fatalf("save of a loaded model: %v", err)
		}
		if _, err := detect.Load(&b); err != nil {
			t.Fatalf("reload of a saved model: %v", err)
		}
	})
}
