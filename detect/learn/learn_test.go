package learn

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// smallOpts keeps training in tests fast: a 60-tree forest, the full
// network schedule.
var smallOpts = detect.TrainOptions{Trees: 60, Seed: 7}

// testSets returns a small deterministic synthetic training split, test
// split and validation set (64/128 KiB requests), built once.
var testSets = sync.OnceValues(func() ([3]Set, error) {
	rng := rand.New(rand.NewPCG(11, 12))
	all, err := Synthetic(workload.Grid(false), SyntheticOptions{PerScenario: 20, MaxRequests: 512}, rng)
	if err != nil {
		return [3]Set{}, err
	}
	tr, te, err := Split(all, 0.7, rng)
	if err != nil {
		return [3]Set{}, err
	}
	v, err := Synthetic(workload.Grid(true), SyntheticOptions{PerScenario: 5, MaxRequests: 512}, rng)
	return [3]Set{tr, te, v}, err
})

func sets(t testing.TB) (train, test, val Set) {
	t.Helper()
	s, err := testSets()
	if err != nil {
		t.Fatal(err)
	}
	return s[0], s[1], s[2]
}

var trained sync.Map // kind -> *detect.Model

func trainKind(t testing.TB, kind string) *detect.Model {
	t.Helper()
	if m, ok := trained.Load(kind); ok {
		return m.(*detect.Model)
	}
	tr, _, _ := sets(t)
	m, err := Train(kind, tr.X, tr.Y, smallOpts, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatalf("Train(%s): %v", kind, err)
	}
	trained.Store(kind, m)
	return m
}

// Every kind package detect decodes can be trained, and no other.
func TestKindsMatchDecoders(t *testing.T) {
	for _, k := range detect.Kinds() {
		if trainers[k] == nil {
			t.Errorf("kind %q has no trainer", k)
		}
	}
	if len(trainers) != len(detect.Kinds()) {
		t.Errorf("%d trainers for the %d kinds %v", len(trainers), len(detect.Kinds()), detect.Kinds())
	}
}

func TestTrainAccuracy(t *testing.T) {
	for _, kind := range detect.Kinds() {
		t.Run(kind, func(t *testing.T) {
			_, te, val := sets(t)
			m := trainKind(t, kind)
			if m.Kind() != kind {
				t.Errorf("Kind() = %q, want %q", m.Kind(), kind)
			}
			for _, c := range []struct {
				name string
				s    Set
				min  float64
			}{{"test", te, 0.997}, {"validation", val, 0.99}} {
				r := Evaluate(m, c.s.X, c.s.Y)
				if r.N != c.s.Len() || r.Accuracy < c.min {
					t.Errorf("%s: accuracy %.4f on %d rows (confusion %v), want >= %v on %d", c.name, r.Accuracy, r.N, r.Confusion, c.min, c.s.Len())
				}
			}
		})
	}
}

func TestPredictProbabilities(t *testing.T) {
	_, te, _ := sets(t)
	for _, kind := range detect.Kinds() {
		m := trainKind(t, kind)
		for i, x := range te.X[:200] {
			c, p := m.Predict(x)
			s := p[0] + p[1] + p[2]
			if math.Abs(s-1) > 1e-9 || p[c.Index()] < max(p[0], p[1], p[2]) {
				t.Fatalf("%s row %d: class %v probs %v, want the argmax of probabilities summing to 1", kind, i, c, p)
			}
		}
	}
}

func TestPredictDoesNotAllocate(t *testing.T) {
	_, te, _ := sets(t)
	for _, kind := range detect.Kinds() {
		m := trainKind(t, kind)
		x := te.X[0]
		if n := testing.AllocsPerRun(100, func() { m.Predict(x) }); n != 0 {
			t.Errorf("%s: Predict allocates %v times, want 0", kind, n)
		}
	}
}

func TestDetect(t *testing.T) {
	m := trainKind(t, "tree")
	if c, p := m.Detect(access.Observation{}); c != access.Unknown || p != [3]float64{} {
		t.Errorf("Detect(idle) = %v %v, want unknown and zero probabilities", c, p)
	}
	// A busy node with one shared file accessed in adjacent 32 KiB pieces.
	o := access.Observation{Requests: 512, Bytes: 512 << 15, Op: rw.Read, FileHandles: 1,
		ReqAvg: 32 << 10, ReqMin: 32 << 10, ReqMax: 32 << 10, OffsetDist: 40 * (32 << 10)}
	if c, _ := m.Detect(o); c != access.SS {
		t.Errorf("Detect(shared strided) = %v, want SS", c)
	}
}

