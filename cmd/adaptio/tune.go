package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/tune"
)

func newTuneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Client-side I/O path tuning (seed 004, IOPathTune): Lustre's OSC parameters",
		Long: `Client-side tuning of the I/O path (docs/tuning.md).

  adaptio tune lustre   show a Lustre client's OSC parameters and RPC statistics, or set them`,
	}
	cmd.AddCommand(newTuneLustreCmd())
	return cmd
}

func newTuneLustreCmd() *cobra.Command {
	var root string
	var sets []string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "lustre [--set NAME=VALUE ...] [--dry-run]",
		Short: "Show or set a Lustre client's max_pages_per_rpc, max_rpcs_in_flight and max_dirty_mb",
		Long: `Reads, from a Lustre client's parameter tree (/sys/fs/lustre/osc/TARGET, or
/proc/fs/lustre/osc/TARGET on older clients), every OSC target's max_pages_per_rpc,
max_rpcs_in_flight and max_dirty_mb and its rpc_stats (RPCs in flight, pending pages), and
prints them. --set NAME=VALUE sets a parameter on every target, refusing values outside
Lustre's documented ranges (max_pages_per_rpc 1-4096 pages, max_rpcs_in_flight 1-256,
max_dirty_mb 1-2047); --dry-run prints what it would set and changes nothing. Needs root
to set. --root points at another tree (a copy, or a test's).`,
		Example: `  adaptio tune lustre
  adaptio tune lustre --set max_rpcs_in_flight=32 --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := tune.Lustre{Root: root}
			targets, dir, err := l.Targets()
			if err != nil {
				return err
			}
			type set struct {
				name string
				v    int
			}
			var todo []set
			for _, s := range sets {
				name, val, ok := strings.Cut(s, "=")
				v, err := strconv.Atoi(val)
				if !ok || err != nil {
					return fmt.Errorf("tune lustre: --set %q: want NAME=VALUE, e.g. max_rpcs_in_flight=32", s)
				}
				todo = append(todo, set{name, v})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%d OSC targets in %s\n", len(targets), dir)
			for _, tg := range targets {
				var parts []string
				for _, p := range tune.LustreParams() {
					if v, err := l.Get(tg, p); err == nil {
						parts = append(parts, fmt.Sprintf("%s=%d", p, v))
					}
				}
				if st, err := l.ReadRPCStats(tg); err == nil {
					parts = append(parts, fmt.Sprintf("in flight r/w %d/%d, pending pages r/w %d/%d", st.ReadInFlight, st.WriteInFlight, st.PendingReadPages, st.PendingWrites))
				}
				fmt.Fprintf(w, "  %s  %s\n", tg, strings.Join(parts, "  "))
				for _, s := range todo {
					old, err := l.Get(tg, s.name)
					if err != nil {
						return err
					}
					if dryRun {
						fmt.Fprintf(w, "    would set %s %d -> %d\n", s.name, old, s.v)
						continue
					}
					if err := l.Set(tg, s.name, s.v); err != nil {
						return err
					}
					fmt.Fprintf(w, "    set %s %d -> %d\n", s.name, old, s.v)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&root, "root", "/", "root of the parameter tree")
	f.StringArrayVar(&sets, "set", nil, "NAME=VALUE to set on every target (repeatable)")
	f.BoolVar(&dryRun, "dry-run", false, "print what --set would change, change nothing")
	return cmd
}
