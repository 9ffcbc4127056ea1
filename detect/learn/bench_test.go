package learn

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/adaptio/adaptio/detect"
)

// benchSet is the synthetic grid at the papers' size: 40 rows from each of
// 1,008 experiments (40,320 rows), generated once.
var benchSet = sync.OnceValue(func() Set {
	s, err := LoadSet(SyntheticDir, SetOptions{PerExperiment: 40}, 1)
	if err != nil {
		panic(err)
	}
	return s
})

func benchTrain(b *testing.B, kind string, opt detect.TrainOptions) {
	benchTrainOn(b, benchSet(), kind, opt)
}

func benchTrainOn(b *testing.B, s Set, kind string, opt detect.TrainOptions) {
	b.ResetTimer()
	cpu0 := processCPU()
	n := 0
	for b.Loop() {
		if _, err := Train(kind, s.X, s.Y, opt, rand.New(rand.NewPCG(uint64(n), 1))); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if cpu := processCPU(); cpu0 >= 0 && n > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(n)/1e9, "cpu-s/op")
	}
	b.ReportMetric(float64(s.Len()), "rows")
}

// Targets on 2 cores with ~40,000 rows: tree <= 0.5 s, forest <= 20 s, network <= 10 s.
func BenchmarkTrainTree(b *testing.B)   { benchTrain(b, "tree", detect.TrainOptions{}) }
func BenchmarkTrainForest(b *testing.B) { benchTrain(b, "forest", detect.TrainOptions{}) }
func BenchmarkTrainMLP(b *testing.B)    { benchTrain(b, "mlp", detect.TrainOptions{}) }

// BenchmarkPreprocessFit is the Yeo-Johnson fit shared by all kinds.
func BenchmarkPreprocessFit(b *testing.B) {
	s := benchSet()
	for b.Loop() {
		if _, err := FitPreprocess(s.X); err != nil {
			b.Fatal(err)
		}
	}
}

var benchModels sync.Map

func benchPredict(b *testing.B, kind string) {
	s := benchSet()
	var m *detect.Model
	if v, ok := benchModels.Load(kind); ok {
		m = v.(*detect.Model)
	} else {
		var err error
		m, err = Train(kind, s.X, s.Y, detect.TrainOptions{}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			b.Fatal(err)
		}
		benchModels.Store(kind, m)
	}
	loopPredict(b, m, s)
}

// loopPredict predicts the rows in turn and reports CPU ns per prediction
// (cpu-ns/op) beside the wall time.
func loopPredict(b *testing.B, m *detect.Model, s Set) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	i, n := 0, 0
	for b.Loop() {
		m.Predict(s.X[i])
		i++
		n++
		if i == len(s.X) {
			i = 0
		}
	}
	if cpu := processCPU(); cpu0 >= 0 && n > 0 {
		b.ReportMetric(float64(cpu-cpu0)/float64(n), "cpu-ns/op")
	}
}

// Targets per prediction: tree <= 100 ns, 500-tree forest <= 20 µs, network <= 300 ns.
func BenchmarkPredictTree(b *testing.B)   { benchPredict(b, "tree") }
func BenchmarkPredictForest(b *testing.B) { benchPredict(b, "forest") }
func BenchmarkPredictMLP(b *testing.B)    { benchPredict(b, "mlp") }

// BenchmarkPredictDefault measures the embedded model.
func BenchmarkPredictDefault(b *testing.B) {
	s := benchSet()
	loopPredict(b, detect.Default(), s)
}

// gridSet is the simulator's dataset as the papers sample it (TWINS
// experiments, 40 centre rows each), found by walking up from the working
// directory to data/grid, or nil when absent.
var gridSet = sync.OnceValue(func() *Set {
	dir, err := os.Getwd()
	if err != nil {
		return nil
	}
	for {
		p := filepath.Join(dir, "data", "grid")
		if _, err := os.Stat(filepath.Join(p, "READY")); err == nil {
			s, err := LoadSet(p, SetOptions{PerExperiment: 40, Schedulers: []string{"twins"}}, 1)
			if err != nil {
				return nil
			}
			return &s
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil
		}
		dir = up
	}
})

func gridOrSkip(b *testing.B) Set {
	s := gridSet()
	if s == nil {
		b.Skip("simulator dataset data/grid (with READY) not found above the working directory; run adaptio sim grid")
	}
	return *s
}

func BenchmarkTrainGridTree(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "tree", detect.TrainOptions{})
}
func BenchmarkTrainGridForest(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "forest", detect.TrainOptions{})
}
func BenchmarkTrainGridMLP(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "mlp", detect.TrainOptions{})
}

// The same on the papers' five features, for comparison.
func BenchmarkTrainGridTreePapers(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "tree", detect.TrainOptions{Features: detect.PaperFeatures()})
}
func BenchmarkTrainGridForestPapers(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "forest", detect.TrainOptions{Features: detect.PaperFeatures()})
}
func BenchmarkTrainGridMLPPapers(b *testing.B) {
	benchTrainOn(b, gridOrSkip(b), "mlp", detect.TrainOptions{Features: detect.PaperFeatures()})
}

func benchPredictOn(b *testing.B, s Set, kind string) {
	benchPredictOpt(b, s, kind, detect.TrainOptions{})
}

func benchPredictOpt(b *testing.B, s Set, kind string, opt detect.TrainOptions) {
	m, err := Train(kind, s.X, s.Y, opt, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	loopPredict(b, m, s)
}

func BenchmarkPredictGridTree(b *testing.B)   { benchPredictOn(b, gridOrSkip(b), "tree") }
func BenchmarkPredictGridForest(b *testing.B) { benchPredictOn(b, gridOrSkip(b), "forest") }
func BenchmarkPredictGridMLP(b *testing.B)    { benchPredictOn(b, gridOrSkip(b), "mlp") }

func BenchmarkPredictGridTreePapers(b *testing.B) {
	benchPredictOpt(b, gridOrSkip(b), "tree", detect.TrainOptions{Features: detect.PaperFeatures()})
}
func BenchmarkPredictGridForestPapers(b *testing.B) {
	benchPredictOpt(b, gridOrSkip(b), "forest", detect.TrainOptions{Features: detect.PaperFeatures()})
}
func BenchmarkPredictGridMLPPapers(b *testing.B) {
	benchPredictOpt(b, gridOrSkip(b), "mlp", detect.TrainOptions{Features: detect.PaperFeatures()})
}