func TestYeoJohnsonRecoversLambda(t *testing.T) {
	for _, tt := range []struct {
		name       string
		lambda     float64
		mean, sd   float64
		wantWithin float64
	}{
		{"log-like", 0, 3, 1, 0.05},
		{"sqrt-like", 0.5, 4, 1, 0.05},
		{"negative", -0.4, 1, 0.3, 0.05},
		{"identity", 1, 0, 2, 0.05},
		{"square", 2, 10, 2, 0.1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(tt.name))))
			xs := make([]float64, 20000)
			for i := range xs {
				z := tt.mean + tt.sd*rng.NormFloat64()
				if tt.lambda < 0 {
					z = math.Min(z, 0.95/-tt.lambda) // inside the transform's range
				}
				xs[i] = detect.YeoJohnsonInverse(z, tt.lambda)
			}
			got := FitYeoJohnson(xs)
			if math.Abs(got-tt.lambda) > tt.wantWithin {
				t.Errorf("FitYeoJohnson = %.4f, want %.2f +- %.2f", got, tt.lambda, tt.wantWithin)
			}
			// The fitted lambda maximises the likelihood locally.
			ll := YeoJohnsonLogLik(xs, got)
			for _, d := range []float64{-0.01, 0.01} {
				if v := YeoJohnsonLogLik(xs, got+d); v > ll+1e-6 {
					t.Errorf("loglik(%.4f) = %v > loglik(fit %.4f) = %v", got+d, v, got, ll)
				}
			}
		})
	}
}

