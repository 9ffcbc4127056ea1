package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/forge"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/sim/experiment"
	"github.com/adaptio/adaptio/sim/simplot"
	"github.com/adaptio/adaptio/workload"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Deterministic simulator of the forwarding stack and the papers' dataset",
		Long: `sim runs a discrete-event model of the papers' platform in virtual time: MPI-IO Test
processes on 32 client nodes, I/O nodes running the real schedulers (TWINS, FIFO, ...)
with IOFSL-like dispatcher threads, 10 Gb/s links, and 4 PVFS-like data servers with
64 KiB striping on 10k rpm hard disks (writes through). See docs/simulator.md.`,
	}
	cmd.AddCommand(newSimRunCmd(), newSimGridCmd(), newSimPlotCmd(), newSimForgeCmd(), newSimJobsCmd())
	return cmd
}

// modelFlags are the model parameters shared by the sim subcommands.
type modelFlags struct {
	clients, servers, threads int
	stripe                    string
	diskKind                  string
	contention, switchCost    time.Duration
	elevator, aligned         bool
	timeScale                 float64
	merge                     int
	seed                      uint64
}

func (m *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&m.clients, "clients", sim.DefaultClientNodes, "client (compute) nodes; processes are spread evenly over them")
	f.IntVar(&m.servers, "servers", sim.DefaultServers, "PFS data servers")
	f.IntVar(&m.threads, "threads", sim.DefaultThreads, "accesses an I/O node keeps in flight to the data servers (dispatch slots)")
	f.StringVar(&m.stripe, "stripe", "64KiB", "PFS stripe size (bytes; suffixes k/KiB, m/MiB, g/GiB)")
	f.StringVar(&m.diskKind, "disk", "hdd", "data server device: hdd, ssd or none")
	f.DurationVar(&m.contention, "contention", 0, "extra data server time per access per additional I/O node with requests at the server (negative: none)")
	f.DurationVar(&m.switchCost, "switch-cost", sim.DefaultSwitchCost, "extra data server time of an access from another I/O node than the previous access (negative: none)")
	f.BoolVar(&m.elevator, "elevator", false, "data servers serve queued accesses in disk-address (C-LOOK) order instead of arrival order")
	f.IntVar(&m.merge, "read-merge", sim.DefaultReadMerge, "most 128 KiB page-cache chunks one data server disk read covers when it merges the misses of adjacent queued reads (negative: no merging)")
	f.BoolVar(&m.aligned, "aligned", false, "TWINS windows are slots of the virtual clock shared by every I/O node (default: the reference's windows, each starting at the first dispatch after the previous ended)")
	f.Float64Var(&m.timeScale, "server-time-scale", 1, "multiply every data server's modelled service time (slower servers)")
	f.Uint64Var(&m.seed, "seed", 1, "seed of every random stream (same seed, same output)")
}

func (m *modelFlags) config() (sim.Config, error) {
	stripe, err := workload.ParseSize(m.stripe)
	if err != nil {
		return sim.Config{}, fmt.Errorf("--stripe: %w", err)
	}
	dc, err := disk.DefaultConfig(m.diskKind)
	if err != nil {
		return sim.Config{}, fmt.Errorf("--disk: %w", err)
	}
	return sim.Config{
		ClientNodes: m.clients, Servers: m.servers, Threads: m.threads, StripeBytes: stripe,
		Disk: dc, Contention: m.contention, SwitchCost: m.switchCost, Elevator: m.elevator, ReadMerge: m.merge, Seed: m.seed,
		AlignedWindows: m.aligned, ServerTimeScale: m.timeScale,
	}, nil
}

