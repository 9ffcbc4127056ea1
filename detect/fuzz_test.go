package detect

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/adaptio/adaptio/access"
)

// FuzzLoad feeds Load arbitrary bytes: it must return a model or an error,
// never panic, and a model it returns must predict without panicking and
// survive a save/load round trip.
func FuzzLoad(f *testing.F) {
	for _, kind := range Kinds() {
		var b bytes.Buffer
		if err := trainKind(f, kind).Save(&b); err != nil {
			f.Fatal(err)
		}
		if kind != "forest" {
			f.Add(b.Bytes())
		}
	}
	f.Add(DefaultModelJSON())
	f.Add([]byte(`{"format":"adaptio-detect-model","version":1}`))
	// A network on the papers' five features: its file's "uses" lists them.
	tr, _, _ := sets(f)
	opt := smallOpts
	opt.Features, opt.Epochs = PaperFeatures(), 2
	m, err := Train("mlp", tr.X, tr.Y, opt, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		f.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.Save(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Load(bytes.NewReader(data))
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
		if _, err := Load(&b); err != nil {
			t.Fatalf("reload of a saved model: %v", err)
		}
	})
}
