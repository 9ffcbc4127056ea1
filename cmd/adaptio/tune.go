package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/lustre"
)

func newTuneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Client-side I/O path tuning (IOPathTune): Lustre's OSC parameters",
		Long: `Client-side tuning of the I/O path (docs/tuning.md).

  adaptio tune lustre          show a Lustre client's OSC parameters and RPC statistics, or set them
  adaptio tune lustre --auto   tune max_pages_per_rpc and max_rpcs_in_flight while the client runs`,
	}
	cmd.AddCommand(newTuneLustreCmd())
	return cmd
}

// tuneLustreConfig is adaptio tune lustre's flags.
type tuneLustreConfig struct {
	Root        string
	Sets        []string
	DryRun      bool
	Auto        bool
	Interval    time.Duration
	Restore     bool
	MetricsAddr string
	PageSize    int64
}

func newTuneLustreCmd() *cobra.Command {
	var cfg tuneLustreConfig
	cmd := &cobra.Command{
		Use:   "lustre [--set NAME=VALUE ...] [--dry-run] | --auto [--interval D] [--restore] [--metrics-addr HOST:PORT]",
		Short: "Show, set or tune a Lustre client's max_pages_per_rpc, max_rpcs_in_flight and max_dirty_mb",
		Long: `Reads every OSC target's max_pages_per_rpc, max_rpcs_in_flight and max_dirty_mb from a
Lustre client's parameter tree (/sys/fs/lustre/osc/TARGET, or /proc/fs/lustre/osc/TARGET on
older clients) and its rpc_stats (/proc/fs/lustre/osc/TARGET, or
/sys/kernel/debug/lustre/osc/TARGET on newer clients), and prints them; a parameter that cannot be
read, or is not a number, is shown with the reason.

--set NAME=VALUE sets a parameter on every target, all or nothing: every value is checked against
Lustre's ranges (` + tune.LustreRanges() + `)
and every old value read before anything is written; if Lustre refuses a write, the values
already written are put back and the error says so (and which target holds which value if one
cannot be put back). --dry-run checks the same and prints what it would set.

--auto runs IOPathTune (docs/tuning.md) on the client: every --interval it reads every target's
rpc_stats (the RPCs sent, by pages per RPC, and the pages waiting to be written) and doubles or
halves max_pages_per_rpc or max_rpcs_in_flight in turn on every target, keeping a direction that
raised the bandwidth and reversing one that did not, and undoing the last change when the pages
waiting grow while the bandwidth falls (contention). Each change is logged (INFO: target,
parameter, old, new, reason). SIGINT or SIGTERM stops it, leaving the values in force, or with
--restore putting back the values found at start. --metrics-addr serves adaptio_lustre_*
Prometheus metrics at /metrics.

Needs root to set. --root points at another tree (a copy, or a test's).`,
		Example: `  adaptio tune lustre
  adaptio tune lustre --set max_rpcs_in_flight=32 --dry-run
  adaptio tune lustre --auto --interval 10s --restore --metrics-addr :9464`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Auto {
				if len(cfg.Sets) > 0 || cfg.DryRun {
					return errors.New("tune lustre: --auto does not take --set or --dry-run: set values first, then tune")
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return runTuneLustreAuto(ctx, cmd, cfg)
			}
			if cfg.Restore || cfg.MetricsAddr != "" {
				return errors.New("tune lustre: --restore and --metrics-addr go with --auto")
			}
			return runTuneLustre(cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Root, "root", "/", "root of the parameter tree")
	f.StringArrayVar(&cfg.Sets, "set", nil, "NAME=VALUE to set on every target, all or nothing (repeatable); values in pages, RPCs and MiB as named, within "+tune.LustreRanges())
	f.BoolVar(&cfg.DryRun, "dry-run", false, "check --set and print what it would change; change nothing")
	f.BoolVar(&cfg.Auto, "auto", false, "tune max_pages_per_rpc and max_rpcs_in_flight with IOPathTune until SIGINT")
	f.DurationVar(&cfg.Interval, "interval", 10*time.Second, "with --auto: one change per interval (IOPathTune's 10 s)")
	f.BoolVar(&cfg.Restore, "restore", false, "with --auto: on SIGINT or SIGTERM put back the values found at start (default: leave the values in force)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "with --auto: serve Prometheus /metrics on this host:port (empty: off)")
	f.Int64Var(&cfg.PageSize, "page-size", 4096, "with --auto: the client's page size in bytes, to turn rpc_stats' pages into bytes")
	return cmd
}

// runTuneLustre shows the targets and applies --set.
func runTuneLustre(cmd *cobra.Command, cfg tuneLustreConfig) error {
	l := lustre.Lustre{Root: cfg.Root}
	targets, err := l.Targets()
	if err != nil {
		return err
	}
	type set struct {
		name string
		v    int
	}
	var todo []set
	for _, s := range cfg.Sets {
		name, val, ok := strings.Cut(s, "=")
		v, err := strconv.Atoi(strings.TrimSpace(val))
		if !ok || err != nil {
			return fmt.Errorf("tune lustre: --set %q: want NAME=VALUE, e.g. max_rpcs_in_flight=32", s)
		}
		if err := tune.CheckLustre(name, v); err != nil {
			return fmt.Errorf("tune lustre: --set %s: %w; nothing changed", s, err)
		}
		todo = append(todo, set{name, v})
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%d OSC targets under %s\n", len(targets), cfg.Root)
	var ws []lustre.LustreWrite
	unreadable := 0
	for _, tg := range targets {
		var parts []string
		for _, v := range l.Read(tg) {
			if v.Err != nil {
				parts = append(parts, fmt.Sprintf("%s=? (%v)", v.Name, v.Err))
				unreadable++
			} else {
				parts = append(parts, fmt.Sprintf("%s=%d", v.Name, v.Value))
			}
		}
		if st, path, err := l.ReadRPCStats(tg); err == nil {
			r, wr := st.Count()
			parts = append(parts, fmt.Sprintf("rpc_stats (%s): in flight r/w %d/%d, pending pages r/w %d/%d, RPCs r/w %d/%d",
				path, st.ReadInFlight, st.WriteInFlight, st.PendingReadPages, st.PendingWritePages, r, wr))
		} else {
			parts = append(parts, fmt.Sprintf("rpc_stats=? (%v)", err))
		}
		fmt.Fprintf(w, "  %s\n    %s\n", tg, strings.Join(parts, "\n    "))
		for _, s := range todo {
			ws = append(ws, lustre.LustreWrite{Target: tg, Name: s.name, Value: s.v})
		}
	}
	if len(ws) == 0 {
		if unreadable > 0 {
			fmt.Fprintf(w, "%d parameters could not be read (above)\n", unreadable)
		}
		return nil
	}
	if cfg.DryRun {
		for _, x := range ws {
			old, err := l.Get(x.Target, x.Name)
			if err != nil {
				return fmt.Errorf("tune lustre: --dry-run: %w; a real run would change nothing", err)
			}
			fmt.Fprintf(w, "  %s: would set %s %d -> %d\n", x.Target, x.Name, old, x.Value)
		}
		return nil
	}
	changed, err := l.SetAll(ws)
	if err != nil {
		return fmt.Errorf("tune lustre: %w", err)
	}
	for _, c := range changed {
		fmt.Fprintf(w, "  %s: set %s %d -> %d\n", c.Target, c.Name, c.Old, c.New)
	}
	if len(changed) < len(ws) {
		fmt.Fprintf(w, "%d of %d already held the value\n", len(ws)-len(changed), len(ws))
	}
	return nil
}

// runTuneLustreAuto runs IOPathTune on the client until ctx ends.
func runTuneLustreAuto(ctx context.Context, cmd *cobra.Command, cfg tuneLustreConfig) error {
	if cfg.Interval <= 0 {
		return fmt.Errorf("tune lustre: --interval %v: want a positive duration, e.g. 10s", cfg.Interval)
	}
	if cfg.PageSize <= 0 || cfg.PageSize&(cfg.PageSize-1) != 0 {
		return fmt.Errorf("tune lustre: --page-size %d: want a power of two in bytes, e.g. 4096 (x86-64) or 65536", cfg.PageSize)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	reg := prometheus.NewRegistry()
	a, err := lustre.NewLustreAuto(lustre.LustreAutoConfig{Lustre: lustre.Lustre{Root: cfg.Root}, Interval: cfg.Interval,
		PageSize: cfg.PageSize, Log: log, Registerer: reg})
	if err != nil {
		return fmt.Errorf("tune lustre --auto: %w", err)
	}
	w := cmd.OutOrStdout()
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("tune lustre: --metrics-addr %s: %w", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(w, "metrics at http://%s/metrics\n", ln.Addr())
	}
	then := "leaving the values in force"
	if cfg.Restore {
		then = "putting back the values found at start"
	}
	fmt.Fprintf(w, "tuning %d OSC targets under %s with IOPathTune every %v until SIGINT, then %s; found %s\n",
		len(a.Targets()), cfg.Root, cfg.Interval, then, a.Start())
	if err := lustre.RunLustre(ctx, a, cfg.Restore); err != nil {
		return fmt.Errorf("tune lustre --auto: %w", err)
	}
	fmt.Fprintf(w, "stopped: %s\n", then)
	return nil
}