func newSimRunCmd() *cobra.Command {
	var (
		m                             modelFlags
		procs, ion, iterations        int
		layout, spat, op, size, total string
		scheduler, metrics            string
		window                        time.Duration
		scale                         bool
		learn                         bool
		lo                            learnOptions
		noCompare                     bool
		selectFrom                    string
		selectPeriod                  time.Duration
		selectPolicy                  string
		selectShared                  bool
		selectState                   string
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Simulate one experiment; print makespan and bandwidth",
		Long: `run simulates one MPI-IO Test pattern on the model and prints its makespan (virtual
time from the first request to the last reply), bandwidth (bytes / makespan, MB/s = 1e6 B/s),
events processed and the wall-clock time taken. --metrics FILE writes the per-second
observations of every I/O node (the Announcer's metrics, dataset observations.csv format).
--write-read N runs the pattern as a write then a read, N times back to back on the same
files. --scale runs the scale mode: 768 I/O nodes and 49,152 processes (Bez et al., FGCS 2020, Table I,
Sequoia) on 6,144 client nodes and 64 data servers.

--learn runs the experiment with the Council learning: every simulated second each I/O node's
observation goes to the Council core (the code "adaptio council" runs), which detects the
node's access pattern, credits the bandwidth to the window in force and decides the next window
for every I/O node (--policy, --epsilon; --state FILE carries the learned state between runs).
It prints, per detected pattern (e.g. SS/read), the window the Council now values best and its
pulls, then the same experiment under each static window and FIFO (run in parallel, progress on
stderr; --no-compare skips them) with learning's bandwidth relative to each. Use --write-read N
for a run long enough to learn.`,
		Example: `  adaptio sim run --processes 128 --layout shared --spatiality strided --op read --io-nodes 4
  adaptio sim run --learn --write-read 20 --total 1GiB --io-nodes 4 --state learned.json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requirePositive(cmd, "servers", "clients", "threads", "processes", "io-nodes", "window"); err != nil {
				return fmt.Errorf("sim run: %w", err)
			}
			if iterations < 0 {
				return fmt.Errorf("sim run: --write-read %d: want 0 (the pattern once) or a number of write-then-read passes", iterations)
			}
			cfg, err := m.config()
			if err != nil {
				return err
			}
			p := workload.Pattern{Processes: procs}
			if p.Layout, err = workload.ParseLayout(layout); err != nil {
				return fmt.Errorf("sim run: --layout: %w", err)
			}
			if p.Spatiality, err = workload.ParseSpatiality(spat); err != nil {
				return fmt.Errorf("sim run: --spatiality: %w", err)
			}
			if p.Op, err = rw.ParseOp(op); err != nil {
				return fmt.Errorf("sim run: --op: %w", err)
			}
			if p.RequestSize, err = workload.ParseSize(size); err != nil {
				return fmt.Errorf("--request-size: %w", err)
			}
			if p.TotalBytes, err = workload.ParseSize(total); err != nil {
				return fmt.Errorf("--total: %w", err)
			}
			if scale {
				ion = 768
				p.Processes = 49152
				if !cmd.Flags().Changed("clients") {
					cfg.ClientNodes = 6144
				}
				if !cmd.Flags().Changed("servers") {
					cfg.Servers = 64
				}
				if !cmd.Flags().Changed("total") {
					p.TotalBytes = int64(p.Processes) * 8 * p.RequestSize
				}
			}
			if ion < 1 || p.Processes < 1 {
				return fmt.Errorf("sim run: --io-nodes %d and --processes %d must be >= 1", ion, p.Processes)
			}
			cfg.Patterns = []workload.Pattern{p}
			if iterations > 0 {
				cfg.Patterns = sim.WriteRead(p, iterations)
			}
			cfg.IONodes, cfg.Scheduler, cfg.Window = ion, scheduler, window
			if learn {
				if cmd.Flags().Changed("metrics") {
					return errors.New("sim run: --metrics is not written with --learn")
				}
				lo.Seed, lo.Compare = m.seed, !noCompare
				r, err := simLearn(cmd.Context(), cfg, lo, cmd.ErrOrStderr())
				if err != nil {
					return fmt.Errorf("sim run --learn: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "scenario   %s, %d I/O nodes, %d patterns back to back\n", p, ion, len(cfg.Patterns))
				r.write(cmd.OutOrStdout())
				return nil
			}
			if scheduler == "dynamic" || scheduler == "pattern" {
				if cmd.Flags().Changed("metrics") {
					return fmt.Errorf("sim run: --metrics is not written with --scheduler %s", scheduler)
				}
				dcfg := selection.DriverConfig{Period: selectPeriod, Policy: selectPolicy, Shared: selectShared}
				if scheduler == "pattern" {
					dcfg.Patterns = &selection.KBConfig{}
				}
				return simDynamic(cmd, cfg, p, selectFrom, dcfg, selectState)
			}
			s, err := sim.New(cfg, nil)
			if err != nil {
				return fmt.Errorf("sim run: %w", err)
			}
			var w *dataset.Writer
			var mf *os.File
			if metrics != "" {
				if mf, err = os.Create(metrics); err != nil {
					return fmt.Errorf("sim run: --metrics: %w", err)
				}
				defer mf.Close()
				w = dataset.NewObservationWriter(mf)
			}
			sc := workload.Scenario{Pattern: p, IONodes: ion}
			run := dataset.Run{Scenario: sc, Scheduler: scheduler}
			if scheduler == "twins" {
				run.Window = window
			}
			t0 := time.Now()
			second := 0
			res, err := s.Run(cmd.Context(), sim.Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
				if w != nil {
					for _, o := range obs {
						if !o.Idle() {
							_ = w.Row(dataset.Row{Run: run, Second: second, Obs: o, Class: p.Class()})
						}
					}
				}
				second++
				return 0, false
			}})
			wall := time.Since(t0)
			if err != nil {
				return err
			}
			if w != nil {
				if err := w.Flush(); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "scenario   %s, %s", sc, scheduler)
			if scheduler == "twins" {
				fmt.Fprintf(out, " window %v", window)
			}
			fmt.Fprintln(out)
			fmt.Fprintf(out, "makespan   %.3f s\n", res.Makespan.Seconds())
			for i, ph := range res.Phases {
				if len(res.Phases) > 1 {
					fmt.Fprintf(out, "  phase %d (%s): %.3f s\n", i, cfg.Patterns[i].Op, ph.Seconds())
				}
			}
			fmt.Fprintf(out, "bandwidth  %.1f MB/s (%d bytes)\n", res.Bandwidth/1e6, res.Bytes)
			for i, sv := range res.Servers {
				fmt.Fprintf(out, "server %d   busy %5.1f%%, %d accesses, %d from another I/O node than the previous; page cache %d hits %d misses; disk: %d cache hits, %d streamed, %d read misses, %d writes\n",
					i, 100*sv.Busy.Seconds()/res.Makespan.Seconds(), sv.Accesses, sv.Switches, sv.PageHits, sv.PageMisses, sv.Disk.CacheHits, sv.Disk.Streamed, sv.Disk.ReadMisses, sv.Disk.Writes)
			}
			fmt.Fprintf(out, "events     %d in %.3f s wall (%.2f M events/s)\n", res.Events, wall.Seconds(), float64(res.Events)/wall.Seconds()/1e6)
			return nil
		},
	}
	m.register(cmd)
	f := cmd.Flags()
	f.IntVar(&procs, "processes", 128, "MPI processes")
	f.StringVar(&layout, "layout", "shared", "file layout: shared or fpp (file per process)")
	f.StringVar(&spat, "spatiality", "strided", "contiguous or strided (1D-strided)")
	f.StringVar(&op, "op", "read", "read or write")
	f.StringVar(&size, "request-size", "32KiB", "request size in bytes (suffixes k/KiB, m/MiB, g/GiB)")
	f.StringVar(&total, "total", "4GiB", "bytes over all processes")
	f.IntVar(&ion, "io-nodes", 8, "I/O nodes")
	f.StringVar(&scheduler, "scheduler", "twins", "I/O node scheduler (registry: "+strings.Join(sched.Names(), ", ")+"); dynamic: AGIOS's armed bandit chooses among --select-from every --select-period; pattern: dynamic plus the JLESC AGIOS selection report's pattern matching and Markov prediction")
	f.StringVar(&selectFrom, "select-from", "mlf,to-agg,sjf,to,noop", "with --scheduler dynamic: the algorithms to choose among (AGIOS's set by default)")
	f.DurationVar(&selectPeriod, "select-period", time.Second, "with --scheduler dynamic: how often an I/O node may change algorithm")
	f.StringVar(&selectPolicy, "select-policy", "", "with --scheduler dynamic: empty for AGIOS's armed bandit, else a bandit policy (e.g. thompson) over the same algorithms")
	f.StringVar(&selectState, "select-state", "", "with --scheduler pattern: a file the knowledge bases are loaded from (if it exists) and saved to, so that a second run starts from what the first learned")
	f.BoolVar(&selectShared, "select-shared", false, "with --scheduler dynamic: one choice for every I/O node from their summed bandwidth, as the Council decides the window (AGIOS: each node alone)")
	f.DurationVar(&window, "window", time.Millisecond, "TWINS time window")
	f.StringVar(&metrics, "metrics", "", "write per-second observations of every I/O node to this CSV file")
	f.IntVar(&iterations, "write-read", 0, "run write then read of the pattern this many times back to back (0: the pattern once)")
	f.BoolVar(&scale, "scale", false, "scale mode: 768 I/O nodes, 49,152 processes, 6,144 clients, 64 servers")
	f.BoolVar(&learn, "learn", false, "let the Council core choose the TWINS window every simulated second, then compare with every static window and FIFO")
	f.StringVar(&lo.Policy, "policy", council.DefaultPolicy, "with --learn: bandit policy ("+strings.Join(bandit.Names(), ", ")+")")
	f.BoolVar(&lo.NoPlan, "no-plan", false, "with --learn: the Council decides one window only, as the papers' (default: a window per direction of requests too, applied as the requests turn)")
	addCreditFlags(f, &lo.Credit, &lo.MaxPull, council.DefaultMaxPull, "with --learn: ")
	f.Float64Var(&lo.Epsilon, "epsilon", 0, "with --learn: exploration probability of the egreedy policies (0: the policy's default)")
	f.StringVar(&lo.State, "state", "", "with --learn: file of learned state, read if present and written at the end (a second run continues learning)")
	f.BoolVar(&noCompare, "no-compare", false, "with --learn: skip the static-window and FIFO runs")
	return cmd
}

func newSimGridCmd() *cobra.Command {
	var (
		m          modelFlags
		out        string
		validation bool
		resume     bool
		workers    int
		repeat     int
		total      string
	)
	cmd := &cobra.Command{
		Use:   "grid --out DIR",
		Short: "Simulate the papers' grid and write the dataset",
		Long: `grid runs the papers' 144 scenarios (128/256/512 processes x FPP contiguous, shared
contiguous, shared 1D-strided x read/write x 32/256 KiB requests x 1/2/4/8 I/O nodes, 4 GiB
each) with TWINS and each of the 7 windows (125 µs ... 8 ms), plus the FIFO and HBRR baselines
once per scenario, and writes DIR/observations.csv (one row per I/O node per second with I/O:
scenario, scheduler, window, the Announcer's metrics, the class label FPP/SC/SS) and
DIR/summary.csv (makespan and bandwidth per experiment). --validation runs the generalisation
set (64 and 128 KiB requests). Experiments run in parallel (--workers); the files are written
in a fixed order, byte-identical for the same flags. --repeat N runs every experiment N times
with different seeds (each repetition's seed derives from the experiment's key and its
repetition number); both files then get a trailing "rep" column (0 to N-1), repetition 0 being
row for row the grid without --repeat, which stays byte-identical to files written before the
option existed. --resume keeps the experiments already in DIR/summary.csv (a grid can be
resumed with a larger --repeat). DIR/READY is created when the grid is complete. Progress goes
to stderr.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("sim grid: --out is required")
			}
			if err := requirePositive(cmd, "servers", "clients", "threads", "workers"); err != nil {
				return fmt.Errorf("sim grid: %w", err)
			}
			cfg, err := m.config()
			if err != nil {
				return err
			}
			if repeat < 1 {
				return fmt.Errorf("sim grid: --repeat %d: want at least 1", repeat)
			}
			o := experiment.GridOptions{Out: out, Validation: validation, Workers: workers, Resume: resume, Repeat: repeat,
				Base: cfg, Seed: m.seed, Progress: cmd.ErrOrStderr()}
			if total != "" {
				if o.TotalBytes, err = workload.ParseSize(total); err != nil {
					return fmt.Errorf("--total: %w", err)
				}
			}
			st, err := experiment.RunGrid(cmd.Context(), o)
			if err != nil {
				return fmt.Errorf("sim grid: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d experiments run, %d kept, %d observation rows, %d events in %.1f s (%.2f M events/s) -> %s\n",
				st.Runs, st.Skipped, st.Rows, st.Events, st.Wall.Seconds(), float64(st.Events)/st.Wall.Seconds()/1e6, out)
			return nil
		},
	}
	m.register(cmd)
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "dataset directory (created)")
	f.BoolVar(&validation, "validation", false, "generalisation set: 64 and 128 KiB requests")
	f.BoolVar(&resume, "resume", false, "keep experiments already in DIR/summary.csv")
	f.IntVar(&workers, "workers", runtime.NumCPU(), "experiments run in parallel")
	f.IntVar(&repeat, "repeat", 1, "run every experiment this many times with different seeds (rows say which in a rep column when > 1)")
	f.StringVar(&total, "total", "", "replace every scenario's 4 GiB total (quick grids), e.g. 256MiB")
	return cmd
}

