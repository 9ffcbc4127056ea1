package main

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim/experiment"
)

// simJobsThreads is "adaptio sim jobs"'s default dispatch slots per I/O
// node: few enough that requests wait in the I/O node, where the QoS gate
// can share it, rather than at the data servers.
const simJobsThreads = 16

func newSimJobsCmd() *cobra.Command {
	var (
		m         modelFlags
		jobs      int
		procs     int
		span      time.Duration
		depth     int
		capRate   string
		capJob    string
		fairness  float64
		scenarios []string
	)
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Several jobs at once on one I/O node: bandwidth and fairness under FIFO, TWINS, learning and the QoS gate",
		Long: `jobs runs mixes of concurrent jobs on one simulated I/O node and its data
servers, every job repeating its pattern for --for of virtual time, and prints
per mix and setting the total bandwidth, each job's bandwidth (MiB/s, 1 MiB =
2^20 bytes, its bytes over --for) and three Jain's fairness indexes (1: equal
shares; 1/N: one job has everything): of the jobs' bandwidths (Jain bytes), of
the time the data servers spent on each job (Jain time), and of each job's
bandwidth over its bandwidth alone on the node under the same scheduler (Jain
norm; every job is also run alone for it).

Mixes (--jobs 2: one job of each kind; --jobs 4: two of each, --procs
processes per job):
  strided-vs-fpp        a shared-file 1D-strided writer (32 KiB requests)
                        against file-per-process readers (1 MiB requests)
  checkpoint-vs-reader  a bursty checkpoint (64 MiB per process in 1 MiB
                        writes, then 2 s of computation) against a steady
                        file-per-process reader (256 KiB requests)

Settings: FIFO; static TWINS with each window; learning (the Council's core
choosing the window every interval from the node's mix, which it sees without
jobs); the QoS gate over FIFO, sharing the node between jobs, by bytes
(fifo+fair bytes, deficit round robin) or by the data servers' time, in
equal shares: in slices of 20 ms of service that end whenever the job has
nothing queued, its requests then interleaving with the others' (fifo+fair
time slices), or in job windows of 100 ms of service per unit of weight, the
job holding the node while its requests are in flight (fifo+fair time runs);
in job windows with shares tilted toward the jobs that move more bytes per
second of server time, as far as Jain's index of the shares stays at least
--fairness (fifo+fair time floor F, adaptio forward's default; and the same
gate in front of TWINS 4 ms, twins 4ms+fair time floor F); and equal shares
in job windows with a TBF rule capping one job at --cap-rate (fifo+fair time
runs+job=...).

The gate shares the requests waiting at the I/O node: with many dispatch
slots (--threads) they wait at the data servers instead, out of its reach,
hence the default of 16 slots here.`,
		Example: `  adaptio sim jobs
  adaptio sim jobs --jobs 4 --cap-rate 10MiB --for 20s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, err := m.config()
			if err != nil {
				return fmt.Errorf("sim jobs: %w", err)
			}
			if span <= 0 {
				return fmt.Errorf("sim jobs: --for %v: want a positive virtual time, e.g. 10s", span)
			}
			base.JobsFor = span
			all, err := experiment.JobScenarios(jobs, procs)
			if err != nil {
				return fmt.Errorf("sim jobs: --jobs or --procs: %w", err)
			}
			if !(fairness > 0 && fairness <= 1) {
				return fmt.Errorf("sim jobs: --fairness %v: want a floor of Jain's index above 0 and at most 1, e.g. 0.9", fairness)
			}
			var rate int64
			if capRate != "" && capRate != "0" {
				if rate, err = qos.ParseSize(capRate); err != nil {
					return fmt.Errorf("sim jobs: --cap-rate: %w", err)
				}
			}
			var rows []experiment.JobRow
			for _, sc := range all {
				if len(scenarios) > 0 && !slices.Contains(scenarios, sc.Name) {
					continue
				}
				rule := qos.Rule{Job: capJob, Rate: float64(rate)}
				if rule.Job == "" {
					rule.Job = sc.Jobs[0].Name
				}
				for _, st := range experiment.JobSettings(sched.Windows, depth, rule, fairness) {
					r, err := experiment.RunJobs(cmd.Context(), base, sc, st, m.seed)
					if err != nil {
						return fmt.Errorf("sim jobs: %w", err)
					}
					rows = append(rows, r)
				}
			}
			if len(rows) == 0 {
				return fmt.Errorf("sim jobs: --scenario %v names no mix: want strided-vs-fpp or checkpoint-vs-reader", scenarios)
			}
			return experiment.WriteJobRows(cmd.OutOrStdout(), rows)
		},
	}
	m.register(cmd)
	f := cmd.Flags()
	m.threads = simJobsThreads
	f.Lookup("threads").DefValue = strconv.Itoa(simJobsThreads)
	f.IntVar(&jobs, "jobs", 2, "concurrent jobs: 2 (one of each kind) or 4 (two of each)")
	f.IntVar(&procs, "procs", 32, "processes per job")
	f.DurationVar(&span, "for", 10*time.Second, "virtual time every job keeps repeating its pattern; bandwidths are bytes over it")
	f.IntVar(&depth, "qos-depth", 16, "requests the scheduler may hold before the QoS gate shares the node by job (adaptio forward --qos-depth)")
	f.StringVar(&capRate, "cap-rate", "10MiB", "rate of the TBF rule of the capped setting, bytes per second (B, KB, MB or KiB, MiB, ...; 0: no capped setting)")
	f.StringVar(&capJob, "cap-job", "", "job the rule caps (default: the mix's first job, the strided writer or the checkpoint)")
	f.Float64Var(&fairness, "fairness", qos.DefaultFairness, "floor of Jain's index of the jobs' shares of server time in the floor settings (1: equal shares; adaptio forward's gate: 0.9)")
	f.StringSliceVar(&scenarios, "scenario", nil, "mixes to run: strided-vs-fpp, checkpoint-vs-reader (default both)")
	return cmd
}
