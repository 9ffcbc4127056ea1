package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// ReadyFile is created in a dataset directory when a grid has finished.
const ReadyFile = "READY"

// GridOptions configure RunGrid.
type GridOptions struct {
	Out        string // dataset directory (created)
	Validation bool   // the generalisation set (64 and 128 KiB requests) instead of the papers' grid
	Workers    int    // experiments run in parallel (default 1)
	Resume     bool   // keep experiments already in Out/summary.csv and run the others
	// Base holds the model parameters; its Patterns, IONodes, Scheduler,
	// Window and Seed are set per experiment.
	Base      sim.Config
	Seed      uint64   // base seed; each experiment's seed derives from it and the experiment's key
	Baselines []string // schedulers run once per scenario besides TWINS' windows (default fifo, hbrr; names the registry lacks are skipped with a warning)
	Windows   []time.Duration
	// Repeat runs every experiment this many times (default 1), repetition
	// r with Run.Rep = r and so its own seed (RunSeed of its key); with more
	// than one, observations.csv and summary.csv get the rep column.
	// Repetition 0 is the grid without repetitions, row for row.
	Repeat     int
	TotalBytes int64                        // if > 0, replaces every scenario's total (for quick grids)
	Scenarios  func(workload.Scenario) bool // if set, keeps only the scenarios it accepts
	Progress   io.Writer                    // progress lines (nil: none)
	Logger     *slog.Logger
}

// GridRuns returns the experiments of a grid in their fixed order: per
// repetition (o.Repeat), per scenario, TWINS with every window, then each
// baseline.
func GridRuns(o GridOptions) ([]dataset.Run, []string) {
	var warn []string
	base := o.Baselines
	if base == nil {
		base = []string{"fifo", "hbrr"}
	}
	known := sched.Names()
	var bl []string
	for _, b := range base {
		if slices.Contains(known, b) {
			bl = append(bl, b)
		} else {
			warn = append(warn, fmt.Sprintf("baseline %q is not in the scheduler registry (%v): skipped", b, known))
		}
	}
	ws := o.Windows
	if ws == nil {
		ws = sched.Windows
	}
	var runs []dataset.Run
	for rep := range max(o.Repeat, 1) {
		for _, sc := range workload.Grid(o.Validation) {
			if o.TotalBytes > 0 {
				sc.TotalBytes = o.TotalBytes
			}
			if o.Scenarios != nil && !o.Scenarios(sc) {
				continue
			}
			for _, w := range ws {
				runs = append(runs, dataset.Run{Scenario: sc, Scheduler: "twins", Window: w, Rep: rep})
			}
			for _, b := range bl {
				runs = append(runs, dataset.Run{Scenario: sc, Scheduler: b, Rep: rep})
			}
		}
	}
	return runs, warn
}

// RunSeed derives an experiment's seed from a base seed and its key, so an
// experiment's outcome does not depend on which others run or in what order.
// The key holds the repetition (after the first), so each repetition is a
// distinct seeded run and repetition 0 keeps the seed of a grid without
// repetitions.
func RunSeed(base uint64, r dataset.Run) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", base, r.Key())
	return h.Sum64()
}

// runConfig is the configuration of run r on the model base.
func runConfig(base sim.Config, r dataset.Run, seed uint64) sim.Config {
	cfg := base
	cfg.Patterns = []workload.Pattern{r.Scenario.Pattern}
	cfg.IONodes = r.Scenario.IONodes
	cfg.Scheduler = r.Scheduler
	cfg.Window = r.Window
	if cfg.Window == 0 {
		cfg.Window = sched.DefaultWindow
	}
	cfg.Seed = seed
	return cfg
}