func newSimPlotCmd() *cobra.Command {
	var data, out string
	cmd := &cobra.Command{
		Use:   "plot --data DIR --out DIR",
		Short: "Draw the simulator's figures from a dataset and print the three findings",
		Long: `plot reads DIR/summary.csv (written by "adaptio sim grid") and writes SVG and PNG figures
to the --out directory: fig1-<n>ion (makespan of 128 processes reading a shared file in 32 KiB
1D-strided requests, FIFO and HBRR in red, TWINS with each window in blue, per I/O node count;
Bez et al., FGCS 2020, Fig. 1), best-window (how many scenarios each window is the best for) and
twins-vs-fifo (best TWINS window / FIFO makespan per scenario, per I/O node count). It also
prints the papers' three qualitative findings measured on the dataset.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" || out == "" {
				return errors.New("sim plot: --data and --out are required")
			}
			exps, err := dataset.LoadSummary(data)
			if err != nil {
				return fmt.Errorf("sim plot: %w", err)
			}
			files, err := simplot.All(exps, out)
			if err != nil {
				return fmt.Errorf("sim plot: %w", err)
			}
			experiment.Analyse(exps).Report(cmd.OutOrStdout())
			for _, f := range files {
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "dataset directory (with summary.csv)")
	cmd.Flags().StringVar(&out, "out", "", "directory for the figures (created)")
	return cmd
}

func newSimForgeCmd() *cobra.Command {
	var (
		data, points string
		stonewall    time.Duration
		workers      int
		fileConc     int
	)
	cmd := &cobra.Command{
		Use:   "forge",
		Short: "Compare the model with FORGE measurements from MareNostrum 4",
		Long: `forge runs the model configured for MareNostrum 4 (experiment.ForgeConfig, see docs/simulator.md)
on every write pattern of the FORGE results (file per process or shared, contiguous or
1D-strided, 32 KiB to 8 MiB requests, 96 to 1536 processes on 8 to 32 client nodes) with
1, 2, 4 and 8 forwarders, each for the --stonewall virtual time, and prints the Spearman
rank correlation between measured (median of the repetitions) and modelled bandwidth over
every (pattern, forwarders), and how often the model picks the measured best forwarder
count. Rows of direct access (0 forwarders) are left out: the model has no path that
bypasses the I/O nodes. --data defaults to ../shared/data/forge/marenostrum-4-results.csv
found from the working directory; --points FILE writes every point (CSV).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := data
			if path == "" {
				var err error
				if path, err = forge.Find(); err != nil {
					return fmt.Errorf("sim forge: %w (give --data)", err)
				}
			}
			rows, err := forge.Load(path)
			if err != nil {
				return fmt.Errorf("sim forge: %w", err)
			}
			pts, direct := experiment.ForgePoints(rows)
			if direct > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "sim forge: %d rows of direct access (0 forwarders) left out: the model always goes through I/O nodes\n", direct)
			}
			t0 := time.Now()
			base := experiment.ForgeConfig()
			base.FileConcurrency = fileConc
			rep, err := experiment.CompareForge(cmd.Context(), pts, experiment.ForgeOptions{Base: base, Stonewall: stonewall, Workers: workers, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return fmt.Errorf("sim forge: %w", err)
			}
			rep.Report(cmd.OutOrStdout())
			fmt.Fprintf(cmd.OutOrStdout(), "  %d points simulated in %.1f s\n", len(pts), time.Since(t0).Seconds())
			if points != "" {
				pf, err := os.Create(points)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := rep.WritePoints(pf); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "FORGE results CSV (default: found as ../shared/data/"+forge.File+")")
	f.StringVar(&points, "points", "", "write every (pattern, forwarders) point, measured and modelled, to this CSV file")
	f.DurationVar(&stonewall, "stonewall", 5*time.Second, "virtual time each point runs for (FORGE's runs stopped at 60 s)")
	f.IntVar(&workers, "workers", runtime.NumCPU(), "points simulated in parallel")
	f.IntVar(&fileConc, "file-concurrency", experiment.ForgeConfig().FileConcurrency, "most accesses to one file served at once across servers (GPFS-like tokens; 0: no limit, PVFS-like)")
	return cmd
}

