package learn_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/detect/learn"
	"github.com/adaptio/adaptio/workload"
)

// Train a pruned tree on a synthetic grid, evaluate it on a held-out split
// and round-trip it through a model file.
func ExampleTrain() {
	rng := rand.New(rand.NewPCG(1, 0))
	all, err := learn.Synthetic(workload.Grid(false), learn.SyntheticOptions{PerScenario: 7, MaxRequests: 256}, rng)
	if err != nil {
		panic(err)
	}
	train, test, _ := learn.Split(all, 0.7, rng)
	m, err := learn.Train("tree", train.X, train.Y, detect.TrainOptions{}, rng)
	if err != nil {
		panic(err)
	}
	r := learn.Evaluate(m, test.X, test.Y)
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

// Metrics from a confusion matrix (rows: true class, columns: detected).
func ExampleReportFromConfusion() {
	r := learn.ReportFromConfusion([3][3]int{{50, 0, 0}, {0, 48, 2}, {0, 0, 50}})
	fmt.Printf("accuracy %.4f kappa %.4f SC sensitivity %.2f SS specificity %.2f\n",
		r.Accuracy, r.Kappa, r.Sensitivity[1], r.Specificity[2])
	// Output: accuracy 0.9867 kappa 0.9800 SC sensitivity 0.96 SS specificity 0.98
}
