package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/detect/learn"
)

// newDetectCmd groups the access-pattern detection tools.
func newDetectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "detect",
		Short: "Train, evaluate and apply access-pattern detectors (FPP / SC / SS)",
		Long: fmt.Sprintf(`Access-pattern detection: classify an I/O node's per-interval metrics into
file-per-process (FPP), shared-contiguous (SC) or shared-1D-strided (SS) with a
decision tree, a random forest or the papers' neural network.

Features: the papers' five (file handles; request size average, minimum and maximum in
bytes; average offset distance in bytes between consecutive requests to the same file
handle) and ours: proc_offset_dist, the same distance between consecutive requests of
the same process to the same file handle (bytes); file_sharers, the processes that
accessed each file handle of the interval with its operation in the last %v (a mean
over the handles: 1 for files per process, more for a shared file even when one process
is left accessing it); and proc_dist_ratio, proc_offset_dist in request sizes (derived,
never measured). "train --features papers" restricts a model to the papers' five.

A data source (--data, --validation) is
  - a directory holding observations.csv in the simulator's dataset schema: a grid from
    "adaptio sim grid", or node-seconds of a real run labelled by its phases
    ("adaptio eval labels --export DIR");
  - "synthetic" (the papers' grid, 32/256 KiB) or "synthetic-validation" (64/128 KiB),
    "synthetic-small" or "synthetic-small-validation" (jobs of 4 to 64 processes, as IOR
    runs): sets generated from the workload patterns without the simulator;
  - a comma-separated list of these, joined (e.g. DIR/grid,synthetic-small,DIR/real).`, access.SharerMemory),
	}
	cmd.AddCommand(newDetectTrainCmd(), newDetectEvalCmd(), newDetectPredictCmd())
	return cmd
}

// detectTrainConfig is the configuration of "detect train".
type detectTrainConfig struct {
	Data          string
	Validation    string
	ValidationPer int
	Kind          string
	Out           string
	Seed          uint64
	PerExperiment int
	Schedulers    []string
	TrainFraction float64
	Smooth        float64
	FeatureSet    string // "all" (default when empty) or "papers"
	Opt           detect.TrainOptions
}

// detectSplit rebuilds the train/test split a model was trained on.
type detectSplit struct {
	data          string
	perExperiment int
	schedulers    []string
	trainFraction float64
	seed          uint64
}

func (s detectSplit) extra() map[string]string {
	return map[string]string{
		"data":           s.data,
		"per_experiment": strconv.Itoa(s.perExperiment),
		"schedulers":     strings.Join(s.schedulers, ","),
		"train_fraction": strconv.FormatFloat(s.trainFraction, 'g', -1, 64),
		"split_seed":     strconv.FormatUint(s.seed, 10),
	}
}

func (s detectSplit) load(stderr io.Writer) (all, train, test learn.Set, err error) {
	fmt.Fprintf(stderr, "detect: loading %s (%d rows from the centre of each experiment; schedulers %v)...\n", s.data, s.perExperiment, s.schedulers)
	all, err = learn.LoadSet(s.data, learn.SetOptions{PerExperiment: s.perExperiment, Schedulers: s.schedulers}, s.seed)
	if err != nil {
		return
	}
	train, test, err = learn.Split(all, s.trainFraction, rand.New(rand.NewPCG(s.seed, 0x5b1)))
	return
}