// simDynamic runs cfg with every I/O node's algorithm chosen each period
// by dcfg's driver (package selection; its schedulers from from), and
// prints the makespan and where each node spent its time.
func simDynamic(cmd *cobra.Command, cfg sim.Config, p workload.Pattern, from string, dcfg selection.DriverConfig, state string) error {
	names := strings.Split(from, ",")
	for _, n := range names {
		if !slices.Contains(sched.Names(), n) {
			return fmt.Errorf("sim run: --select-from: unknown scheduler %q (known: %v)", n, sched.Names())
		}
	}
	dcfg.Bandit.Schedulers = names
	if state != "" && dcfg.Patterns == nil {
		return errors.New("sim run: --select-state needs --scheduler pattern")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xd1a))
	d, err := selection.NewDriver(dcfg, cfg.IONodes, rng)
	if err != nil {
		return fmt.Errorf("sim run: %w", err)
	}
	kbs := cfg.IONodes
	if d.Shared() {
		kbs = 1
	}
	if state != "" {
		if err := loadKnowledge(state, d, kbs); err != nil {
			return fmt.Errorf("sim run: %w", err)
		}
	}
	res, err := eval.RunDriver(cmd.Context(), cfg, d, rng, nil)
	if err != nil {
		return fmt.Errorf("sim run: %w", err)
	}
	if state != "" {
		if err := saveKnowledge(state, d, kbs); err != nil {
			return fmt.Errorf("sim run: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	how := "AGIOS's armed bandit"
	if dcfg.Policy != "" {
		how = dcfg.Policy
	}
	if dcfg.Shared {
		how += ", one choice for every node"
	}
	if dcfg.Patterns != nil {
		how += ", pattern matching"
	}
	fmt.Fprintf(out, "scenario   %s, %d I/O nodes, dynamic selection (%s) among %s every %v\n", p, cfg.IONodes, how, from, dcfg.Period)
	fmt.Fprintf(out, "makespan   %.3f s\nbandwidth  %.1f MB/s\nchanges    %d\n", res.Makespan.Seconds(), res.Bandwidth/1e6, d.Changes)
	if kb := d.Patterns(0); kb != nil {
		fmt.Fprintf(out, "patterns   %d known on node 0\n", kb.Len())
	}
	for n := range cfg.IONodes {
		t := d.TimeIn(n)
		var parts []string
		for _, name := range names {
			if t[name] > 0 {
				parts = append(parts, fmt.Sprintf("%s %v", name, t[name]))
			}
		}
		fmt.Fprintf(out, "node %d     %s\n", n, strings.Join(parts, ", "))
	}
	return nil
}

// loadKnowledge restores the driver's kbs knowledge bases (one per I/O
// node, or one shared) from path, a JSON array; a missing file leaves them
// empty.
func loadKnowledge(path string, d *selection.Driver, kbs int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("--select-state %s: %w", path, err)
	}
	if len(raw) != kbs {
		return fmt.Errorf("--select-state %s: %d knowledge bases, this run has %d (one per I/O node, or one with --select-shared)", path, len(raw), kbs)
	}
	for n, r := range raw {
		if err := json.Unmarshal(r, d.Patterns(n)); err != nil {
			return fmt.Errorf("--select-state %s: node %d: %w", path, n, err)
		}
	}
	return nil
}

// saveKnowledge writes the driver's kbs knowledge bases to path.
func saveKnowledge(path string, d *selection.Driver, kbs int) error {
	out := make([]*selection.KnowledgeBase, kbs)
	for n := range out {
		out[n] = d.Patterns(n)
	}
	return atomicfile.Write(path, func(w io.Writer) error { return json.NewEncoder(w).Encode(out) })
}
