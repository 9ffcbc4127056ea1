package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/qos"
)

// qosFlags adds adaptio forward's per-job QoS flags.
func qosFlags(f *pflag.FlagSet, cfg *forwardConfig) {
	f.StringVar(&cfg.QoSRules, "qos-rules", "", "file of per-job QoS rules in the style of Lustre's NRS TBF, one a line: 'job=ID|* [op=read|write] [rate=SIZE] [burst=SIZE] [weight=N]' (rate in bytes per second with B, KB, MB, GB, KiB, MiB, GiB suffixes; burst in bytes, default 100 ms at the rate, at least 1 MiB; weight 1 to 1000, the job's share of a saturated node, default 1); the first rule matching a request's job and operation applies, job=* gives every job a bucket of its own (docs/jobs.md). Re-read on SIGHUP: a bad file is logged and the rules in force stay. Jobs come from clients (adaptio mount --job-env, adaptio bench --job); requests without one are job \"\" (empty: no QoS, unless --qos)")
	f.BoolVar(&cfg.QoS, "qos", false, "share a saturated node between jobs by weight (each job's share of the data servers' time, measured at completion, in front of the scheduler) without rate rules; implied by --qos-rules")
	f.Float64Var(&cfg.QoSFairness, "qos-fairness", qos.DefaultFairness, "with --qos or --qos-rules: the lowest Jain's index of the jobs' shares of the data servers' time (per unit of weight) the gate allows, in (0, 1]: below 1 it gives more time to the jobs that move more bytes per second of it, as far as that floor (0.9: at most 2:1 between two jobs), so the node moves more in all; 1: equal shares by weight (docs/jobs.md, \"Fairness floor\")")
	f.IntVar(&cfg.QoSDepth, "qos-depth", ionode.DefaultGateDepth, "with --qos or --qos-rules: the most requests the scheduler holds before the rest wait by job in the QoS gate (lower: fairer shares between jobs, fewer requests for TWINS to order)")
}

// readQoSRules reads a rules file (none: nil).
func readQoSRules(path string) ([]qos.Rule, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--qos-rules: %w", err)
	}
	rules, err := qos.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("--qos-rules %s: %w", path, err)
	}
	return rules, nil
}

// watchQoSRules re-reads the rules file on SIGHUP and applies it; a file
// that does not parse is logged and the rules in force stay. Only the
// daemon's user (or root) can signal it, and the file's permissions say
// who may change the rules. It returns the function that stops watching.
func watchQoSRules(cmd *cobra.Command, d *fwd.Daemon, path string, log *slog.Logger) func() {
	if path == "" {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
			}
			rules, err := readQoSRules(path)
			if err == nil {
				err = d.SetQoSRules(rules)
			}
			if err != nil {
				log.Error("QoS rules not reloaded: the rules in force stay; fix the file and send SIGHUP again", "file", path, "err", err)
				fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: %s: %v (rules in force kept)\n", path, err)
				continue
			}
			log.Info("QoS rules reloaded", "file", path, "rules", len(rules))
			fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: QoS rules reloaded from %s (%d rules)\n", path, len(rules))
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
