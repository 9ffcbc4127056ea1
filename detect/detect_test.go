package detect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/access"
)

// TestDefault checks the embedded model decodes; package detect/learn's
// TestDefaultAccuracy, TestDefaultSmallJobs and TestDefaultLabelsRealRuns
// check what it detects.
func TestDefault(t *testing.T) {
	if err := DefaultError(); err != nil {
		t.Fatalf("embedded model: %v (regenerate detect/default_model.json with adaptio detect train)", err)
	}
	m := Default()
	if m.Kind() != "tree" {
		t.Errorf("Default().Kind() = %q, want tree", m.Kind())
	}
	if n := len(DefaultModelJSON()); n >= 2<<20 {
		t.Errorf("embedded model is %d bytes, want < 2 MiB", n)
	}
}

// TestLoadRefuses alters the embedded model file (a tree) one way at a time.
func TestLoadRefuses(t *testing.T) {
	good := string(DefaultModelJSON())
	for _, tt := range []struct {
		name string
		file string
		want error
	}{
		{"other version", strings.Replace(good, fmt.Sprintf(`"version":%d`, FormatVersion), fmt.Sprintf(`"version":%d`, FormatVersion+1), 1), ErrVersion},
		{"old version", strings.Replace(good, fmt.Sprintf(`"version":%d`, FormatVersion), `"version":1`, 1), ErrVersion},
		{"unknown used feature", strings.Replace(good, `"uses":["file_handles"`, `"uses":["file_count"`, 1), ErrFeatures},
		{"repeated used feature", strings.Replace(good, `"uses":["file_handles"`, `"uses":["req_avg"`, 1), ErrModel},
		{"empty used features", regexp.MustCompile(`"uses":\[[^]]*\]`).ReplaceAllString(good, `"uses":[]`), ErrModel},
		{"no used features", regexp.MustCompile(`"uses":\[[^]]*\],`).ReplaceAllString(good, ``), ErrModel},
		{"renamed feature", strings.Replace(good, `"offset_dist"`, `"offset_distance"`, 1), ErrFeatures},
		{"missing feature", strings.Replace(good, `,"offset_dist"`, ``, 1), ErrFeatures},
		{"other classes", strings.Replace(good, `"SS"]`, `"S"]`, 1), ErrFeatures},
		{"unknown kind", strings.Replace(good, `"kind":"tree"`, `"kind":"svm"`, 1), ErrUnknownKind},
		{"other format", strings.Replace(good, FormatName, "something-else", 1), ErrModel},
		{"not json", "hello", ErrModel},
		{"cyclic tree", strings.Replace(good, `"kid":[1,`, `"kid":[0,`, 1), ErrModel},
		{"bad scale", strings.Replace(good, `"scale":[`, `"scale":[0,`, 1), ErrModel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.file == good {
				t.Fatalf("test case did not change the file")
			}
			_, err := Load(strings.NewReader(tt.file))
			if !errors.Is(err, tt.want) {
				t.Errorf("Load: %v, want %v", err, tt.want)
			}
		})
	}
}

// fakeClassifier is a Classifier of a kind without a decoder.
type fakeClassifier struct{}

func (fakeClassifier) Kind() string { return "svm" }
func (fakeClassifier) Probs([access.NumFeatures]float64) [NumClasses]float64 {
	return [NumClasses]float64{1, 0, 0}
}

func TestNewModelRefuses(t *testing.T) {
	def := Default()
	for _, tt := range []struct {
		name string
		clf  Classifier
		pre  Preprocess
		info TrainInfo
		want error
	}{
		{"unknown kind", fakeClassifier{}, def.Preprocess(), def.Info(), ErrUnknownKind},
		{"zero preprocessing", def.Classifier(), Preprocess{}, def.Info(), ErrModel},
		{"unknown feature", def.Classifier(), def.Preprocess(), TrainInfo{Options: TrainOptions{Features: []string{"colour"}}}, ErrFeatures},
		{"empty features", def.Classifier(), def.Preprocess(), TrainInfo{Options: TrainOptions{Features: []string{}}}, ErrModel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewModel(tt.clf, tt.pre, tt.info); !errors.Is(err, tt.want) {
				t.Errorf("NewModel: %v, want %v", err, tt.want)
			}
		})
	}
	m, err := NewModel(def.Classifier(), def.Preprocess(), def.Info())
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := def.Save(&a); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("a model assembled from Default's parts saves differently")
	}
}

func TestSmoother(t *testing.T) {
	if _, err := NewSmoother(0); !errors.Is(err, ErrOptions) {
		t.Errorf("NewSmoother(0): %v, want ErrOptions", err)
	}
	s, err := NewSmoother(0.3)
	if err != nil {
		t.Fatal(err)
	}
	ss := [3]float64{0, 0.1, 0.9}
	sc := [3]float64{0, 0.9, 0.1}
	steps := []struct {
		node int
		p    [3]float64
		want access.Class
	}{
		{0, ss, access.SS},
		{1, sc, access.SC}, // nodes are independent
		{0, ss, access.SS},
		{0, sc, access.SS}, // one atypical interval does not flip node 0
		{0, [3]float64{}, access.Unknown},
		{0, sc, access.SC}, // two in a row do (0.3 weight)
		{1, sc, access.SC},
	}
	for i, st := range steps {
		if got, _ := s.Update(st.node, st.p); got != st.want {
			t.Errorf("step %d: Update = %v, want %v", i, got, st.want)
		}
	}
	s.Reset(0)
	if got, p := s.Update(0, ss); got != access.SS || p != ss {
		t.Errorf("after Reset: %v %v, want SS %v", got, p, ss)
	}
}

func TestYeoJohnsonInverseAndMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		l := -2 + 5*rng.Float64()
		x := (rng.Float64() - 0.5) * math.Pow(10, 3*rng.Float64())
		y := x + math.Abs(x)*1e-3 + 1e-3
		tx, ty := YeoJohnson(x, l), YeoJohnson(y, l)
		if !(tx < ty) || YeoJohnson(x*1e6, -5) > YeoJohnson(y*1e6, -5) {
			t.Fatalf("YeoJohnson(%v, %v) = %v not < YeoJohnson(%v) = %v", x, l, tx, y, ty)
		}
		if back := YeoJohnsonInverse(tx, l); math.Abs(back-x) > 1e-6*math.Max(1, math.Abs(x)) {
			t.Fatalf("inverse(YeoJohnson(%v, %v)) = %v", x, l, back)
		}
	}
}

func TestFeatureSets(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"papers", []string{"file_handles", "req_avg", "req_min", "req_max", "offset_dist"}},
		{"all", []string{"file_handles", "req_avg", "req_min", "req_max", "offset_dist", "proc_offset_dist", "file_sharers", "proc_dist_ratio"}},
	} {
		got, err := FeatureSet(tt.name)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("FeatureSet(%q) = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := FeatureSet("some"); !errors.Is(err, ErrOptions) {
		t.Errorf("FeatureSet(some): %v, want ErrOptions", err)
	}
}
