package detect_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Train a pruned tree on a synthetic grid, evaluate it on a held-out split
// and round-trip it through a model file.
func ExampleTrain() {
	rng := rand.New(rand.NewPCG(1, 0))
	all, err := detect.Synthetic(workload.Grid(false), detect.SyntheticOptions{PerScenario: 7, MaxRequests: 256}, rng)
	if err != nil {
		panic(err)
	}
	train, test, _ := detect.Split(all, 0.7, rng)
	m, err := detect.Train("tree", train.X, train.Y, detect.TrainOptions{}, rng)
	if err != nil {
		panic(err)
	}
	r := detect.Evaluate(m, test.X, test.Y)
	fmt.Printf("%s: %d test rows, accuracy %.3f, kappa %.3f\n", m.Kind(), r.N, r.Accuracy, r.Kappa)

	var file bytes.Buffer
	_ = m.Save(&file)
	loaded, err := detect.Load(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(loaded.Kind(), loaded.Info().Rows)
	// Output:
	// tree: 303 test rows, accuracy 1.000, kappa 1.000
	// tree 705
}

// Detect the pattern of one interval with the embedded model.
func ExampleModel_Detect() {
	obs := access.Observation{
		Requests: 1024, Bytes: 1024 * 32 << 10, Op: rw.Write,
		FileHandles: 32, // one file per process
		ReqAvg:      32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10,
		OffsetDist: 32 << 10,
	}
	class, probs := detect.Default().Detect(obs)
	fmt.Println(class, obs.Op, probs[class.Index()] > 0.5)
	// Output: FPP write true
}

// Metrics from a confusion matrix (rows: true class, columns: detected).
func ExampleReportFromConfusion() {
	r := detect.ReportFromConfusion([3][3]int{{50, 0, 0}, {0, 48, 2}, {0, 0, 50}})
	fmt.Printf("accuracy %.4f kappa %.4f SC sensitivity %.2f SS specificity %.2f\n",
		r.Accuracy, r.Kappa, r.Sensitivity[1], r.Specificity[2])
	// Output: accuracy 0.9867 kappa 0.9800 SC sensitivity 0.96 SS specificity 0.98
}

// Smooth a node's detections over consecutive intervals: one atypical
// interval does not flip the pattern.
func ExampleSmoother() {
	s, _ := detect.NewSmoother(0.4)
	strided := [3]float64{0, 0.05, 0.95}
	contiguous := [3]float64{0, 0.95, 0.05}
	for _, p := range [][3]float64{strided, strided, contiguous, strided} {
		c, _ := s.Update(7, p) // node 7's probabilities, as Model.Detect returns them
		fmt.Print(c, " ")
	}
	fmt.Println()
	// Output: SS SS SS SS
}