func newDetectTrainCmd() *cobra.Command {
	var cfg detectTrainConfig
	cmd := &cobra.Command{
		Use:   "train --data DIR --model tree|forest|mlp --out FILE",
		Short: "Train a detector on a dataset and write the model file",
		Long: `Train reads DIR/observations.csv, keeps --per-experiment labelled, non-idle rows from the
centre of each experiment (as the papers: 40 rows x 1,008 experiments), splits them
70/30 stratified by class (--train-fraction), fits Yeo-Johnson + centring + scaling and
the classifier on the training part (on --features), prints the confusion matrix, accuracy, kappa,
sensitivity and specificity on both parts (and on --validation DIR), the
training time, and writes the model as versioned JSON to --out.

The same --seed gives the same split and the same model file, byte for byte.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDetectTrain(cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Data, "data", "", "data source: a directory with observations.csv, synthetic, synthetic-small, or a comma-separated list (see adaptio detect --help; required)")
	f.StringVar(&cfg.Validation, "validation", "", "optional validation dataset directory, or \"synthetic-validation\"")
	f.IntVar(&cfg.ValidationPer, "validation-per-experiment", 40, "validation rows kept from the centre of each experiment (0: every labelled, non-idle row)")
	f.StringVar(&cfg.FeatureSet, "features", "all", "features the model uses: all (the papers' five plus proc_offset_dist, file_sharers and proc_dist_ratio) or papers (the papers' five)")
	f.StringVar(&cfg.Kind, "model", "tree", "classifier: tree (CART, cost-complexity pruned), forest (random forest) or mlp (the papers' network, 5 ReLU -> 5 ReLU -> 3 softmax on the used features)")
	f.StringVar(&cfg.Out, "out", "", "model file to write (required)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the split and of training")
	f.IntVar(&cfg.PerExperiment, "per-experiment", 40, "rows kept from the centre of each experiment (0: all)")
	f.StringSliceVar(&cfg.Schedulers, "schedulers", []string{"twins"}, "keep experiments run under these schedulers (the papers: twins, 7 windows x 144 scenarios); empty: all")
	f.Float64Var(&cfg.TrainFraction, "train-fraction", 0.7, "share of rows used for training, the rest for testing")
	f.Float64Var(&cfg.Smooth, "smooth", 0, "also report accuracy with a per-node moving average of probabilities giving the newest interval this weight in (0,1] (0: off)")
	f.IntVar(&cfg.Opt.Folds, "folds", 5, "tree: cross-validation folds choosing the pruning level (-1: no pruning)")
	f.IntVar(&cfg.Opt.MinLeaf, "min-leaf", 0, "tree and forest: minimum training rows per leaf (0: 1 for the tree, 20 for the forest)")
	f.IntVar(&cfg.Opt.Trees, "trees", 500, "forest: number of trees")
	f.IntVar(&cfg.Opt.Mtry, "mtry", 3, "forest: features tried at each split")
	f.IntVar(&cfg.Opt.Workers, "workers", 0, "forest: training goroutines (0: GOMAXPROCS; does not change the model)")
	f.IntVar(&cfg.Opt.Epochs, "epochs", 50, "mlp: training epochs")
	f.IntVar(&cfg.Opt.Batch, "batch", 32, "mlp: mini-batch size (rows)")
	f.Float64Var(&cfg.Opt.LearningRate, "learning-rate", 0.001, "mlp: RMSProp learning rate")
	f.StringVar(&cfg.Opt.Init, "init", "normal", "mlp: weight initialisation, normal (N(0,0.05^2), the papers') or he (N(0,2/fan_in))")
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runDetectTrain(cfg detectTrainConfig, stdout, stderr io.Writer) error {
	if cfg.FeatureSet == "" {
		cfg.FeatureSet = "all"
	}
	feats, err := detect.FeatureSet(cfg.FeatureSet)
	if err != nil {
		return fmt.Errorf("detect train: --features: %w", err)
	}
	cfg.Opt.Features = feats
	if err := requireWritableFile("out", cfg.Out); err != nil {
		return fmt.Errorf("detect train: %w", err)
	}
	split := detectSplit{data: cfg.Data, perExperiment: cfg.PerExperiment, schedulers: cfg.Schedulers, trainFraction: cfg.TrainFraction, seed: cfg.Seed}
	all, train, test, err := split.load(stderr)
	if err != nil {
		return fmt.Errorf("detect train: %w", err)
	}
	fmt.Fprintf(stderr, "detect: %d rows (FPP/SC/SS %v), training %s on %d, testing on %d...\n", all.Len(), all.Counts(), cfg.Kind, train.Len(), test.Len())
	cfg.Opt.Seed = cfg.Seed
	cfg.Opt.Source = cfg.Data
	cfg.Opt.Progress = detectProgress(stderr, cfg.Kind)
	start := time.Now()
	m, err := learn.Train(cfg.Kind, train.X, train.Y, cfg.Opt, rand.New(rand.NewPCG(cfg.Seed, 0x7a1)))
	if err != nil {
		return fmt.Errorf("detect train: %w", err)
	}
	trainTime := time.Since(start)
	m = m.WithExtra(split.extra())
	if err := learn.SaveFile(m, cfg.Out); err != nil {
		return fmt.Errorf("detect train: %w", err)
	}
	fmt.Fprintf(stdout, "model %s (features %v) written to %s; training took %v on %d rows\n", cfg.Kind, m.Features(), cfg.Out, trainTime.Round(time.Microsecond), train.Len())
	if err := detectReports(m, train, test, cfg.Validation, cfg.ValidationPer, split, cfg.Smooth, stdout, stderr); err != nil {
		return fmt.Errorf("detect train: %w", err)
	}
	return nil
}

// detectProgress reports training progress on one stderr line.
func detectProgress(stderr io.Writer, kind string) func(done, total int) {
	unit := map[string]string{"forest": "trees", "mlp": "epochs"}[kind]
	return func(done, total int) {
		if done == total || done%max(total/20, 1) == 0 {
			fmt.Fprintf(stderr, "\rdetect: training %s: %d/%d %s", kind, done, total, unit)
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
}

func detectReports(m *detect.Model, train, test learn.Set, validation string, validationPer int, split detectSplit, smooth float64, stdout, stderr io.Writer) error {
	report := func(s learn.Set) error {
		if err := learn.Evaluate(m, s.X, s.Y).Write(stdout); err != nil {
			return err
		}
		if smooth == 0 {
			return nil
		}
		r, err := learn.EvaluateSmoothed(m, s, smooth)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "smoothed per node (newest interval weight %g): accuracy %.4f%%  kappa %.5f  errors %d\n", smooth, 100*r.Accuracy, r.Kappa, r.Errors())
		return err
	}
	for _, part := range []struct {
		name string
		s    learn.Set
	}{{"training split", train}, {"test split", test}} {
		fmt.Fprintf(stdout, "\n== %s (%s) ==\n", part.name, split.data)
		if err := report(part.s); err != nil {
			return err
		}
	}
	if validation == "" {
		return nil
	}
	fmt.Fprintf(stderr, "detect: loading validation set %s...\n", validation)
	v, err := learn.LoadSet(validation, learn.SetOptions{PerExperiment: validationPer, Schedulers: split.schedulers}, split.seed+1)
	if err != nil {
		return err
	}
	rows := "all labelled non-idle rows"
	if validationPer > 0 {
		rows = fmt.Sprintf("%d centre rows per experiment", validationPer)
	}
	fmt.Fprintf(stdout, "\n== validation (%s, %s, schedulers %v) ==\n", validation, rows, split.schedulers)
	return report(v)
}

// detectEvalConfig is the configuration of "detect eval".
type detectEvalConfig struct {
	Data          string
	Validation    string
	ValidationPer int
	ModelFile     string
	Retrain       bool
	Smooth        float64
}

func newDetectEvalCmd() *cobra.Command {
	var cfg detectEvalConfig
	cmd := &cobra.Command{
		Use:   "eval --data DIR --model-file FILE",
		Short: "Evaluate a model on the split it was trained on and on a validation set",
		Long: `Eval rebuilds the train/test split recorded in the model file (rows per experiment,
train fraction, seed) from --data and prints, for both parts and for --validation DIR, the
confusion matrix (rows: true class; columns: detected),
accuracy, Cohen's kappa, per-class sensitivity and specificity and the prediction time
per row. With --retrain (default) it also times training the same kind with the recorded
options on the training part. Without --model-file it evaluates the embedded default model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDetectEval(cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Data, "data", "", "data source: a directory with observations.csv, synthetic, synthetic-small, or a comma-separated list (see adaptio detect --help; required)")
	f.StringVar(&cfg.Validation, "validation", "", "optional validation dataset directory, or \"synthetic-validation\"")
	f.IntVar(&cfg.ValidationPer, "validation-per-experiment", 40, "validation rows kept from the centre of each experiment (0: every labelled, non-idle row)")
	f.StringVar(&cfg.ModelFile, "model-file", "", "model file written by detect train (default: the embedded model)")
	f.BoolVar(&cfg.Retrain, "retrain", true, "time a retraining with the model's recorded options")
	f.Float64Var(&cfg.Smooth, "smooth", 0, "also report accuracy with a per-node moving average of probabilities giving the newest interval this weight in (0,1] (0: off)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

func detectLoadModel(path string) (*detect.Model, error) {
	if path == "" {
		return detect.Default(), nil
	}
	return learn.LoadFile(path)
}

func runDetectEval(cfg detectEvalConfig, stdout, stderr io.Writer) error {
	m, err := detectLoadModel(cfg.ModelFile)
	if err != nil {
		return fmt.Errorf("detect eval: %w", err)
	}
	info := m.Info()
	split := detectSplit{data: cfg.Data, perExperiment: 40, schedulers: []string{"twins"}, trainFraction: 0.7, seed: info.Options.Seed}
	if v, err := strconv.Atoi(info.Extra["per_experiment"]); err == nil {
		split.perExperiment = v
	}
	if v, ok := info.Extra["schedulers"]; ok && v != "" {
		split.schedulers = strings.Split(v, ",")
	}
	if v, err := strconv.ParseFloat(info.Extra["train_fraction"], 64); err == nil {
		split.trainFraction = v
	}
	if v, err := strconv.ParseUint(info.Extra["split_seed"], 10, 64); err == nil {
		split.seed = v
	}
	if d := info.Extra["data"]; d != "" && d != cfg.Data {
		fmt.Fprintf(stderr, "detect: warning: the model was trained on %s, evaluating on %s: the test split is not held out\n", d, cfg.Data)
	}
	_, train, test, err := split.load(stderr)
	if err != nil {
		return fmt.Errorf("detect eval: %w", err)
	}
	optJSON, _ := json.Marshal(info.Options)
	fmt.Fprintf(stdout, "model %s (features %v, %d training rows, options %s)\n", m.Kind(), m.Features(), info.Rows, optJSON)
	if cfg.Retrain {
		opt := info.Options
		opt.Progress = detectProgress(stderr, m.Kind())
		start := time.Now()
		if _, err := learn.Train(m.Kind(), train.X, train.Y, opt, rand.New(rand.NewPCG(opt.Seed, 0x7a1))); err != nil {
			return fmt.Errorf("detect eval: retraining: %w", err)
		}
		fmt.Fprintf(stdout, "training time: %v on %d rows\n", time.Since(start).Round(time.Microsecond), train.Len())
	}
	if err := detectReports(m, train, test, cfg.Validation, cfg.ValidationPer, split, cfg.Smooth, stdout, stderr); err != nil {
		return fmt.Errorf("detect eval: %w", err)
	}
	return nil
}

// detectPredictConfig is the configuration of "detect predict".
type detectPredictConfig struct {
	ModelFile string
	In        string
}

func newDetectPredictCmd() *cobra.Command {
	var cfg detectPredictConfig
	cmd := &cobra.Command{
		Use:   "predict [--model-file FILE] [--in FILE]",
		Short: "Classify observations read as CSV",
		Long: `Predict reads CSV rows from --in (default stdin) and prints one CSV row per input:
class,p_fpp,p_sc,p_ss (probabilities in [0,1]), plus op when the input has an obs_op column.

Input: either a header naming the measured feature columns the model uses (file_handles,
req_avg, req_min, req_max, offset_dist, and proc_offset_dist and file_sharers unless the
model was trained with --features papers; extra columns, e.g. a whole observations.csv,
are ignored), or headerless rows of either all seven measured features or exactly the model's measured
features, in that order (sizes and distances in bytes). The derived feature
proc_dist_ratio (proc_offset_dist / req_avg) is computed, never read. Without --model-file the embedded default model
is used.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := cmd.InOrStdin()
			if cfg.In != "" && cfg.In != "-" {
				fh, err := os.Open(cfg.In)
				if err != nil {
					return fmt.Errorf("detect predict: %w", err)
				}
				defer fh.Close()
				in = fh
			}
			m, err := detectLoadModel(cfg.ModelFile)
			if err != nil {
				return fmt.Errorf("detect predict: %w", err)
			}
			if err := runDetectPredict(m, in, cmd.OutOrStdout()); err != nil {
				return fmt.Errorf("detect predict: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfg.ModelFile, "model-file", "", "model file written by detect train (default: the embedded model)")
	cmd.Flags().StringVar(&cfg.In, "in", "", "input CSV file (default: stdin)")
	return cmd
}

var errDetectInput = errors.New("bad input")

func runDetectPredict(m *detect.Model, in io.Reader, out io.Writer) error {
	r := csv.NewReader(bufio.NewReader(in))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	// cols[j]: input column of feature j, -1 when absent (the model does not use it: 0).
	// Only measured features are read; derived ones (proc_dist_ratio) are
	// computed from them, so a model using one needs its inputs.
	var cols [access.NumFeatures]int
	measured := access.FeatureNames[:access.NumMeasuredFeatures]
	used := map[string]bool{}
	var modelMeasured []string
	for _, n := range m.Features() {
		if access.FeatureIndex(n) >= access.NumMeasuredFeatures {
			used["req_avg"], used["proc_offset_dist"] = true, true
			continue
		}
		used[n] = true
	}
	for _, n := range measured {
		if used[n] {
			modelMeasured = append(modelMeasured, n)
		}
	}
	setCols := func(names []string) {
		for j := range cols {
			cols[j] = -1
		}
		for i, n := range names {
			cols[access.FeatureIndex(n)] = i
		}
	}
	setCols(measured)
	opCol := -1
	w := csv.NewWriter(out)
	defer w.Flush()
	line := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", errDetectInput, line, err)
		}
		if line == 1 {
			if _, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64); err != nil {
				idx := map[string]int{}
				for i, h := range rec {
					idx[strings.TrimSpace(h)] = i
				}
				for j, name := range measured {
					i, ok := idx[name]
					switch {
					case ok:
						cols[j] = i
					case used[name]:
						return fmt.Errorf("%w: header lacks column %q (the model uses %v)", errDetectInput, name, modelMeasured)
					default:
						cols[j] = -1
					}
				}
				hdr := []string{"class", "p_fpp", "p_sc", "p_ss"}
				if i, ok := idx["obs_op"]; ok {
					opCol = i
					hdr = append(hdr, "op")
				}
				if err := w.Write(hdr); err != nil {
					return err
				}
				continue
			}
			switch len(rec) {
			case len(measured):
			case len(modelMeasured):
				setCols(modelMeasured)
			default:
				if len(modelMeasured) == len(measured) {
					return fmt.Errorf("%w: line 1: %d fields without a header, want %d (%v)", errDetectInput, len(rec), len(measured), measured)
				}
				return fmt.Errorf("%w: line 1: %d fields without a header, want %d (%v) or %d (%v)", errDetectInput, len(rec), len(measured), measured, len(modelMeasured), modelMeasured)
			}
			if err := w.Write([]string{"class", "p_fpp", "p_sc", "p_ss"}); err != nil {
				return err
			}
		}
		var x [access.NumFeatures]float64
		for j, i := range cols {
			if i < 0 {
				continue
			}
			if i >= len(rec) {
				return fmt.Errorf("%w: line %d: %d fields, column %q missing", errDetectInput, line, len(rec), access.FeatureNames[j])
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				return fmt.Errorf("%w: line %d: %s %q is not a number", errDetectInput, line, access.FeatureNames[j], rec[i])
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("%w: line %d: %s %q: counts, sizes and distances are finite and not negative", errDetectInput, line, access.FeatureNames[j], rec[i])
			}
			x[j] = v
		}
		c, p := m.Predict(access.Derive(x))
		row := []string{c.String(), strconv.FormatFloat(p[0], 'f', 6, 64), strconv.FormatFloat(p[1], 'f', 6, 64), strconv.FormatFloat(p[2], 'f', 6, 64)}
		if opCol >= 0 && opCol < len(rec) {
			row = append(row, rec[opCol])
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
