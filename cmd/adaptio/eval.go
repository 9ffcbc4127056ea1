package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/labels"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
	"github.com/adaptio/adaptio/workload"
)

// newEvalCmd groups the offline evaluations of the papers (Bez et al., FGCS 2020, V-B,
// Bez et al., SBAC-PAD 2019, Tables VI-VII) and the FORGE bandit evaluation.
func newEvalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Offline evaluations of the bandits and of detection, with CSVs and an HTML report",
		Long: `Offline evaluations, reproducing the papers' and judging the alternatives:

  adaptio eval bandit  the bandits on the simulator's dataset (Bez et al., FGCS 2020, Fig. 4-5, Tables II-IV)
  adaptio eval detect  detection-guided window choice vs a fixed 1 ms window (Bez et al., SBAC-PAD 2019, Tables VI-VII)
  adaptio eval forge   the bandits on real FORGE measurements (MareNostrum 4 by default; any machine's file)
  adaptio eval generalise  policies picked on one machine, unchanged on synthetic machines and the simulator's data
  adaptio eval labels  the Council's detection on a real run, from its decision log and the run's phases
  adaptio eval tune    run-time tuning of the forwarder's knobs in the simulator (Rashid et al., IOPathTune): IOPathTune, a DQN, ours

The first three write CSV files and one self-contained report.html (inline SVG, nothing
loaded from the network) to --out. Progress goes to stderr.`,
	}
	cmd.AddCommand(newEvalBanditCmd(), newEvalForgeCmd(), newEvalDetectCmd(), newEvalLabelsCmd(), newEvalLogCmd(), newEvalGeneraliseCmd(), newEvalSelectCmd(), newEvalTuneCmd())
	return cmd
}

// simFlags registers the simulation flags shared by the subcommands.
// stepsUsage is the help of --steps.
func simFlags(cmd *cobra.Command, c *eval.Config, steps int, stepsUsage string) {
	f := cmd.Flags()
	f.IntVar(&c.Reps, "reps", 100, "repetitions of every simulation (papers: 100)")
	f.IntVar(&c.Bin, "bin", 10, "observations per bin (papers: 10)")
	f.IntVar(&c.Steps, "steps", steps, stepsUsage)
	f.Uint64Var(&c.Seed, "seed", 1, "base random seed; every (context, repetition) derives its own stream")
	f.IntVar(&c.Workers, "workers", runtime.NumCPU(), "parallel workers (results do not depend on it)")
}

