package learn

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

func allFeats() []int {
	out := make([]int, access.NumFeatures)
	for i := range out {
		out[i] = i
	}
	return out
}

// splitFeatures returns the feature each node of a tree's or forest's model
// file splits on (-1: a leaf); nil for a network.
func splitFeatures(t testing.TB, m *detect.Model) []int32 {
	t.Helper()
	var b bytes.Buffer
	if err := m.Save(&b); err != nil {
		t.Fatal(err)
	}
	var f struct {
		Classifier detect.Flat `json:"classifier"`
	}
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	return f.Classifier.Feature
}

// TestPaperFeatureModels trains every kind on the papers' five features and
// checks the sixth has no influence: trees and forests never split on it,
// the network's output does not move with it, and the subset survives a
// save/load round trip.
func TestPaperFeatureModels(t *testing.T) {
	tr, te, _ := sets(t)
	const excluded = access.NumFeatures - 1
	for _, kind := range detect.Kinds() {
		t.Run(kind, func(t *testing.T) {
			opt := smallOpts
			opt.Features = detect.PaperFeatures()
			m, err := Train(kind, tr.X, tr.Y, opt, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Features(), detect.PaperFeatures()) || !slices.Equal(m.Info().Options.Features, detect.PaperFeatures()) {
				t.Fatalf("Features() %v, options %v, want %v", m.Features(), m.Info().Options.Features, detect.PaperFeatures())
			}
			for i, f := range splitFeatures(t, m) {
				if f == excluded {
					t.Fatalf("node %d splits on the excluded feature", i)
				}
			}
			for i := range min(te.Len(), 200) {
				x := te.X[i]
				_, p := m.Predict(x)
				x[excluded] = 1e12
				if _, q := m.Predict(x); q != p {
					t.Fatalf("row %d: probabilities %v move to %v with the excluded feature", i, p, q)
				}
			}
			var buf bytes.Buffer
			if err := m.Save(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), `"uses":["file_handles","req_avg","req_min","req_max","offset_dist"]`) {
				t.Fatalf("model file does not list the used features")
			}
			l, err := detect.Load(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Features(), detect.PaperFeatures()) {
				t.Fatalf("loaded Features() %v", l.Features())
			}
			for i := range min(te.Len(), 50) {
				if _, p := m.Predict(te.X[i]); p != func() [detect.NumClasses]float64 { _, q := l.Predict(te.X[i]); return q }() {
					t.Fatalf("row %d: loaded model predicts differently", i)
				}
			}
		})
	}
}

// TestLoadRefusesSplitOnUnusedFeature: a tree or forest whose file claims
// not to use a feature it splits on is refused.
func TestLoadRefusesSplitOnUnusedFeature(t *testing.T) {
	for _, kind := range []string{"tree", "forest"} {
		var buf bytes.Buffer
		m := trainKind(t, kind)
		if err := m.Save(&buf); err != nil {
			t.Fatal(err)
		}
		// Drop from "uses" one feature the classifier splits on.
		used := -1
		for _, f := range splitFeatures(t, m) {
			if f >= 0 {
				used = int(f)
				break
			}
		}
		if used < 0 {
			t.Fatalf("%s has no split", kind)
		}
		var keep []string
		for _, n := range m.Features() {
			if n != access.FeatureNames[used] {
				keep = append(keep, `"`+n+`"`)
			}
		}
		file := strings.Replace(buf.String(), `"uses":["`+strings.Join(m.Features(), `","`)+`"]`, `"uses":[`+strings.Join(keep, ",")+`]`, 1)
		if file == buf.String() {
			t.Fatal("test did not change the file")
		}
		if _, err := detect.Load(strings.NewReader(file)); !errors.Is(err, detect.ErrModel) {
			t.Errorf("%s splitting on unused %s: Load: %v, want ErrModel", kind, access.FeatureNames[used], err)
		}
	}
}

func TestTrainRejectsFeatureOptions(t *testing.T) {
	tr, _, _ := sets(t)
	for _, tt := range []struct {
		name string
		opt  detect.TrainOptions
		want error
	}{
		{"unknown feature", detect.TrainOptions{Features: []string{"file_handles", "colour"}}, detect.ErrFeatures},
		{"repeated feature", detect.TrainOptions{Features: []string{"req_avg", "req_avg"}}, detect.ErrOptions},
		{"empty features", detect.TrainOptions{Features: []string{}}, detect.ErrOptions},
		{"mtry above features", detect.TrainOptions{Features: []string{"req_avg", "offset_dist"}, Mtry: 3, Trees: 2}, detect.ErrOptions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Train("forest", tr.X[:100], tr.Y[:100], tt.opt, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, tt.want) {
				t.Errorf("Train: %v, want %v", err, tt.want)
			}
		})
	}
	// The default mtry (3) shrinks to fit fewer features.
	m, err := Train("forest", tr.X, tr.Y, detect.TrainOptions{Features: []string{"offset_dist", "proc_offset_dist"}, Trees: 4}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Info().Options.Mtry != 2 || !slices.Equal(m.Features(), []string{"offset_dist", "proc_offset_dist"}) {
		t.Errorf("mtry %d, features %v", m.Info().Options.Mtry, m.Features())
	}
}
