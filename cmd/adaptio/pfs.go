package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/internal/listen"
	"github.com/adaptio/adaptio/pfs"
)

type pfsConfig struct {
	Model   dataserver.Config
	Servers int
	Dir     string
	Disk    string
	Listen  string
	Seed    uint64
	Verbose bool
	// Insecure lets the data servers listen beyond loopback: they have no
	// authentication of their own.
	Insecure bool
}

func newPFSCmd() *cobra.Command {
	cfg := pfsConfig{}
	cmd := &cobra.Command{
		Use:   "pfs",
		Short: "Run an emulated parallel file system of N data servers",
		Long: `Run an emulated parallel file system: N data servers on TCP, each storing its
stripes of every file in local files under DIR/server-I, and serving reads and
writes one at a time, each delayed in wall-clock time by the simulator's
data-server model (package dataserver, the same code adaptio sim runs): a
page cache with read-ahead whose misses merge with queued reads, the server's
CPU time per access, the cost of interleaving I/O nodes (--switch-cost: an
access from another I/O node than the previous one, the contention TWINS
removes; forwarders name their node with --node), and a device model, so that
a window that wins in the simulator wins here for the same reason.

  hdd    a 600 GB 10,000 rpm SAS disk like the papers' PVFS servers (seek by
         distance, rotation, zones, read-ahead, write-through)
  ssd    a data-centre SATA/SAS SSD (about 90 us read, 30 us write latency)
  array  a disk array behind a non-volatile write log (IBM ESS-like)
  none   no model at all: no delay and no serialisation (throughput of the
         machine itself)

Clients (adaptio forward --backend pfs:ADDR,...) stripe files over all the
servers in --stripe-size units (64 KiB by default, as PVFS). Metadata is held
by every server, server 0's being authoritative.

Prints one line per server ("server I ADDR") and then the backend spec on
stdout, and serves until interrupted (SIGINT/SIGTERM). Files in DIR survive
restarts.`,
		Example: `  adaptio pfs --dir /tmp/pfs
  adaptio pfs --servers 8 --dir /tmp/pfs --disk ssd --listen 127.0.0.1:7101   # ports 7101..7108`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPFS(cmd, cfg) },
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Servers, "servers", pfs.DefaultServers, "number of data servers")
	f.StringVar(&cfg.Dir, "dir", "", "directory holding the servers' files, created if absent (required)")
	f.StringVar(&cfg.Disk, "disk", "hdd", "device model of each server: hdd, ssd, array or none")
	f.DurationVar(&cfg.Model.SwitchCost, "switch-cost", dataserver.DefaultSwitchCost, "extra time of an access from another I/O node than the previous one (negative: none)")
	f.DurationVar(&cfg.Model.Overhead, "overhead", dataserver.DefaultOverhead, "server CPU time per access (negative: none)")
	f.Int64Var(&cfg.Model.ReadAheadBytes, "read-ahead", dataserver.DefaultReadAheadBytes, "page-cache chunk in bytes: a read miss reads whole chunks (negative: no page cache)")
	f.IntVar(&cfg.Model.ReadMerge, "read-merge", dataserver.DefaultReadMerge, "most chunks one disk read covers when merging the misses of queued reads (1: none)")
	f.Float64Var(&cfg.Model.TimeScale, "time-scale", 1, "multiply every modelled service time (slower disks)")
	f.BoolVar(&cfg.Model.Elevator, "elevator", false, "serve queued accesses in C-LOOK order of disk address instead of arrival order")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "HOST:PORT of server 0; server I listens on PORT+I (port 0: free ports)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the device models' jitter")
	f.BoolVarP(&cfg.Verbose, "verbose", "v", false, "log connections and errors to stderr")
	f.BoolVar(&cfg.Insecure, "insecure", false, "let the data servers listen beyond loopback (they have no authentication: anyone who reaches them reads and writes their files; a trusted network only)")
	return cmd
}

func runPFS(cmd *cobra.Command, cfg pfsConfig) error {
	if cfg.Dir == "" {
		return fmt.Errorf("pfs: --dir is required")
	}
	if err := requirePositive(cmd, "servers"); err != nil {
		return fmt.Errorf("pfs: %w", err)
	}
	host, portText, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("pfs: --listen %q: %w", cfg.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("pfs: --listen %q: bad port", cfg.Listen)
	}
	if err := listen.Require("pfs --listen", cfg.Listen, false, cfg.Insecure); err != nil {
		return fmt.Errorf("pfs: %w", err)
	}
	level := slog.LevelWarn
	if cfg.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if listen.Insecure(cfg.Listen, false) {
		log.Warn("data servers beyond loopback without authentication (--insecure): anyone who reaches them reads and writes their files", "listen", cfg.Listen)
	}
	c, err := pfs.NewCluster(pfs.ClusterOptions{
		Servers: cfg.Servers, Dir: cfg.Dir, Host: host, BasePort: port,
		Disk: cfg.Disk, Model: cfg.Model, Seed: cfg.Seed, Logger: log,
	})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		c.Shutdown()
		return err
	}
	addrs := c.Addrs()
	out := cmd.OutOrStdout()
	for i, a := range addrs {
		fmt.Fprintf(out, "server %d %s\n", i, a)
	}
	fmt.Fprintf(out, "backend pfs:%s\n", strings.Join(addrs, ","))
	fmt.Fprintf(cmd.ErrOrStderr(), "pfs: %d data servers (%s disks) serving %s; interrupt to stop\n", len(addrs), cfg.Disk, cfg.Dir)
	return c.Run(cmd.Context())
}
