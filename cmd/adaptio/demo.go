package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/demo"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/workload"
)

// newDemoCmd is "adaptio demo": the whole stack end to end, a live view, a report.
func newDemoCmd() *cobra.Command {
	var cfg demo.Config
	var static, phaseBytes, fppBytes string
	var noMix, quiet, rank, alignedWindows bool
	var rankSettings, rankStatistic, rankSave, rankReal string
	var verbose bool
	var demoMooseFS forwardConfig // its --moosefs-* settings
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole stack end to end and watch it learn (live view, web dashboard, report.html)",
		Long: `demo runs the online experiment of Bez et al., "Adaptive Request Scheduling for the I/O
Forwarding Layer using Reinforcement Learning" (FGCS 2020, section V-C): client processes
write, then read, a shared file in 32 KiB 1D-strided requests, again and again, mixed with
file-per-process and shared-contiguous phases, while the Council detects each I/O node's
access pattern and learns which TWINS window serves it best. An iteration is one pass of
every phase.

By default it starts, in this one process, a Council service (embedded NATS, learned state
in --state), an emulated PFS of 4 data servers with the hard-disk model, 4 forwarding
daemons running TWINS, each with an Announcer, and the clients; real bytes move through
the real daemons. With --sim the same experiment runs in the simulator, in virtual time,
many iterations in seconds.

While it runs: a live view on stdout, refreshed each second (one line per second when
stdout is not a terminal), with the iterations done of --iterations and the time left, and
a web dashboard (--http). At the end, or on Ctrl-C, it saves the learned state and writes
--report: a headline comparing learning with the static windows, execution time per
iteration (the paper's Fig. 6), the window in force over time (Fig. 7), the value
estimates (Fig. 8) and the same workload under each static window. On the real stack the
static windows run in the simulator, alongside, unless --compare-real runs them on the
real stack after learning (7 windows x --compare iterations, then the best again: about 5
more minutes at the defaults); the report's headline says which.

Files written: --report (default report.html); in --state (default ./adaptio-state): the
learned state (a second run continues learning from it) and the decision log of the last
run (decisions-sim.jsonl with --sim).`,
		Example: `  adaptio demo                       # the real stack, 48 iterations (about 8 minutes)
  adaptio demo --sim                 # 120 iterations in the simulator, in seconds
  adaptio demo --sim --static 8ms    # no learning, one fixed window, for comparison
  adaptio demo --jobs 2 --iterations 4 --phase-bytes 64MiB
                                     # two jobs sharing the I/O nodes, the Council learning from each
  adaptio demo --http 127.0.0.1:0    # dashboard on a free port (printed at start)
  adaptio demo --backend posix:/mnt/mfs/scratch --layout moosefs --compare-real
                                     # over a mounted MooseFS: learning, then every static window`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requirePositive(cmd, "processes", "iterations", "nodes", "servers"); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			if static != "" {
				w, err := time.ParseDuration(static)
				if err != nil {
					return fmt.Errorf("demo: --static %q: %w (want a window such as 250us or 8ms)", static, err)
				}
				cfg.Static = w
			}
			if phaseBytes != "" {
				b, err := workload.ParseSize(phaseBytes)
				if err != nil {
					return fmt.Errorf("demo: --phase-bytes: %w", err)
				}
				cfg.PhaseBytes = b
			}
			if fppBytes != "" {
				b, err := workload.ParseSize(fppBytes)
				if err != nil {
					return fmt.Errorf("demo: --fpp-bytes: %w", err)
				}
				cfg.FPPBytes = b
			}
			cfg.Mix = !noMix
			cfg.Backend = strings.TrimPrefix(cfg.Backend, "posix:")
			mfs, mfsErr := demoMooseFS.mooseFS()
			if mfsErr != nil {
				return fmt.Errorf("demo: %w", mfsErr)
			}
			cfg.MooseFS = mfs
			cfg.ReferenceWindows = !alignedWindows
			if !quiet {
				cfg.Out = os.Stdout
				cfg.TTY = demo.IsTerminal(os.Stdout)
			}
			level := slog.LevelError
			if verbose {
				level = slog.LevelInfo
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			if !rank && (rankSave != "" || rankReal != "" || cmd.Flags().Changed("rank-statistic") || cmd.Flags().Changed("rank-settings")) {
				return fmt.Errorf("demo: --rank-settings, --rank-statistic, --rank-save and --rank-real go with --rank")
			}
			if rank {
				settings, err := demo.ParseSettings(rankSettings)
				if err != nil {
					return err
				}
				opts := demo.RankOptions{Statistic: rankStatistic, Progress: cmd.ErrOrStderr()}
				if rankReal != "" {
					old, err := readRanking(rankReal)
					if err != nil {
						return err
					}
					opts.Real = &old
				}
				r, err := demo.Rank(cmd.Context(), cfg, settings, opts)
				if err != nil {
					return err
				}
				r.Write(cmd.OutOrStdout())
				if rankSave != "" {
					if err := saveRanking(rankSave, r); err != nil {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "rank: saved to %s\n", rankSave)
				}
				return nil
			}
			if cfg.Jobs == 2 {
				_, err := demo.RunJobs(cmd.Context(), cfg)
				return err
			}
			if cfg.Jobs != 0 {
				return fmt.Errorf("demo: --jobs %d: want 2 (the two-job scenario)", cfg.Jobs)
			}
			_, err := demo.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&cfg.Sim, "sim", false, "run the experiment in the simulator, in virtual time")
	f.IntVar(&cfg.Jobs, "jobs", 0, "2: the two-job scenario instead: a job writing then reading a shared file in 1D-strided requests (--phase-bytes, --request-size) and a job reading a file per process (1 MiB requests, --fpp-bytes), each with half of --processes and its clients tagged with its job id, share the I/O nodes, every daemon with its QoS gate (adaptio forward --qos); the Council detects each job's pattern in what each node reports. The strided job runs --iterations iterations while the readers read again and again (with --sim: --iterations half-seconds of virtual time); the live view shows each decision's window and context and what the Council saw of each job, the report (--report) each job's bandwidth and bytes, the total, Jain's index and every decision")
	f.DurationVar(&cfg.Duration, "duration", 0, "stop after this much run time (virtual time with --sim); 0: run all iterations")
	f.IntVar(&cfg.Iterations, "iterations", 0, "experiment iterations, each one pass of every phase (default 120 with --sim, 48 otherwise: about 8 minutes on the real stack, enough for learning to settle in its second half)")
	f.StringVar(&cfg.StateDir, "state", demo.DefaultStateDir, "directory of the learned state and the decision log; a second run continues learning")
	f.StringVar(&static, "static", "", "use this fixed TWINS window (125us, 250us, 500us, 1ms, 2ms, 4ms or 8ms) instead of learning")
	f.StringVar(&cfg.HTTP, "http", "127.0.0.1:8080", "dashboard address (port 0, or the port taken: a free port, printed at start; empty: no dashboard)")
	f.StringVar(&cfg.Report, "report", demo.DefaultReport, `report file ("-": none)`)
	f.IntVar(&cfg.Processes, "processes", demo.DefaultProcesses, "client processes")
	f.IntVar(&cfg.Nodes, "nodes", demo.DefaultNodes, "I/O nodes (forwarding daemons)")
	f.IntVar(&cfg.Servers, "servers", demo.DefaultServers, "data servers of the emulated PFS; with --backend, the layout's data servers (queues): with --layout moosefs the chunk servers")
	f.StringVar(&cfg.Backend, "backend", "", "real stack: forward to this directory, e.g. a mounted parallel file system (posix:DIR or DIR), instead of the emulated PFS; the clients' files go in DIR/demo, removed at each iteration's end; needs --compare-real or --compare -1 (default: the emulated PFS)")
	f.StringVar(&cfg.Layout, "layout", posix.LayoutStatic, "with --backend: the posix layout kind, as adaptio forward --layout ("+strings.Join(posix.Kinds(), ", ")+"); static stripes 64 KiB over --servers queues")
	f.StringVar(&demoMooseFS.MooseFSExec, "moosefs-exec", "", "with --layout moosefs: as adaptio forward --moosefs-exec")
	f.StringVar(&demoMooseFS.MooseFSList, "moosefs-servers", "", "with --layout moosefs: as adaptio forward --moosefs-servers")
	f.StringVar(&demoMooseFS.MooseFSMaster, "moosefs-master", "", "with --layout moosefs: as adaptio forward --moosefs-master")
	f.BoolVar(&rank, "rank", false, "instead of learning: run the experiment under each of --rank-settings on the real stack and in the simulator (--compare iterations each), and print both rankings per phase with Spearman's rho")
	f.StringVar(&rankStatistic, "rank-statistic", demo.StatMedian, "with --rank: each setting's figure from its --compare iterations, median (one outlying iteration does not move it, from 3 iterations) or mean")
	f.StringVar(&rankSave, "rank-save", "", "with --rank: also write the ranking, every iteration's time included, as JSON to this file")
	f.StringVar(&rankReal, "rank-real", "", "with --rank: reuse the real-stack side of a ranking saved with --rank-save (same workload flags) and run only the simulator, e.g. to compare one set of real runs with several --sim-dispatch-delay values")
	f.StringVar(&rankSettings, "rank-settings", "125us,250us,500us,1ms,2ms,4ms,8ms,fifo", "with --rank: the static windows and fifo to rank")
	f.StringVar(&phaseBytes, "phase-bytes", "", "bytes each shared-file phase writes or reads, e.g. 64MiB (default 1GiB with --sim, 256MiB otherwise)")
	f.StringVar(&fppBytes, "fpp-bytes", "", "bytes the file-per-process write moves in all (default an eighth of --phase-bytes: it runs as fast under every window)")
	f.BoolVar(&noMix, "no-mix", false, "run only the shared 1D-strided write and read phases")
	f.StringVar(&cfg.Policy, "policy", demo.DefaultPolicy, "bandit policy (see adaptio eval)")
	f.Float64Var(&cfg.Epsilon, "epsilon", 0, "exploration probability (0: the policy's default, 0.15 for egreedy)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.IntVar(&cfg.Compare, "compare", 0, "iterations of each static-window run in the comparison (default 3; -1: skip)")
	f.IntVar(&cfg.ReadPasses, "read-passes", 0, "real stack: each read phase reads its file this many times in a row, as one phase, less noisy against its window's effect than one pass (0: 2 on the real stack, 1 with --sim and --rank)")
	f.BoolVar(&cfg.CompareReal, "compare-real", false, "run the static-window comparison on the real stack after learning (7 windows x --compare iterations, then each window that came out best in a phase or the cycle --compare iterations again, its row the mean of both runs; default: in the simulator)")
	f.Float64Var(&cfg.Pace, "pace", 0, "with --sim: virtual seconds per wall-clock second, to watch it live (0: as fast as possible)")
	f.BoolVar(&alignedWindows, "aligned-windows", true, "TWINS windows are slots of one clock shared by every I/O node, which then never serve one data server together (--aligned-windows=false: the reference's windows, each starting at the first dispatch after the last ended, which drift apart node by node)")
	f.Float64Var(&cfg.ServerTimeScale, "server-time-scale", demo.DefaultServerTimeScale, "multiply the data servers' modelled service times (slower disks), on the real stack and in the simulator alike")
	f.DurationVar(&cfg.Interval, "interval", demo.DefaultInterval, "how often each Announcer reports and the Council decides (the papers': 1s); the demo's shared strided reads last about a second, and a shorter interval gives learning more than one reward of them a phase; the simulator observes at the same interval")
	addCreditFlags(f, &cfg.Credit, &cfg.MaxPull, demo.DefaultMaxPull, "")
	addRoundCreditFlag(f, &cfg.Credit)
	f.DurationVar(&cfg.SimDispatchDelay, "sim-dispatch-delay", 0, "in the simulator, an idle I/O node dispatches this long after a request arrives, merging what arrived meanwhile, as a real daemon's worker wakes late on a shared host (0: at once); for --rank's comparison with the real stack")
	f.BoolVar(&cfg.Shadow, "shadow", false, "run the Council in shadow mode: the I/O nodes keep the default window (1 ms), the Council learns and logs what it would have chosen (learned_ns in decisions.jsonl; adaptio eval log --shadow summarises it)")
	f.BoolVar(&cfg.NoPlan, "no-plan", false, "the Council decides one window only, as the papers'; by default each decision also carries a window for reads and one for writes, which the I/O nodes apply as soon as their requests turn (phases shorter than a decision get their own window)")
	f.BoolVar(&cfg.ServerElevator, "server-elevator", false, "the data servers serve their queued accesses in disk-address (C-LOOK) order, as the Linux block layer sorts them, instead of arrival order, on the real stack and in the simulator alike")
	f.Int64Var(&cfg.ServerReadAhead, "server-read-ahead", 0, "the data servers' page-cache chunk in bytes, on the real stack and in the simulator alike (0: 128 KiB; negative: no page cache, every read goes to the modelled disk)")
	f.BoolVar(&quiet, "quiet", false, "no live view on stdout")
	f.BoolVar(&verbose, "verbose", false, "log progress on stderr")
	return cmd
}

// readRanking reads a ranking saved by demo --rank --rank-save.
func readRanking(path string) (demo.Ranking, error) {
	f, err := os.Open(path)
	if err != nil {
		return demo.Ranking{}, fmt.Errorf("demo: --rank-real: %w", err)
	}
	defer f.Close()
	r, err := demo.ReadRanking(f)
	if err != nil {
		return demo.Ranking{}, fmt.Errorf("demo: --rank-real %s: %w", path, err)
	}
	return r, nil
}

// saveRanking writes r to path as JSON, whole or not at all.
func saveRanking(path string, r demo.Ranking) error {
	if err := atomicfile.Write(path, r.Save); err != nil {
		return fmt.Errorf("demo: --rank-save: %w", err)
	}
	return nil
}