func TestFitPreprocessStandardises(t *testing.T) {
	tr, _, _ := sets(t)
	p, err := FitPreprocess(tr.X)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq [access.NumFeatures]float64
	for _, x := range tr.X {
		z := p.Apply(x)
		for j, v := range z {
			sum[j] += v
			sq[j] += v * v
		}
	}
	n := float64(len(tr.X))
	for j := range access.NumFeatures {
		mean := sum[j] / n
		sd := math.Sqrt((sq[j] - n*mean*mean) / (n - 1))
		if math.Abs(mean) > 1e-6 || math.Abs(sd-1) > 1e-6 {
			t.Errorf("%s: transformed mean %v sd %v, want 0 and 1", access.FeatureNames[j], mean, sd)
		}
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	_, te, val := sets(t)
	for _, kind := range detect.Kinds() {
		t.Run(kind, func(t *testing.T) {
			m := trainKind(t, kind)
			var a bytes.Buffer
			if err := m.Save(&a); err != nil {
				t.Fatal(err)
			}
			m2, err := detect.Load(bytes.NewReader(a.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []Set{te, val} {
				for i, x := range s.X {
					c1, p1 := m.Predict(x)
					c2, p2 := m2.Predict(x)
					if c1 != c2 || p1 != p2 {
						t.Fatalf("row %d: loaded model predicts %v %v, original %v %v", i, c2, p2, c1, p1)
					}
				}
			}
			var b bytes.Buffer
			if err := m2.Save(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("saving a loaded model changed the file")
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	tr, _, _ := sets(t)
	save := func(kind string, workers int) []byte {
		opt := smallOpts
		opt.Workers = workers
		if kind == "mlp" {
			opt.Epochs = 3
		}
		m, err := Train(kind, tr.X, tr.Y, opt, rand.New(rand.NewPCG(9, 9)))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := m.Save(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, kind := range detect.Kinds() {
		a, b := save(kind, 1), save(kind, 3)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: same seed, different model files (workers 1 vs 3)", kind)
		}
	}
	// A different seed changes the randomised models.
	m1 := save("forest", 2)
	m2, err := Train("forest", tr.X, tr.Y, smallOpts, rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = m2.Save(&b)
	if bytes.Equal(m1, b.Bytes()) {
		t.Errorf("forest: different seeds gave identical files")
	}
}

func TestTrainRejects(t *testing.T) {
	tr, _, _ := sets(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tt := range []struct {
		name string
		kind string
		X    [][access.NumFeatures]float64
		y    []access.Class
		opt  detect.TrainOptions
		want error
	}{
		{"unknown kind", "svm", tr.X, tr.Y, detect.TrainOptions{}, detect.ErrUnknownKind},
		{"length mismatch", "tree", tr.X, tr.Y[:10], detect.TrainOptions{}, detect.ErrData},
		{"unknown label", "tree", tr.X[:3], []access.Class{access.FPP, access.Unknown, access.SS}, detect.TrainOptions{}, detect.ErrData},
		{"nan feature", "tree", [][access.NumFeatures]float64{{math.NaN()}, {1}}, []access.Class{access.FPP, access.SC}, detect.TrainOptions{}, detect.ErrData},
		{"mtry too large", "forest", tr.X, tr.Y, detect.TrainOptions{Mtry: access.NumFeatures + 1}, detect.ErrOptions},
		{"one fold", "tree", tr.X, tr.Y, detect.TrainOptions{Folds: 1}, detect.ErrOptions},
		{"hidden too wide", "mlp", tr.X, tr.Y, detect.TrainOptions{Hidden: 100}, detect.ErrOptions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Train(tt.kind, tt.X, tt.y, tt.opt, rng); !errors.Is(err, tt.want) {
				t.Errorf("Train: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTreePruning(t *testing.T) {
	// Noisy labels: pruning must give a smaller tree than growing fully.
	rng := rand.New(rand.NewPCG(21, 22))
	var X [][access.NumFeatures]float64
	var y []access.Class
	for range 3000 {
		var x [access.NumFeatures]float64
		for j := range x {
			x[j] = rng.Float64()
		}
		c := access.FPP
		if x[0] > 0.5 {
			c = access.SC
		}
		if rng.Float64() < 0.1 {
			c = access.Classes[rng.IntN(3)]
		}
		X, y = append(X, x), append(y, c)
	}
	leaves := func(folds int) int {
		m, err := Train("tree", X, y, detect.TrainOptions{Folds: folds}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		return m.Classifier().(*detect.Tree).Leaves()
	}
	full, pruned := leaves(-1), leaves(5)
	if pruned >= full/10 || pruned < 2 {
		t.Errorf("pruned tree has %d leaves (full %d), want 2 .. %d", pruned, full, full/10)
	}
}

func TestCCPAlphasAgainstPruneAt(t *testing.T) {
	// Between consecutive critical alphas the optimal subtree does not
	// change; just past each one it is strictly smaller.
	tr, _, _ := sets(t)
	rng := rand.New(rand.NewPCG(2, 3))
	y := append([]uint8(nil), make([]uint8, len(tr.Y))...)
	for i, c := range tr.Y {
		y[i] = uint8(c.Index())
		if rng.Float64() < 0.05 {
			y[i] = uint8(rng.IntN(3))
		}
	}
	c := newColumns(tr.X, y)
	w := make([]float64, len(y))
	for i := range w {
		w[i] = 1
	}
	nodes := newGrower(c, w, cartParams{feats: allFeats(), mtry: access.NumFeatures, minLeaf: 1, maxDepth: 40}, nil).grow()
	alphas := ccpAlphas(nodes)
	if len(alphas) < 3 {
		t.Fatalf("only %d alphas", len(alphas))
	}
	count := func(a float64) int {
		pruneAt(nodes, a)
		var f detect.Flat
		return appendTree(&f, nodes)
	}
	prev := count(0)
	for i := 1; i < len(alphas); i++ {
		before, after := count(alphas[i]*(1-1e-6)), count(alphas[i]*(1+1e-6))
		if before != prev && i > 1 {
			t.Errorf("alpha %d: %d leaves just below, %d just above previous alpha", i, before, prev)
		}
		if after >= before {
			t.Errorf("alpha %d = %v: %d leaves below, %d above, want fewer above", i, alphas[i], before, after)
		}
		prev = after
	}
	if prev != 1 {
		t.Errorf("past the last alpha the tree has %d leaves, want 1", prev)
	}
}

func TestEvaluateMetrics(t *testing.T) {
	// Hand-computed: 100 rows.
	c := [3][3]int{{30, 0, 0}, {0, 28, 2}, {0, 5, 35}}
	r := ReportFromConfusion(c)
	if r.N != 100 || r.Errors() != 7 {
		t.Fatalf("N %d errors %d, want 100 and 7", r.N, r.Errors())
	}
	pe := (30*30 + 30*33 + 40*37) / 10000.0
	want := Report{Confusion: c, N: 100, Accuracy: 0.93, Kappa: (0.93 - pe) / (1 - pe),
		Sensitivity: [3]float64{1, 28.0 / 30, 35.0 / 40},
		Specificity: [3]float64{1, 65.0 / 70, 58.0 / 60}}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"accuracy", r.Accuracy, want.Accuracy}, {"kappa", r.Kappa, want.Kappa},
		{"sens SC", r.Sensitivity[1], want.Sensitivity[1]}, {"sens SS", r.Sensitivity[2], want.Sensitivity[2]},
		{"spec SC", r.Specificity[1], want.Specificity[1]}, {"spec SS", r.Specificity[2], want.Specificity[2]},
		{"sens FPP", r.Sensitivity[0], 1}, {"spec FPP", r.Specificity[0], 1},
	} {
		if math.Abs(f.got-f.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil || !strings.Contains(b.String(), "accuracy 93.0000%") {
		t.Errorf("Write: %v\n%s", err, b.String())
	}
}

func TestCenterRows(t *testing.T) {
	sc := workload.Grid(false)[0]
	var rows []dataset.Row
	for _, run := range []dataset.Run{{Scenario: sc, Scheduler: "twins", Window: 1000}, {Scenario: sc, Scheduler: "fifo"}} {
		for s := range 10 {
			o := access.Observation{FileHandles: s, Requests: 1, Bytes: 1, Op: rw.Write, ReqAvg: 1, ReqMin: 1, ReqMax: 1}
			if s == 4 {
				o.Requests, o.Bytes = 0, 0 // idle: dropped
			}
			rows = append(rows, dataset.Row{Run: run, Second: s, Obs: o, Class: sc.Class()})
		}
	}
	s := CenterRows(rows, SetOptions{PerExperiment: 3})
	var got []float64
	for _, x := range s.X {
		got = append(got, x[0])
	}
	// Non-idle seconds 0..3,5..9 (9 rows): the centre 3 are rows 3..5 -> seconds 3, 5, 6.
	want := []float64{3, 5, 6, 3, 5, 6}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] || s.Y[i] != sc.Class() {
			t.Fatalf("got %v (classes %v), want %v", got, s.Y, want)
		}
	}
	if n := CenterRows(rows, SetOptions{}).Len(); n != 18 {
		t.Errorf("CenterRows(all) has %d rows, want 18", n)
	}
	if n := CenterRows(rows, SetOptions{Schedulers: []string{"fifo"}}).Len(); n != 9 {
		t.Errorf("CenterRows(fifo) has %d rows, want 9", n)
	}
	// A second repetition of the grid is an experiment of its own: its
	// centre rows are kept beside the first's.
	again := slices.Clone(rows)
	for i := range again {
		again[i].Rep = 1
	}
	if n := CenterRows(append(slices.Clone(rows), again...), SetOptions{PerExperiment: 3}).Len(); n != 12 {
		t.Errorf("CenterRows of two repetitions has %d rows, want 2 x 2 experiments x 3", n)
	}
}

func TestSplitStratified(t *testing.T) {
	tr, te, _ := sets(t)
	all := tr.Len() + te.Len()
	for k, n := range tr.Counts() {
		m := te.Counts()[k]
		if got := float64(n) / float64(n+m); math.Abs(got-0.7) > 0.001 {
			t.Errorf("class %v: train share %.4f, want 0.7", access.Classes[k], got)
		}
	}
	if all != 144*20 {
		t.Errorf("%d rows, want %d", all, 144*20)
	}
}

// The embedded default model (detect.Default; TestDefault there checks it
// decodes) labels the synthetic test and validation sets.
func TestDefaultAccuracy(t *testing.T) {
	_, te, val := sets(t)
	for _, s := range []Set{te, val} {
		if r := Evaluate(detect.Default(), s.X, s.Y); r.Accuracy < 0.99 {
			t.Errorf("default model: accuracy %.4f on a synthetic set (confusion %v)", r.Accuracy, r.Confusion)
		}
	}
}

// The default model labels small jobs as IOR runs them (4 to 64
// processes, 64 and 128 KiB requests, sizes it was not trained on): 8
// strided processes of 64 KiB have a per-process distance of 512 KiB, which
// a threshold learnt from 128 processes or more takes for contiguous access.
func TestDefaultSmallJobs(t *testing.T) {
	s, err := LoadSet(SyntheticSmallValidationDir, SetOptions{PerExperiment: 3}, 7)
	if err != nil {
		t.Fatal(err)
	}
	r := Evaluate(detect.Default(), s.X, s.Y)
	if r.Accuracy < 0.99 {
		t.Errorf("default model on small jobs: accuracy %.4f (confusion %v)", r.Accuracy, r.Confusion)
	}
	// And the eight strided processes of 32 KiB that IOR runs by default.
	var acc access.Accumulator
	for seg := range 64 {
		for p := range 8 {
			acc.Request(1, uint64(p), 1, int64(seg*8+p)*32<<10, 32<<10, rw.Write)
			acc.Done(32 << 10)
		}
	}
	if c, probs := detect.Default().Detect(acc.Close(0, 0, time.Second, 4, 0)); c != access.SS {
		t.Errorf("8 processes, 32 KiB 1D-strided: labelled %v (%v), want SS", c, probs)
	}
}

// Weight 1 is no smoothing: EvaluateSmoothed equals Evaluate.
func TestEvaluateSmoothedWeightOne(t *testing.T) {
	_, te, _ := sets(t)
	m := trainKind(t, "tree")
	r1, err := EvaluateSmoothed(m, te, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r2 := Evaluate(m, te.X, te.Y); r1.Confusion != r2.Confusion {
		t.Errorf("EvaluateSmoothed(w=1) confusion %v, Evaluate %v", r1.Confusion, r2.Confusion)
	}
	if _, err := EvaluateSmoothed(m, te, 0); !errors.Is(err, detect.ErrOptions) {
		t.Errorf("EvaluateSmoothed(w=0): %v, want ErrOptions", err)
	}
}

func TestLoadSetWeightRepeatsASource(t *testing.T) {
	one, err := LoadSet(SyntheticSmallValidationDir, SetOptions{PerExperiment: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	three, err := LoadSet(SyntheticSmallValidationDir+"*3", SetOptions{PerExperiment: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	n := one.Len()
	if three.Len() != 3*n {
		t.Fatalf("weight 3: %d rows, want 3 x %d", three.Len(), n)
	}
	seqs := map[int32]bool{}
	for k := range 3 {
		for r := range n {
			if three.X[k*n+r] != one.X[r] || three.Y[k*n+r] != one.Y[r] {
				t.Fatalf("copy %d row %d differs from the source", k, r)
			}
			seqs[three.Seq[k*n+r]] = true
		}
	}
	if len(seqs) <= n && n > 1 {
		t.Errorf("copies share their interval sequences (%d distinct for %d rows)", len(seqs), 3*n)
	}
	for _, bad := range []string{"synthetic*0", "synthetic*x", "synthetic*-2"} {
		if _, err := LoadSet(bad, SetOptions{PerExperiment: 1}, 1); !errors.Is(err, detect.ErrData) {
			t.Errorf("%s: %v, want ErrData", bad, err)
		}
	}
}

// The default model labels the node-seconds of real runs it was trained
// on (detect/realruns: IOR through adaptio mount and the real demo,
// labelled by their phases with adaptio eval labels --export), so a
// retraining that drops them shows here.
func TestDefaultLabelsRealRuns(t *testing.T) {
	for _, dir := range []string{"../realruns/ior-8ranks", "../realruns/ior-4ranks", "../realruns/ior-8ranks-loaded", "../realruns/ior-8ranks-hdd", "../realruns/demo"} {
		s, err := LoadSet(dir, SetOptions{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() < 50 {
			t.Fatalf("%s: %d rows, want the committed run's (>= 50)", dir, s.Len())
		}
		if r := Evaluate(detect.Default(), s.X, s.Y); r.Accuracy < 0.99 {
			t.Errorf("default model on %s: accuracy %.4f (confusion %v)", dir, r.Accuracy, r.Confusion)
		}
	}
}

// The last IOR rank writing its block of a shared file alone (4 ranks,
// MPI-IO shared contiguous: one process, one file handle, sequential
// requests) looks like a file per process in every feature of its
// interval but file_sharers, which remembers the file's other writers:
// the default model labels those seconds SC, and the same seconds with one
// sharer FPP.
func TestDefaultTellsALoneRankFromAFilePerProcess(t *testing.T) {
	s, err := LoadSet("../realruns/ior-4ranks", SetOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, lone := detect.Default(), 0
	for i, x := range s.X {
		if s.Y[i] != access.SC || x[access.FeatFileHandles] != 1 || x[access.FeatOffsetDist] > 2*x[access.FeatReqAvg] {
			continue
		}
		lone++
		if c, _ := m.Predict(x); c != access.SC {
			t.Errorf("row %d (a lone rank of a shared file, %v sharers): labelled %v, want SC", i, x[access.FeatSharers], c)
		}
		x[access.FeatSharers] = 1
		if c, _ := m.Predict(x); c != access.FPP {
			t.Errorf("row %d with one sharer: labelled %v, want FPP", i, c)
		}
	}
	if lone < 3 {
		t.Fatalf("%d lone-rank rows in the run, want >= 3", lone)
	}
}