// Run simulates one experiment of a grid on the model base and returns its
// summary, its non-idle observation rows (one per I/O node per interval)
// and the simulator's result.
func Run(ctx context.Context, base sim.Config, r dataset.Run, seed uint64) (dataset.Experiment, []dataset.Row, sim.Result, error) {
	s, err := sim.New(runConfig(base, r, seed), nil)
	if err != nil {
		return dataset.Experiment{}, nil, sim.Result{}, err
	}
	class := r.Scenario.Pattern.Class()
	var rows []dataset.Row
	second := 0
	for {
		if err := ctx.Err(); err != nil {
			return dataset.Experiment{}, nil, sim.Result{}, err
		}
		obs, done, err := s.Step()
		if err != nil {
			return dataset.Experiment{}, nil, sim.Result{}, fmt.Errorf("%s: %w", r.Key(), err)
		}
		for _, o := range obs {
			if o.Idle() {
				continue
			}
			if r.Scheduler != "twins" {
				o.Window = 0
			}
			rows = append(rows, dataset.Row{Run: r, Second: second, Obs: o, Class: class})
		}
		second++
		if done {
			break
		}
	}
	res := s.Result()
	return dataset.Experiment{Run: r, Makespan: res.Makespan, Bandwidth: res.Bandwidth, Bytes: res.Bytes}, rows, res, nil
}

// GridStats summarise a RunGrid call.
type GridStats struct {
	Runs, Skipped int
	Events        uint64
	Rows          int
	Wall          time.Duration
}

