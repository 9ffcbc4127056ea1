package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/eval"
)

func newEvalTuneCmd() *cobra.Command {
	var cfg eval.TuneConfig
	var seq string
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Run-time tuning of the forwarder's knobs in the simulator: static defaults, the best static setting, IOPathTune, the DQN and our pattern bandit",
		Long: `Tunes the forwarder's two dispatch knobs on every I/O node of the simulator while
IOR-like workloads run: the most requests merged into one access to a data server
(aggregate, 1 to 256, default 16) and the most accesses in flight to one data server (1 to
64, default 12), the knobs of adaptio forward --tune. Compared:

  static defaults    the forwarder's defaults
  best static        a grid search over every power of two of both knobs
  IOPathTune         the IOPathTune heuristic (Rashid et al.): one knob doubled or halved every 10 s
  DQN                a CAPES-style deep Q-network, one action a second, from scratch
  DQN, pre-trained   the same after --train-for of simulated I/O (its cost is reported)
  pattern bandit     ours: a bandit over the knobs' settings per workload pattern, which
                     climbs from the best setting known and jumps to a pattern's best
                     setting as soon as the pattern shows again (one decision a second)

Twelve workloads (file per process and shared, read and write, 32 KiB, 1 MiB and 16 MiB
requests, 1, 16 or 64 processes on each of --clients client nodes) run alone for --phase
each; then a dynamic run goes through --sequence, each phase moving what the defaults move
in --phase. Bandwidth is reported against the best static setting, and the time to converge
(the first second from which the mean bandwidth over the rest of the run or phase reaches
--threshold of the best static's).

Writes tune-steady.csv, tune-phases.csv, tune-summary.csv and report.html to --out and
prints the summary. Takes about 15 minutes on 2 cores with the defaults.`,
		Example: `  adaptio eval tune
  adaptio eval tune --phase 5m --train-for 4h --out eval-tune`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, s := range strings.Split(seq, ",") {
				i, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					return fmt.Errorf("eval tune: --sequence %q: want workload numbers 1 to %d, comma-separated", seq, len(eval.TuneWorkloads()))
				}
				cfg.Sequence = append(cfg.Sequence, i-1)
			}
			if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
				return fmt.Errorf("eval tune: %w", err)
			}
			cfg.Command, cfg.Log = commandLine(), cmd.ErrOrStderr()
			r, err := eval.RunTune(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval tune: %w", err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-18s %11s %12s %15s %15s %14s %14s %6s\n", "tuner", "steady mean", "steady worst", "dynamic/static", "dynamic/oracle", "conv 1st (s)", "conv again (s)", "missed")
			show := func(d time.Duration) string {
				if d < 0 {
					return "never"
				}
				return fmt.Sprint(d.Seconds())
			}
			for _, s := range r.Summary() {
				fmt.Fprintf(w, "%-18s %11.2f %12.2f %15.2f %15.2f %14s %14s %6d\n", s.Tuner, s.SteadyMean, s.SteadyMin, s.Dynamic, s.Oracle, show(s.ConvergeFirst), show(s.ConvergeRevisit), s.Missed)
			}
			fmt.Fprintf(w, "DQN pre-training: %v simulated, %d actions, %v wall\n", r.TrainSim, r.TrainSteps, r.TrainWall.Round(time.Second))
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	var names []string
	for i, w := range eval.TuneWorkloads() {
		names = append(names, fmt.Sprintf("%d %s", i+1, w.Name()))
	}
	def := make([]string, len(eval.DefaultTuneSequence))
	for i, k := range eval.DefaultTuneSequence {
		def[i] = strconv.Itoa(k + 1)
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Phase, "phase", 3*time.Minute, "how long a workload runs under the defaults (at least 1m)")
	f.IntVar(&cfg.Clients, "clients", 4, "client nodes")
	f.IntVar(&cfg.IONodes, "io-nodes", 1, "I/O nodes, each with its own tuner")
	f.StringVar(&seq, "sequence", strings.Join(def, ","), "the dynamic run's workloads: "+strings.Join(names, ", "))
	f.DurationVar(&cfg.TrainFor, "train-for", 2*time.Hour, "simulated I/O the pre-trained DQN learns from (0: no pre-trained DQN)")
	f.Float64Var(&cfg.Threshold, "threshold", 0.9, "share of the best static bandwidth that counts as converged")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.IntVar(&cfg.Workers, "workers", runtime.GOMAXPROCS(0), "parallel simulations (results do not depend on it)")
	f.StringVar(&cfg.Out, "out", "eval-tune", "output directory (created)")
	return cmd
}