// selectSpecs keeps the specs named in list (all if list is empty): a name
// equal to a spec's label selects that spec, otherwise every spec of that
// policy.
func selectSpecs(all []eval.Spec, list string) ([]eval.Spec, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var out []eval.Spec
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		n := len(out)
		for _, s := range all {
			if s.Label == name {
				out = append(out, s)
			}
		}
		if len(out) == n {
			for _, s := range all {
				if s.Policy == name {
					out = append(out, s)
				}
			}
		}
		if len(out) == n {
			var known []string
			for _, s := range all {
				known = append(known, fmt.Sprintf("%q", s.Label))
			}
			return nil, fmt.Errorf("eval: unknown policy %q (known: %s, or a policy name)", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

func newEvalBanditCmd() *cobra.Command {
	var cfg eval.BanditConfig
	var policies string
	cmd := &cobra.Command{
		Use:   "bandit",
		Short: "Bandits on the simulator's dataset: Bez et al., FGCS 2020, Fig. 4, Fig. 5, Tables II and IV for every policy",
		Long: `Replays the papers' offline evaluation (Bez et al., FGCS 2020, V-B) on the simulator's dataset:
for every scenario, the arms are the TWINS windows and the reward of a window is a
random per-second bandwidth measured with it (--data DIR/observations.csv, TWINS rows,
idle seconds left out). Precision is the share of choices of the window with the
highest mean bandwidth, performance the chosen window's mean bandwidth over the best's,
both averaged over --reps repetitions in bins of --bin observations.

Writes to --out: curves.csv (every policy, scenario, bin), fig4.csv (egreedy at
epsilon 0.05..0.70 on patterns A-F), fig5.csv (A-F interleaved), table2.csv
(precision improvement first->last bin by operation), table4.csv (A-F last bin),
summary.csv (targets per policy) and report.html.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			specs, err := selectSpecs(eval.DefaultSpecs(0), policies)
			if err != nil {
				return err
			}
			cfg.Specs = specs
			if cfg.Data, err = gridDir(cmd.Context(), cfg.Data, false, os.Stderr); err != nil {
				return fmt.Errorf("eval bandit: %w", err)
			}
			cfg.Log = os.Stderr
			cfg.Command = commandLine()
			r, err := eval.RunBandit(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval bandit: %w", err)
			}
			fmt.Fprintf(os.Stdout, "%-36s %10s %10s %10s %10s\n", "policy", "perf med", "perf minAF", "prec@100", "prec last")
			for _, s := range append(r.Summaries, r.SharedSummaries...) {
				fmt.Fprintf(os.Stdout, "%-36s %10.3f %10.3f %10.3f %10.3f\n", s.Label, s.LastPerf.Median, s.PatternPerfMin, s.Head100Prec.Mean, s.LastPrec.Median)
			}
			fmt.Fprintf(os.Stderr, "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	simFlags(cmd, &cfg.Config, 0, "steps per context (0: as many as the context's least-measured arm has measurements)")
	cmd.Flags().StringVar(&cfg.Data, "data", "", "dataset directory with observations.csv (adaptio sim grid --out DIR); empty: the simulator's grid, generated in the user's cache directory on first use")
	cmd.Flags().StringVar(&cfg.Out, "out", "eval-bandit", "output directory (created)")
	cmd.Flags().IntVar(&cfg.Neighbors, "neighbors", 3, "also evaluate learning shared with this many nearest scenarios (0: not)")
	cmd.Flags().StringVar(&policies, "policies", "", "comma-separated policy names or labels to evaluate (default: all)")
	return cmd
}

func newEvalForgeCmd() *cobra.Command {
	var cfg eval.ForgeConfig
	var policies string
	cmd := &cobra.Command{
		Use:   "forge",
		Short: "Bandits on real FORGE measurements: the number of forwarders per access pattern",
		Long: `Evaluates every bandit policy on a FORGE results file (';'-separated, with a header; the
default is MareNostrum 4's, any machine's works): a context is an access pattern (clients,
processes, layout, spatiality, request size, operation), the arms are the numbers of I/O
forwarders the file measured (0, direct access without forwarders, included and labelled
"direct") and the reward of an arm is one of its measured bandwidths (MiB/s) drawn at
random; --steps steps per pattern, bins of --bin. Patterns not measured with every
forwarder count are skipped and named on stderr.

Each policy runs cold (every pattern from zero) and shared (a pattern learned after all
others, starting from the prior of its --neighbors nearest patterns).

Writes to --out: forge_curves.csv, forge_summary.csv and report.html.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(cfg.Path); err != nil {
				return fmt.Errorf("eval forge: FORGE results %s not found (pass --data): %w", cfg.Path, err)
			}
			if cfg.Steps < 1 {
				return fmt.Errorf("eval forge: --steps %d: want a positive number of steps per pattern (FORGE has only a few measurements per arm, drawn again at every step)", cfg.Steps)
			}
			if cfg.Neighbors < 1 {
				return fmt.Errorf("eval forge: --neighbors %d: want at least 1 (the shared mode learns from the nearest patterns; the cold columns are learning without sharing)", cfg.Neighbors)
			}
			specs, err := selectSpecs(eval.DefaultSpecs(cfg.Neighbors), policies)
			if err != nil {
				return err
			}
			cfg.Specs = specs
			cfg.Log = os.Stderr
			cfg.Command = commandLine()
			r, err := eval.RunForge(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval forge: %w", err)
			}
			fmt.Fprintf(os.Stdout, "%-28s %11s %11s %11s %11s %11s %11s\n", "policy", "cold first", "cold last", "cold worst", "shr first", "shr last", "shr worst")
			for _, s := range r.Summaries {
				fmt.Fprintf(os.Stdout, "%-28s %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f\n", s.Label, s.ColdFirst.Mean, s.ColdLast.Median, s.ColdLast.Min, s.SharedFirst.Mean, s.SharedLast.Median, s.SharedLast.Min)
			}
			fmt.Fprintf(os.Stderr, "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	simFlags(cmd, &cfg.Config, 200, "steps per pattern, >= 1 (FORGE holds a few measurements per arm, drawn again at every step)")
	cmd.Flags().StringVar(&cfg.Path, "data", "../shared/data/forge/marenostrum-4-results.csv", "FORGE results file (';'-separated)")
	cmd.Flags().StringVar(&cfg.Out, "out", "eval-forge", "output directory (created)")
	cmd.Flags().IntVar(&cfg.Neighbors, "neighbors", 3, "nearest known patterns a new pattern's prior comes from (shared mode)")
	cmd.Flags().StringVar(&policies, "policies", "", "comma-separated policy names or labels to evaluate (default: all)")
	return cmd
}

func newEvalGeneraliseCmd() *cobra.Command {
	cfg := eval.GeneraliseConfig{Machines: eval.DefaultSyntheticMachines()}
	var policies string
	var noSim bool
	cmd := &cobra.Command{
		Use:   "generalise",
		Short: "Policies picked on one machine, judged unchanged on synthetic machines and on the simulator's data",
		Long: `Judges bandit policies, with the options they have on the reference machine (--reference,
MareNostrum 4's FORGE file by default), unchanged on files they were not picked on: six
synthetic machines (3 to 8 arms, direct access best for some patterns, noisier
repetitions, flat patterns, few repetitions; each written to --out/machines/NAME.csv in
FORGE format, so that adaptio eval forge --data reads it) and the simulator's dataset
(--sim-data; empty: the simulator's grid, generated in the user's cache directory on first
use; --no-sim leaves it out). Each policy runs cold and shared, as in adaptio eval forge.

Targets on every file: first-bin mean >= 0.85, last-bin median >= 0.995, worst pattern's
last bin >= 0.95. Writes generalise_summary.csv and report.html to --out; the table on
stdout marks the targets each policy meets.

Two yardsticks independent of the policy follow: what the neighbours' prior predicts (the
most a first bin can take from sharing alone), and the identification reference: on every
pattern, sequential halving spends all the pulls before the last bin finding the best arm,
and is scored by the arm it names. It is a yardstick, not a strict bound; a worst pattern
whose reference is below 0.95 is one whose noise, more than the policy, keeps its last bin
below the target.`,
		Example: `  adaptio eval generalise --policies thompson,thompson-warm --reps 30 --out eval-generalise`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Steps < 1 || cfg.Neighbors < 1 {
				return fmt.Errorf("eval generalise: --steps %d and --neighbors %d: want >= 1 each", cfg.Steps, cfg.Neighbors)
			}
			if cfg.Reference != "" {
				if _, err := os.Stat(cfg.Reference); err != nil {
					fmt.Fprintf(os.Stderr, "eval generalise: reference machine %s not found: left out (pass --reference FILE)\n", cfg.Reference)
					cfg.Reference = ""
				}
			}
			specs, err := selectSpecs(generaliseSpecs(cfg.Neighbors), policies)
			if err != nil {
				return err
			}
			cfg.Specs = specs
			if !noSim {
				if cfg.SimData, err = gridDir(cmd.Context(), cfg.SimData, false, os.Stderr); err != nil {
					return fmt.Errorf("eval generalise: %w", err)
				}
			}
			cfg.Log = os.Stderr
			cfg.Command = commandLine()
			rows, err := eval.RunGeneralise(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval generalise: %w", err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-26s %-7s %-30s %8s %8s %8s %8s  %s\n", "policy", "mode", "file", "first", "last", "worst", "ident", "targets")
			for _, r := range rows {
				ok := "met"
				if !r.Met() {
					ok = "missed"
				}
				fmt.Fprintf(w, "%-26s %-7s %-30s %8.3f %8.3f %8.3f %8.3f  %s\n", r.Label, r.Mode, r.File, r.FirstMean, r.LastMedian, r.Worst, r.WorstIdent, ok)
			}
			fmt.Fprintf(w, "\n(ident: the worst pattern's identification reference, below)\n")
			fmt.Fprintf(w, "\nwhat the neighbours predict (each known perfectly; a first bin above these needs the pattern's own rewards):\n")
			fmt.Fprintf(w, "%-30s %9s %15s %13s\n", "file", "prior hit", "prior favourite", "prior top two")
			seen := map[string]bool{}
			for _, r := range rows {
				if !seen[r.File] {
					seen[r.File] = true
					fmt.Fprintf(w, "%-30s %9.3f %15.3f %13.3f\n", r.File, r.Prior.Hit, r.Prior.Favourite, r.Prior.TopTwo)
				}
			}
			fmt.Fprintf(w, "\nwhat identification alone reaches: %s\n", eval.IdentificationNote(cfg.Steps, cfg.Bin))
			fmt.Fprintf(w, "%-30s %14s %14s  %s\n", "file", "lowest ident", "below target", "lowest pattern")
			clear(seen)
			for _, r := range rows {
				if !seen[r.File] {
					seen[r.File] = true
					fmt.Fprintf(w, "%-30s %14.3f %14d  %s\n", r.File, r.Ident.Worst, r.Ident.Below, r.Ident.WorstEnv)
				}
			}
			fmt.Fprintf(os.Stderr, "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	simFlags(cmd, &cfg.Config, 200, "steps per pattern, >= 1 (FORGE holds a few measurements per arm, drawn again at every step)")
	f := cmd.Flags()
	f.StringVar(&cfg.Reference, "reference", "../shared/data/forge/marenostrum-4-results.csv", "FORGE file of the machine the policies were picked on (left out with a note if absent; empty: none)")
	f.StringVar(&cfg.SimData, "sim-data", "", "the simulator's dataset directory (adaptio sim grid --out DIR); empty: the grid in the user's cache directory")
	f.BoolVar(&noSim, "no-sim", false, "leave the simulator's dataset out")
	f.StringVar(&cfg.Out, "out", "eval-generalise", "output directory (created)")
	f.IntVar(&cfg.Neighbors, "neighbors", 3, "nearest known patterns a new pattern's prior comes from (shared mode)")
	f.StringVar(&policies, "policies", "thompson-warm,thompson-pool,egreedy eps=0.15 (papers)", "comma-separated policy names or labels to evaluate (empty: all; a registered policy without a label runs with its defaults)")
	return cmd
}

// generaliseSpecs is eval.DefaultSpecs followed by every registered policy
// without a spec there, with its defaults (e.g. thompson-np), so that any
// policy can be judged by name.
func generaliseSpecs(neighbors int) []eval.Spec {
	all := eval.DefaultSpecs(neighbors)
	for _, name := range bandit.Names() {
		if !slices.ContainsFunc(all, func(s eval.Spec) bool { return s.Policy == name }) {
			all = append(all, eval.Spec{Label: name, Policy: name, Options: bandit.Options{Neighbors: neighbors}})
		}
	}
	return all
}

func newEvalSelectCmd() *cobra.Command {
	var cfg eval.SelectConfig
	var from, total, policies, periods string
	cmd := &cobra.Command{
		Use:   "select",
		Short: "Dynamic scheduler selection against every static algorithm on the JLESC AGIOS selection report's twelve tests, over seeds",
		Long: `Runs the JLESC AGIOS selection report's twelve MPI-IO Test tests in the simulator (a shared file, contiguous or
1D-strided, requests of 32 KiB, 4 MiB or 16 MiB, 32 or 64 processes, --total bytes but at
least 4 requests per process, so that contiguous and strided differ; written then read
--repeat times) under each algorithm of --select-from and under dynamic selection choosing
among them every --select-period on every I/O node, for --seeds seeds from --seed on. The
I/O nodes get --threads dispatch slots (2 by default, so that requests queue and the
algorithm matters; with the simulator's default every algorithm but TWINS gives the same
makespan).

--policy settle (the default, the one adaptio forward --scheduler dynamic runs) explores each
algorithm for 3 periods in lockstep on every node and, on a workload that alternates writes
and reads, each close contender for a whole write-read cycle, then settles on the least
estimated time and changes only for one estimated 5% faster. --policy agios is AGIOS's armed bandit; a
bandit policy (thompson, ...) draws instead; --shared makes one choice for every I/O node
from their summed bandwidth (the simulator only). Judged from the 20th period on: runs must
last well beyond 20 periods (--repeat 30 at 1 s; --repeat 100 at --select-period 4s).
--policy and --select-period take comma-separated lists: every policy at every period runs
against the same static runs. Every static and dynamic run is one simulation, --workers of
them at once, the largest tests first; progress goes to stderr.

Writes select.csv (every test and seed), select_seeds.csv (per test over the seeds: min and
median) and report.html to --out; prints the table (one seed) or the summary.`,
		Example: `  adaptio eval select --repeat 30 --seeds 10
  adaptio eval select --repeat 100 --seeds 10 --select-period 4s
  adaptio eval select --repeat 30 --policy settle,thompson --shared`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Schedulers = strings.Split(from, ",")
			for _, n := range cfg.Schedulers {
				if !slices.Contains(sched.Names(), n) {
					return fmt.Errorf("eval select: --select-from: unknown scheduler %q (known: %v)", n, sched.Names())
				}
			}
			if err := requirePositive(cmd, "repeat", "io-nodes", "threads", "seeds", "workers"); err != nil {
				return fmt.Errorf("eval select: %w", err)
			}
			var err error
			if cfg.Total, err = workload.ParseSize(total); err != nil {
				return fmt.Errorf("eval select: --total: %w", err)
			}
			if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
				return fmt.Errorf("eval select: %w", err)
			}
			cfg.Command = commandLine()
			cfg.Progress = cmd.ErrOrStderr()
			if cfg.Variants, err = selectVariants(policies, periods, cfg.Shared); err != nil {
				return fmt.Errorf("eval select: %w", err)
			}
			rows, err := eval.RunSelect(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval select: %w", err)
			}
			w := cmd.OutOrStdout()
			if cfg.Seeds > 1 || len(cfg.Variants) > 1 {
				for _, vs := range eval.SummariseSelect(rows) {
					fmt.Fprintf(w, "%s\n%-32s %6s %7s %7s  %s\n", vs.Variant, "test", "within", "min", "median", "best static (seeds)")
					for _, s := range vs.Tests {
						var best []string
						for _, n := range cfg.Schedulers {
							if s.Best[n] > 0 {
								best = append(best, fmt.Sprintf("%s %d", n, s.Best[n]))
							}
						}
						fmt.Fprintf(w, "%-32s %3d/%-2d %7.3f %7.3f  %s\n", s.Test, s.Within, s.Seeds, s.Min, s.Median, strings.Join(best, ", "))
					}
					fmt.Fprintf(w, "on %d of %d seeds %s is within 5%% on every test\n\n", vs.SeedsAll, vs.Seeds, vs.Variant)
				}
				fmt.Fprintf(w, "within: seeds on which dynamic's bandwidth from its 20th period on is within 5%% of the best static's; min, median: that ratio\n")
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s/report.html\n", cfg.Out)
				return nil
			}
			fmt.Fprintf(w, "%-30s %-7s %9s %9s %8s %9s %7s %7s %7s\n", "test", "best", "best (s)", "dyn (s)", "changes", "makespan", "bw 1+", "bw 5+", "bw 20+")
			met := 0
			for _, r := range rows {
				fmt.Fprintf(w, "%-30s %-7s %9.2f %9.2f %8d %9.3f %7.3f %7.3f %7.3f\n", r.Test, r.Best, r.Static[r.Best].Seconds(), r.Dynamic.Seconds(), r.Changes, r.Ratio, r.From[0], r.From[1], r.From[2])
				if r.Within5Pct {
					met++
				}
			}
			fmt.Fprintf(w, "makespan: best static / dynamic; bw K+: dynamic's bandwidth from its Kth period on / the best static's\nfrom its 20th period on, dynamic is within 5%% of the best static algorithm on %d of %d tests\n", met, len(rows))
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "select-from", "mlf,to-agg,sjf,to,noop", "the algorithms (AGIOS's set by default)")
	f.StringVar(&periods, "select-period", "1s", "how often an I/O node may change algorithm; a comma-separated list runs each against the same static runs")
	f.StringVar(&policies, "policy", selection.PolicySettle, "settle: explore each algorithm in blocks, in lockstep, then keep the least estimated time (5% hysteresis); agios: AGIOS's armed bandit; else a bandit policy of adaptio eval bandit (e.g. thompson) over the same algorithms; a comma-separated list runs each against the same static runs")
	f.BoolVar(&cfg.Sequences, "sequences", false, "instead of the twelve tests, sequences of patterns whose best algorithms differ (each written then read in turn, --repeat times)")
	f.BoolVar(&cfg.Patterns, "patterns", false, "the JLESC AGIOS selection report's pattern matching: each period's access series joins a knowledge base (FastDTW) and the Markov chain's predicted next pattern chooses (with --policy: a policy per pattern)")
	f.BoolVar(&cfg.Shared, "shared", false, "one choice for every I/O node from their summed bandwidth, as the Council decides TWINS's window (AGIOS: each node alone)")
	f.IntVar(&cfg.IONodes, "io-nodes", 4, "I/O nodes")
	f.IntVar(&cfg.Threads, "threads", 2, "dispatch slots per I/O node")
	f.StringVar(&total, "total", "256MiB", "bytes per test and operation")
	f.IntVar(&cfg.Repeat, "repeat", 3, "write-then-read passes per test")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed (the first, with --seeds)")
	f.IntVar(&cfg.Seeds, "seeds", 1, "how many seeds run, from --seed on; above 1, the summary over them is printed")
	f.IntVar(&cfg.Workers, "workers", runtime.NumCPU(), "simulations run in parallel (each static and each dynamic run is one)")
	f.StringVar(&cfg.Out, "out", "eval-select", "output directory (created)")
	return cmd
}

// selectVariants parses eval select's --policy and --select-period lists:
// every policy at every period.
func selectVariants(policies, periods string, shared bool) ([]eval.SelectVariant, error) {
	var out []eval.SelectVariant
	for _, ps := range strings.Split(periods, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(ps))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--select-period: %q is not a positive duration (e.g. 1s,4s)", ps)
		}
		for _, p := range strings.Split(policies, ",") {
			p = strings.TrimSpace(p)
			if _, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: []string{"mlf", "sjf"}}, Policy: p, Period: d}, 1, rand.New(rand.NewPCG(1, 1))); err != nil {
				return nil, fmt.Errorf("--policy %q: %w", p, err)
			}
			out = append(out, eval.SelectVariant{Policy: p, Period: d, Shared: shared})
		}
	}
	return out, nil
}

func newEvalDetectCmd() *cobra.Command {
	var cfg eval.DetectConfig
	var kinds string
	cmd := &cobra.Command{
		Use:   "detect",
		Short: "Detection-guided window choice vs a fixed 1 ms window (Bez et al., SBAC-PAD 2019, Tables VI-VII)",
		Long: `Trains the detectors (tree, forest, network) on 70% of the centre rows of every TWINS
experiment of --data, then classifies every non-idle TWINS observation of --data (and of
--validation, if given) and picks the best window (highest experiment bandwidth in
summary.csv) of the scenario with the detected class. Counts the observations whose
scenario performs better or worse than with a fixed 1 ms window, by operation and number
of I/O nodes, beside an oracle (the true scenario's best window) and a static 125 µs window.

Writes to --out: table6.csv (improved), table7.csv (decreased), detect_summary.csv
(detection accuracy, performance relative to the oracle, gain over static) and report.html.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(kinds) != "" {
				cfg.Kinds = strings.Split(kinds, ",")
			}
			var err error
			if cfg.Data, err = gridDir(cmd.Context(), cfg.Data, false, os.Stderr); err != nil {
				return fmt.Errorf("eval detect: %w", err)
			}
			cfg.Log = os.Stderr
			cfg.Command = commandLine()
			r, err := eval.RunDetect(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("eval detect: %w", err)
			}
			for di, name := range r.Datasets {
				for _, c := range r.Counts[di] {
					fmt.Fprintf(os.Stdout, "%-10s %-14s improved %7d decreased %6d  perf/oracle %.4f  gain/static %+.2f%%\n",
						name, c.Decider, sum(c.Improved), sum(c.Decreased), c.RelPerf, 100*c.GainMean)
				}
			}
			fmt.Fprintf(os.Stderr, "wrote %s/report.html\n", cfg.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Data, "data", "", "dataset directory (observations.csv, summary.csv) to train on and judge (adaptio sim grid --out DIR); empty: the simulator's grid, generated in the user's cache directory on first use")
	f.StringVar(&cfg.Validation, "validation", "", "optional second dataset directory judged with the same models (e.g. from adaptio sim grid --validation --out DIR)")
	f.StringVar(&cfg.Out, "out", "eval-detect", "output directory (created)")
	f.StringVar(&kinds, "models", "tree,forest,mlp", "classifiers to train, comma-separated")
	f.BoolVar(&cfg.Default, "default-model", true, "also judge the embedded default model")
	f.IntVar(&cfg.PerExp, "per-experiment", 40, "training rows taken from the centre of each experiment")
	f.IntVar(&cfg.Trees, "trees", 0, "random forest size (0: 500)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed for the split and training")
	return cmd
}

func sum(m map[string]map[int]int) int {
	n := 0
	for _, x := range m {
		for _, v := range x {
			n += v
		}
	}
	return n
}

// commandLine is the command as invoked, for reports.
func commandLine() string { return strings.Join(append([]string{"adaptio"}, os.Args[1:]...), " ") }

func newEvalLabelsCmd() *cobra.Command {
	var decisions, phases, export string
	var skip time.Duration
	cmd := &cobra.Command{
		Use:   "labels --decisions LOG --phases CSV [--export DIR]",
		Short: "How well the Council labelled an application's phases (from its decision log)",
		Long: `Judges the Council's pattern detection on a real run: reads the Council's decision log
(adaptio council --decision-log FILE, one JSON line per round with its wall-clock time) and a
phase file naming what the application did when, and prints per phase the share of busy
node-seconds the Council labelled with the phase's class and operation, and what the others
were labelled.

The phase file is CSV with the header phase,start,end and one line per phase; a phase is
"CLASS op" (CLASS FPP, SC or SS; op read or write), the times RFC 3339, e.g. written around
each run of the application with date --rfc-3339=ns. An optional fourth column, bytes, gives
the bytes each phase moved (adaptio demo writes it in its phases.csv). An optional fifth,
node, is empty on a phase's own line; a line with a node index right after it gives that
I/O node's part of the phase (same name and start; the end of its last process, and their
bytes), and that node's seconds are then attributed by its own part; a node with several
lines has one per process (adaptio demo writes them), each moving its bytes at an even rate
from the phase's start to its own end, so a phase's tail, when few processes still run,
carries only their bytes:

  phase,start,end
  SS write,2026-11-25 17:50:01.123456789+00:00,2026-11-25 17:50:09.987654321+00:00

Each round stands for the second before it (the Announcers' default 1 s interval) and is
attributed to the phase that overlaps that second most, or, with bytes, to the phase that
moved the most bytes in it (at its mean rate, or its processes' when given): a second holding the end of a fast read phase
and the start of a slow write phase is the read's, whose requests make most of its report. --skip D leaves out the seconds within D of a phase's start or end, where one
report mixes two phases. scripts/ior-detect runs IOR through adaptio mount and calls this.

--export DIR also writes DIR/observations.csv: every busy node-second wholly inside a phase
(and not within --skip of its edges), with the features the I/O node measured, labelled with
the phase's class, in the schema of the simulator's data sets. adaptio detect train --data
takes DIR as a source, so detection learns from real runs too.`,
		Example: `  adaptio eval labels --decisions decisions.jsonl --phases phases.csv
  adaptio eval labels --decisions decisions.jsonl --phases phases.csv --skip 1s
  adaptio eval labels --decisions decisions.jsonl --phases phases.csv --skip 1s --export DIR/real
  adaptio detect train --data DIR/grid,synthetic-small,DIR/real`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if decisions == "" || phases == "" {
				return fmt.Errorf("eval labels: --decisions and --phases are required")
			}
			if skip < 0 {
				return fmt.Errorf("eval labels: --skip %v is negative", skip)
			}
			pf, err := os.Open(phases)
			if err != nil {
				return fmt.Errorf("eval labels: %w", err)
			}
			defer pf.Close()
			ps, err := eval.ReadPhases(pf)
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, phases)
			}
			df, err := os.Open(decisions)
			if err != nil {
				return fmt.Errorf("eval labels: %w", err)
			}
			defer df.Close()
			start := ps[0].Start
			secs, err := eval.ReadDecisionSeconds(df, start)
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, decisions)
			}
			acc := eval.LabelAccuracy(ps, secs, start, skip)
			if len(acc) == 0 {
				return fmt.Errorf("eval labels: no round of %s falls within a phase of %s (%d rounds, phases from %v to %v): do the clocks match?",
					decisions, phases, len(secs), ps[0].Start.Format(time.RFC3339), ps[len(ps)-1].End.Format(time.RFC3339))
			}
			fmt.Fprintln(cmd.OutOrStdout(), "pattern detection, per busy node-second of each phase (labelled as the phase):")
			labels.Write(cmd.OutOrStdout(), acc)
			if export == "" {
				return nil
			}
			if _, err := df.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("eval labels: %w", err)
			}
			rows, err := eval.LabelledRows(ps, df, skip)
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, decisions)
			}
			if len(rows) == 0 {
				return fmt.Errorf("eval labels: --export: no busy node-second of %s with features lies inside a phase (a log written before node reports carried their features?)", decisions)
			}
			if err := os.MkdirAll(export, 0o755); err != nil {
				return fmt.Errorf("eval labels: --export: %w", err)
			}
			path := filepath.Join(export, dataset.ObservationsFile)
			err = atomicfile.Write(path, func(w io.Writer) error {
				dw := dataset.NewObservationWriter(w)
				dw.IncludeRep()
				if err := dw.WriteHeader(); err != nil {
					return err
				}
				for _, r := range rows {
					if err := dw.Row(r); err != nil {
						return err
					}
				}
				return dw.Flush()
			})
			if err != nil {
				return fmt.Errorf("eval labels: --export: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d labelled node-seconds of %d phases to %s\n", len(rows), len(ps), path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&decisions, "decisions", "", "the Council's decision log (JSON lines)")
	f.StringVar(&phases, "phases", "", "CSV phase file: phase,start,end[,bytes]")
	f.DurationVar(&skip, "skip", 0, "leave out the seconds within this of a phase's start or end")
	f.StringVar(&export, "export", "", "also write the labelled node-seconds to DIR/observations.csv, a training source for adaptio detect train --data")
	return cmd
}

// supportLine is an estimate's unsupported part, per context and in all.
func supportLine(e eval.Estimate) string {
	var b strings.Builder
	for _, c := range e.Support {
		fmt.Fprintf(&b, "%s %.1f%%, ", c.Context, 100*c.Unsupported)
	}
	fmt.Fprintf(&b, "all %.1f%%", 100*e.Unsupported)
	return b.String()
}

func newEvalLogCmd() *cobra.Command {
	var decisions, policies, report string
	var level float64
	var resamples, workers, block int
	var seed uint64
	var measured, shadow bool
	var format string
	cmd := &cobra.Command{
		Use:   "log --decision-log FILE --policy POLICY[,POLICY...]",
		Short: "Off-policy evaluation of the Council's decision log: what another policy would have earned",
		Long: `Estimates from a Council's decision log (adaptio council --decision-log, or the demo's
decisions.jsonl) the mean reward per round that another policy would have earned, without
running it. Each round's chosen window, the probability the decision rule gave it (the log's
"prob") and the reward that window earned in the next round form one logged sample; under a
plan, each direction's window with its own context and probability (a round of reads and
writes gives two samples, each counting for its share of the round's rewards). The
estimators are inverse propensity scoring (IPS), self-normalised IPS and doubly robust (a
per-context, per-window mean reward model, each round's fitted on the other four fifths of
the log, corrected by the importance-weighted rewards), each with a percentile bootstrap
interval. The bootstrap resamples blocks of consecutive rounds (--block; by default the
cube root of the rounds, 16 for 4,000), since consecutive seconds of a run are not
independent, and each resample refits the model.

Support: where the policy chooses windows the log never or almost never chose in a context,
no estimator can see what they earn. "unsupported" says, per context, which part of the
policy's probability there the log's importance weights do not account for. Every point
values that part at its context's mean logged reward, and every interval bounds it by the
smallest and largest reward the log shows in that context (partial identification), so the
intervals widen instead of being wrongly narrow, and always hold their points. Where
nothing matched (e.g. a static run's log and another window) or half or more of the
policy's probability is unsupported, the estimate is refused: "refused" and the reason,
no point and no interval.

A log whose last line is cut (a run stopped while writing it) is read up to the line before,
with a warning; a broken line elsewhere is refused with its number.

Policies:
  static:W   the fixed TWINS window W (one of 125us ... 8ms)
  NAME       a learning policy (` + strings.Join(bandit.Names(), ", ") + `), one bandit per
             context with its default options, replayed along the log from its initial state:
             each round it gives every window its current probability, then draws one and
             learns the logged reward if it drew the logged window, else the mean reward the
             log shows for the window it drew in that context up to that round (its point
             estimate is the mean of 16 replays; each bootstrap resample replays the
             resampled rounds in order)

A log where the target's window was rarely chosen gives a wide interval: "matched" says in
how many rounds the target would have chosen the logged window, ESS how many effective
rounds the importance weights amount to, "unsupported" how much of it the log cannot see.

--measured prints instead the log's own mean reward per round: the measured value of the
policy that ran, to compare with an estimate made from another run's log.

--shadow (and any log with steered rounds: adaptio council --shadow, pins, the guardrail)
prints per pattern and operation the window in force, how often learning agreed with it,
the windows learning would have chosen and the rewards the log holds for each. Where
learning agreed, its gain is zero; where it chose a window the log never ran in that
context, what it would have earned is not identified, and no interval is printed (nor for
a --policy the log does not support). Off-policy estimates need the windows to have run:
the guardrail's control share, or pins on some patterns, provide some.`,
		Example: `  adaptio eval log --decision-log adaptio-state/decisions.jsonl --policy static:1ms,static:8ms
  adaptio eval log --decision-log adaptio-state/decisions.jsonl --policy thompson-warm,ucb1 --report ope.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if decisions == "" || (policies == "" && !measured && !shadow) {
				return fmt.Errorf("eval log: --decision-log, and --policy, --measured or --shadow, are required")
			}
			var targets []eval.Target
			var specs []string // as given, for --format tsv
			if !measured && policies != "" {
				for _, p := range strings.Split(policies, ",") {
					t, err := eval.ParseTarget(p)
					if err != nil {
						return err
					}
					targets = append(targets, t)
					specs = append(specs, strings.TrimSpace(p))
				}
			}
			if resamples < 0 || resamples > 0 && resamples < 10 || !(level > 0 && level < 1) {
				return fmt.Errorf("eval log: --resamples %d and --level %v: want 0 (default) or >= 10, and a level in (0, 1)", resamples, level)
			}
			if format != "text" && format != "tsv" {
				return fmt.Errorf("eval log: --format %q: want text or tsv", format)
			}
			data, err := os.ReadFile(decisions)
			if err != nil {
				return fmt.Errorf("eval log: %w", err)
			}
			data, cut := eval.TrimCutLine(data)
			if cut != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s\n", decisions, cut)
			}
			own, rounds, ownErr := eval.MeanRoundReward(bytes.NewReader(data))
			if measured {
				if ownErr != nil {
					return fmt.Errorf("%w (in %s)", ownErr, decisions)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "measured mean reward per round: %.6g (%d rounds)\n", own, rounds)
				return nil
			}
			sr, err := eval.ReadShadow(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, decisions)
			}
			if shadow || sr.Steered() {
				printShadow(cmd.OutOrStdout(), sr)
			}
			if policies == "" {
				return nil
			}
			samples, err := eval.ReadSamples(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%w (in %s)", err, decisions)
			}
			w := cmd.OutOrStdout()
			tsv := format == "tsv"
			if tsv {
				fmt.Fprintln(w, "policy\tstatus\tmatched\tess\tunsupported\tips\tips_lo\tips_hi\tsnips\tsnips_lo\tsnips_hi\tdr\tdr_lo\tdr_hi")
			} else {
				fmt.Fprintf(w, "%d logged samples with a propensity and a reward; mean reward per round, %.0f%% bootstrap intervals\n", len(samples), 100*level)
				fmt.Fprintf(w, "%-14s %8s %8s %30s %30s %30s\n", "policy", "matched", "ESS", "IPS", "SNIPS", "DR")
			}
			const minMatched = 30
			var weak, unsupported []string
			blockLen := 0
			var all []eval.Estimate
			for i, t := range targets {
				var progress io.Writer
				if t.Learning() {
					progress = cmd.ErrOrStderr()
				}
				e, err := eval.EvaluateWith(samples, t, eval.EvaluateOptions{Level: level, Resamples: resamples, Block: block, Workers: workers, Progress: progress},
					rand.New(rand.NewPCG(seed, 0x0be)))
				if err != nil {
					return err
				}
				iv := func(i eval.Interval) string { return fmt.Sprintf("%.4g [%.4g, %.4g]", i.Value, i.Lo, i.Hi) }
				if tsv {
					status := "ok"
					if e.Refused != "" || sr.Steered() && e.Unsupported >= 0.01 {
						status = "refused"
					}
					tab := func(i eval.Interval) string {
						if status == "refused" {
							return "NaN\tNaN\tNaN"
						}
						return fmt.Sprintf("%.6g\t%.6g\t%.6g", i.Value, i.Lo, i.Hi)
					}
					fmt.Fprintf(w, "%s\t%s\t%.1f\t%.2f\t%.4f\t%s\t%s\t%s\n", specs[i], status, e.Matched, e.ESS, e.Unsupported, tab(e.IPS), tab(e.SNIPS), tab(e.DR))
					all = append(all, e)
					continue
				}
				if sr.Steered() && e.Unsupported >= 0.01 {
					// The log ran the operator's windows: the rewards' range
					// is theirs, and a bound by it would be narrow and wrong.
					fmt.Fprintf(w, "%-14s %8.0f %8.1f %s\n", e.Target, e.Matched, e.ESS, "no interval: the log ran the operator's windows (shadow, pins, guardrail) and does not support what this policy chooses")
				} else if e.Refused != "" {
					fmt.Fprintf(w, "%-14s %8.0f %8.1f refused: %s\n", e.Target, e.Matched, e.ESS, e.Refused)
				} else {
					fmt.Fprintf(w, "%-14s %8.0f %8.1f %30s %30s %30s\n", e.Target, e.Matched, e.ESS, iv(e.IPS), iv(e.SNIPS), iv(e.DR))
				}
				fmt.Fprintf(w, "%-14s unsupported %s\n", "", supportLine(e))
				if e.Unsupported >= 0.01 && e.Refused == "" {
					unsupported = append(unsupported, e.Target)
				}
				blockLen = e.Block
				if e.ESS < minMatched && e.Refused == "" {
					weak = append(weak, e.Target)
				}
				all = append(all, e)
			}
			if tsv {
				return nil
			}
			fmt.Fprintf(w, "intervals: circular block bootstrap, blocks of %d consecutive rounds; every estimator bounds unsupported mass by its context's logged reward range (the points value it at the context's mean)\n", blockLen)
			if len(weak) > 0 {
				fmt.Fprintf(w, "warning: the importance weights of %s amount to fewer than %d effective rounds: those estimates rest on few samples (a log under a policy that explores more, e.g. egreedy, evaluates them better)\n",
					strings.Join(weak, ", "), minMatched)
			}
			if len(unsupported) > 0 {
				fmt.Fprintf(w, "warning: the log does not support 1%% or more of what %s would choose: the intervals bound that part by the log's reward range, the points guess it\n",
					strings.Join(unsupported, ", "))
			}
			if report == "" {
				return nil
			}
			var ownp *float64
			if ownErr == nil {
				ownp = &own
			}
			r, err := eval.OffPolicyReport(commandLine(), decisions, len(samples), level, all, ownp)
			if err != nil {
				return err
			}
			if err := r.WriteHTML(report); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", report)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&decisions, "decision-log", "", "the Council's decision log (JSON lines)")
	f.StringVar(&policies, "policy", "", "comma-separated policies to evaluate: static:W or a learning policy's name")
	f.StringVar(&report, "report", "", "also write an HTML report (a table and a figure of the intervals) to this file")
	f.Float64Var(&level, "level", 0.95, "confidence level of the intervals")
	f.IntVar(&resamples, "resamples", 0, "bootstrap resamples (0: 1000 for a static window, 200 for a learning policy, whose every resample replays the log)")
	f.IntVar(&workers, "workers", runtime.GOMAXPROCS(0), "replays run in parallel (results do not depend on it)")
	f.IntVar(&block, "block", 0, "rounds per block of the bootstrap (0: the cube root of the log's rounds; 1: rounds resampled independently)")
	f.Uint64Var(&seed, "seed", 1, "seed of the bootstrap and of the learning policies' draws")
	f.StringVar(&format, "format", "text", "output of the estimates: text (a table with warnings) or tsv (one tab-separated line per policy: the policy as given, status ok or refused, matched, ESS, unsupported share, then value, low and high of IPS, SNIPS and DR; NaN when refused), for scripts")
	f.BoolVar(&measured, "measured", false, "print the log's own mean reward per round instead of estimating a policy")
	f.BoolVar(&shadow, "shadow", false, "summarise, per pattern and operation, the windows in force against those learning would have chosen (a log of adaptio council --shadow, pins or the guardrail; printed anyway for such a log) and where the log's rewards support an estimate of the difference")
	return cmd
}