// RunGrid runs every experiment of the grid and writes Out/observations.csv
// and Out/summary.csv in the fixed experiment order (byte-identical for the
// same options, whatever Workers). Each experiment's rows are appended and
// flushed before its summary row, so a summary row means a complete
// experiment; with Resume, rows of experiments without a summary row are
// dropped and those experiments run again. Out/READY is created at the end.
// With o.Repeat > 1 both files have the rep column (dataset.Writer.IncludeRep).
func RunGrid(ctx context.Context, o GridOptions) (GridStats, error) {
	t0 := time.Now()
	var st GridStats
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Repeat < 0 {
		return st, fmt.Errorf("sim: %d repetitions", o.Repeat)
	}
	withRep := o.Repeat > 1
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	runs, warns := GridRuns(o)
	for _, w := range warns {
		log.Warn(w)
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, "sim grid: warning:", w)
		}
	}
	// Every experiment is checked before any file is touched: a grid that
	// cannot run leaves the directory as it was.
	for _, r := range runs {
		if err := runConfig(o.Base, r, 0).WithDefaults().Validate(); err != nil {
			return st, fmt.Errorf("sim: experiment %s: %w", r.Key(), err)
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	_ = os.Remove(filepath.Join(o.Out, ReadyFile))
	obsPath := filepath.Join(o.Out, dataset.ObservationsFile)
	sumPath := filepath.Join(o.Out, dataset.SummaryFile)
	have := map[string]bool{}
	if o.Resume {
		planned := make(map[string]bool, len(runs))
		for _, r := range runs {
			planned[r.Key()] = true
		}
		var err error
		if have, err = prepareResume(obsPath, sumPath, planned, withRep); err != nil {
			return st, err
		}
	} else {
		for _, p := range []string{obsPath, sumPath} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return st, fmt.Errorf("sim: %w", err)
			}
		}
	}
	var todo []dataset.Run
	for _, r := range runs {
		if have[r.Key()] {
			st.Skipped++
			continue
		}
		todo = append(todo, r)
	}
	obsF, err := os.OpenFile(obsPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	defer obsF.Close()
	sumF, err := os.OpenFile(sumPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	defer sumF.Close()
	obsHeader := st.Skipped == 0 && fileEmpty(obsF)
	sumHeader := st.Skipped == 0 && fileEmpty(sumF)

	type result struct {
		i    int
		exp  dataset.Experiment
		rows []dataset.Row
		ev   uint64
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	results := make(chan result, o.Workers)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := todo[i]
				exp, rows, res, err := Run(ctx, o.Base, r, RunSeed(o.Seed, r))
				select {
				case results <- result{i: i, exp: exp, rows: rows, ev: res.Events, err: err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range todo {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	pending := map[int]result{}
	next := 0
	lastProgress := time.Now()
	var buf bytes.Buffer
	var firstErr error
	for res := range results {
		if res.err != nil {
			if firstErr == nil {
				firstErr = res.err
				cancel()
			}
			continue
		}
		if firstErr != nil {
			continue
		}
		pending[res.i] = res
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			buf.Reset()
			ow := dataset.NewObservationWriter(&buf)
			if withRep {
				ow.IncludeRep()
			}
			if obsHeader {
				_ = ow.WriteHeader()
				obsHeader = false
			} else {
				ow.OmitHeader()
			}
			for _, row := range r.rows {
				if err := ow.Row(row); err != nil {
					return st, fmt.Errorf("sim: %w", err)
				}
			}
			if err := ow.Flush(); err != nil {
				return st, err
			}
			if _, err := obsF.Write(buf.Bytes()); err != nil {
				return st, fmt.Errorf("sim: writing observations: %w", err)
			}
			buf.Reset()
			sw := dataset.NewSummaryWriter(&buf)
			if withRep {
				sw.IncludeRep()
			}
			if sumHeader {
				_ = sw.WriteHeader()
				sumHeader = false
			} else {
				sw.OmitHeader()
			}
			if err := sw.Experiment(r.exp); err != nil {
				return st, fmt.Errorf("sim: %w", err)
			}
			if err := sw.Flush(); err != nil {
				return st, err
			}
			if _, err := sumF.Write(buf.Bytes()); err != nil {
				return st, fmt.Errorf("sim: writing summary: %w", err)
			}
			st.Runs++
			st.Events += r.ev
			st.Rows += len(r.rows)
		}
		if o.Progress != nil && (time.Since(lastProgress) > time.Second || next == len(todo)) {
			lastProgress = time.Now()
			el := time.Since(t0)
			eta := time.Duration(0)
			if next > 0 {
				eta = time.Duration(float64(el) / float64(next) * float64(len(todo)-next))
			}
			fmt.Fprintf(o.Progress, "sim grid: %d/%d experiments (%d kept from before), %d rows, %.1fs elapsed, ETA %s\n",
				next+st.Skipped, len(runs), st.Skipped, st.Rows, el.Seconds(), eta.Round(time.Second))
		}
	}
	st.Wall = time.Since(t0)
	if firstErr != nil {
		return st, firstErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if err := obsF.Sync(); err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	if err := sumF.Sync(); err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, ReadyFile), fmt.Appendf(nil, "%d experiments, %d rows\n", st.Runs+st.Skipped, st.Rows), 0o644); err != nil {
		return st, fmt.Errorf("sim: %w", err)
	}
	return st, nil
}

func fileEmpty(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Size() == 0
}

// prepareResume returns the keys in summary.csv that are planned and
// rewrites both files with only those experiments (observations of
// experiments without a summary row, a torn last experiment, are dropped),
// with or without the rep column as the grid writes it.
func prepareResume(obsPath, sumPath string, planned map[string]bool, withRep bool) (map[string]bool, error) {
	have := map[string]bool{}
	f, err := os.Open(sumPath)
	if errors.Is(err, os.ErrNotExist) {
		return have, os.Remove(obsPath)
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	exps, err := dataset.ReadSummary(f)
	f.Close()
	if err != nil {
		// A torn last line: keep what parsed is not possible with the
		// reader, so start over.
		return nil, fmt.Errorf("sim: resume: %w (remove the directory to start over)", err)
	}
	var kept []dataset.Experiment
	for _, e := range exps {
		if k := e.Key(); planned[k] && !have[k] {
			have[k] = true
			kept = append(kept, e)
		}
	}
	in, err := os.Open(obsPath)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, os.Remove(sumPath)
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	defer in.Close()
	err = rewrite(obsPath, withRep, dataset.NewObservationWriter, func(w *dataset.Writer) error {
		return dataset.ReadObservations(in, func(r dataset.Row) error {
			if have[r.Key()] {
				return w.Row(r)
			}
			return nil
		})
	})
	if err == nil {
		err = rewrite(sumPath, withRep, dataset.NewSummaryWriter, func(w *dataset.Writer) error {
			for _, e := range kept {
				if err := w.Experiment(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return have, nil
}

// rewrite replaces path with what fill writes through a new Writer (with the
// rep column if withRep), via a temporary file renamed over it.
func rewrite(path string, withRep bool, newWriter func(io.Writer) *dataset.Writer, fill func(*dataset.Writer) error) error {
	err := atomicfile.Write(path, func(out io.Writer) error {
		w := newWriter(out)
		if withRep {
			w.IncludeRep()
		}
		if err := w.WriteHeader(); err != nil {
			return err
		}
		if err := fill(w); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("sim: resume: %w", err)
	}
	return nil
}
