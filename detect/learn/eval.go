package learn

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
)

// Report holds a classifier's results on a labelled set. Rates are in
// [0, 1]; per-class figures are one-vs-rest, in access.Classes order.
type Report struct {
	N           int                                       `json:"n"`         // rows evaluated
	Skipped     int                                       `json:"skipped"`   // rows without a valid label
	Confusion   [detect.NumClasses][detect.NumClasses]int `json:"confusion"` // [true class][predicted class]
	Accuracy    float64                                   `json:"accuracy"`
	Kappa       float64                                   `json:"kappa"` // Cohen's kappa
	Sensitivity [detect.NumClasses]float64                `json:"sensitivity"`
	Specificity [detect.NumClasses]float64                `json:"specificity"`
	PredictTime time.Duration                             `json:"predict_ns"`         // wall time of all predictions
	PerRow      time.Duration                             `json:"predict_per_row_ns"` // PredictTime / N
}

// Evaluate predicts every row of X with m and compares with y. Rows whose
// label is not FPP, SC or SS are skipped (counted in Skipped). The timing
// fields are wall-clock measurements; every other field is deterministic.
func Evaluate(m *detect.Model, X [][access.NumFeatures]float64, y []access.Class) Report {
	var r Report
	pred := make([]access.Class, len(X))
	start := time.Now()
	for i := range X {
		pred[i], _ = m.Predict(X[i])
	}
	r.PredictTime = time.Since(start)
	for i := range X {
		if i >= len(y) || y[i].Index() < 0 {
			r.Skipped++
			continue
		}
		r.Confusion[y[i].Index()][pred[i].Index()]++
	}
	r.computeRates()
	if r.N > 0 {
		r.PerRow = r.PredictTime / time.Duration(len(X))
	}
	return r
}

// ReportFromConfusion computes the rates of a confusion matrix
// ([true][predicted], access.Classes order); timing fields are zero.
func ReportFromConfusion(c [detect.NumClasses][detect.NumClasses]int) Report {
	r := Report{Confusion: c}
	r.computeRates()
	return r
}

func (r *Report) computeRates() {
	var rowSum, colSum [detect.NumClasses]int
	n, agree := 0, 0
	for i := range detect.NumClasses {
		for j := range detect.NumClasses {
			v := r.Confusion[i][j]
			n += v
			rowSum[i] += v
			colSum[j] += v
			if i == j {
				agree += v
			}
		}
	}
	r.N = n
	if n == 0 {
		return
	}
	fn := float64(n)
	r.Accuracy = float64(agree) / fn
	pe := 0.0
	for k := range detect.NumClasses {
		pe += float64(rowSum[k]) * float64(colSum[k]) / (fn * fn)
	}
	if pe < 1 {
		r.Kappa = (r.Accuracy - pe) / (1 - pe)
	} else {
		r.Kappa = 1 // one class only, all agreed
		if r.Accuracy < 1 {
			r.Kappa = 0
		}
	}
	for k := range detect.NumClasses {
		tp := r.Confusion[k][k]
		if rowSum[k] > 0 {
			r.Sensitivity[k] = float64(tp) / float64(rowSum[k])
		}
		neg := n - rowSum[k]
		tn := neg - (colSum[k] - tp)
		if neg > 0 {
			r.Specificity[k] = float64(tn) / float64(neg)
		}
	}
}

// Errors returns the number of misclassified rows.
func (r Report) Errors() int {
	e := r.N
	for k := range detect.NumClasses {
		e -= r.Confusion[k][k]
	}
	return e
}

// Write prints the report as text: the confusion matrix (rows: true class,
// columns: detected class), accuracy, kappa, per-class sensitivity and
// specificity, and the prediction time.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rows %d (skipped %d), errors %d\n", r.N, r.Skipped, r.Errors())
	fmt.Fprintf(&b, "%-12s", "true\\detected")
	for _, c := range access.Classes {
		fmt.Fprintf(&b, "%10s", c)
	}
	b.WriteString("\n")
	for i, c := range access.Classes {
		fmt.Fprintf(&b, "%-13s", c)
		for j := range detect.NumClasses {
			fmt.Fprintf(&b, "%10d", r.Confusion[i][j])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "accuracy %.4f%%  kappa %.5f\n", 100*r.Accuracy, r.Kappa)
	fmt.Fprintf(&b, "%-12s %11s %11s\n", "class", "sensitivity", "specificity")
	for k, c := range access.Classes {
		fmt.Fprintf(&b, "%-12s %11.5f %11.5f\n", c, r.Sensitivity[k], r.Specificity[k])
	}
	if r.PredictTime > 0 {
		fmt.Fprintf(&b, "predict: %v total, %v per row\n", r.PredictTime, r.PerRow)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EvaluateSmoothed is Evaluate with a detect.Smoother of weight w run along each
// sequence of s (rows with equal Seq, in row order), as a Council would see
// an I/O node's consecutive intervals.
func EvaluateSmoothed(m *detect.Model, s Set, w float64) (Report, error) {
	sm, err := detect.NewSmoother(w)
	if err != nil {
		return Report{}, err
	}
	var r Report
	for i, x := range s.X {
		_, p := m.Predict(x)
		seq := 0
		if i < len(s.Seq) {
			seq = int(s.Seq[i])
		}
		c, _ := sm.Update(seq, p)
		if s.Y[i].Index() < 0 {
			r.Skipped++
			continue
		}
		r.Confusion[s.Y[i].Index()][c.Index()]++
	}
	r.computeRates()
	return r, nil
}
