package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// benchConfig is the configuration of "adaptio bench".
type benchConfig struct {
	Forwarder   string
	Direct      string
	Compare     string
	Rounds      int
	Processes   int
	Layout      string
	Spatiality  string
	Op          string
	RequestSize string
	Total       string
	Conns       int
	Dir         string
	Seed        uint64
	NoVerify    bool
	NoFill      bool
	Transfers   bool
	Keep        bool
	ReadPasses  int
	ReadOnly    bool
	Job         string
	Jobs        int
	NoShm       bool
	NoRing      bool
	RingSpin    time.Duration
	Auth        fwdAuth // the forwarder's token and TLS
	// ForwarderMetrics is the daemon's /metrics URL, for its CPU time.
	ForwarderMetrics string
}

func newBenchCmd() *cobra.Command {
	cfg := benchConfig{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "MPI-IO Test / IOR-style benchmark client through the forwarder (or directly, as a baseline)",
		Long: `Run an MPI-IO Test / IOR-style access pattern through a forwarding daemon, with
the same pattern definitions as the simulator: --procs processes (goroutines),
file per process or one shared file, contiguous or 1D-strided requests of
--request-size bytes, --total bytes over all processes.

The write phase writes deterministic content (derived from file and offset);
the read phase reads it back and checks every byte. Both phases are timed as
IOR does (makespan from the first process's start to the last one's end) and
printed with their bandwidth in MiB/s (1 MiB = 2^20 bytes), then with the CPU
time per GiB this process spent (user and system) and, on Linux, the share of
the machine's CPU time that a hypervisor gave to other guests meanwhile
(steal time, from /proc/stat). Files are created under --dir on the forwarder
and removed at the end unless --keep.

--direct DIR runs the same workload on the local directory DIR instead, with
no forwarder: each process opens its file with open(2) and moves its requests
with pwrite/pread through a buffer of its own; content, verification, timing,
output and removal are the same. It is the baseline for "forwarder over
direct" ratios: run both on the same file system (for a posix: backend, DIR
beside the backend's directory) and divide the bandwidths. DIR must
exist; the files are named as on the forwarder (DIR/fpp.00000.dat ... or
DIR/shared.dat). The forwarder-only flags (--forwarder, --conns, --dir,
--no-shm, --no-ring, --ring-spin, --forwarder-metrics) cannot be combined
with it.

--compare DIR does both in one command: --rounds rounds, each running the
workload through the forwarder and directly on DIR (which goes first
alternates), and prints each round's bandwidths and forwarder/direct ratio,
then each phase's median ratio. Both runs of a round see the same state of
the machine, so the ratios hold where absolute bandwidths drift. On a shared
virtual machine they do not hold where the hypervisor takes CPU time: each
round shows the larger steal of its two runs, and rounds with 5% or more are
named, with the median ratio of the others (a forwarded request passes
through several threads, and loses more to a descheduled CPU than direct
I/O does).

--read-passes N reads each process's requests N times in a row in the read
phase (a longer phase of the same access pattern, as an application
re-reading its input). --read-only skips the write phase: the read phase
reads the files that a run with --keep and the same pattern, --seed and
--dir left (for a steady reader whose files already exist).

--job ID runs every process under job ID on the forwarder, and --jobs N splits
the processes into N jobs (docs/jobs.md): the forwarder's QoS rules then
apply to them and its per-job metrics count their bytes.

--forwarder-metrics URL reads the daemon's CPU time from its Prometheus
metrics (adaptio forward --metrics-addr HOST:PORT; URL
http://HOST:PORT/metrics) before and after each phase: the phases then
report the CPU per GiB of both processes, and --compare also the direct
run's CPU per GiB over the forwarded one's (this process's and the daemon's),
the forwarder's cost in CPU, which another tenant's load on a shared machine
moves less than bandwidth. The daemon's counter moves in 10 ms ticks: give
each phase a second or more.`,
		Example: `  adaptio bench --forwarder 127.0.0.1:7070 --procs 16 --layout shared --spatiality strided --request-size 32KiB --total 256MiB
  adaptio bench --direct /dev/shm/bd --procs 16 --layout shared --spatiality strided --request-size 32KiB --total 256MiB
  adaptio bench --forwarder unix:/run/adaptio.sock --compare /dev/shm/bd --rounds 5 --layout fpp --request-size 32KiB --no-fill`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := cfg.pattern()
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			if err := cfg.checkDirect(cmd); err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			opts := fwdbench.Options{Dir: cfg.Dir, Seed: cfg.Seed, NoVerify: cfg.NoVerify, NoFill: cfg.NoFill, TransfersOnly: cfg.Transfers, Keep: cfg.Keep, ReadPasses: cfg.ReadPasses, Progress: cmd.ErrOrStderr(),
				Job: cfg.Job, Jobs: cfg.Jobs}
			if cfg.ForwarderMetrics != "" {
				probe := fwdbench.MetricsCPU(cfg.ForwarderMetrics)
				if _, err := probe(); err != nil {
					return fmt.Errorf("%w (--forwarder-metrics)", err)
				}
				opts.ForwarderCPU = probe
			}
			if cfg.Compare != "" {
				cmp, err := cfg.runCompare(cmd, p, opts)
				if err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				cmp.Print(cmd.OutOrStdout())
				return nil
			}
			var res fwdbench.Result
			if cfg.ReadOnly {
				res, err = cfg.runReadOnly(cmd, p, opts)
			} else if cfg.Direct != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s directly on %s (no forwarder)\n", p, cfg.Direct)
				res, err = fwdbench.RunDirect(cmd.Context(), cfg.Direct, p, opts)
			} else {
				res, err = cfg.runForwarder(cmd, p, opts)
			}
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			res.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Forwarder, "forwarder", "127.0.0.1:7070", "daemon address: host:port or unix:/path")
	f.StringVar(&cfg.Direct, "direct", "", "run the workload on this existing local directory with pread/pwrite and no forwarder: the baseline for forwarder/direct ratios")
	f.StringVar(&cfg.Compare, "compare", "", "run the workload both through the forwarder and directly on this existing local directory, alternately, and print forwarder/direct ratios per round and their median")
	f.IntVar(&cfg.Rounds, "rounds", 3, "with --compare: rounds of one forwarded and one direct run")
	f.IntVar(&cfg.Processes, "procs", 16, "number of processes (goroutines)")
	f.StringVar(&cfg.Layout, "layout", "shared", "file layout: fpp (file per process) or shared")
	f.StringVar(&cfg.Spatiality, "spatiality", "contiguous", "contiguous or strided (1D-strided)")
	f.StringVar(&cfg.Op, "op", "write", "operation measured: write or read (a write phase always comes first to create the data)")
	f.StringVar(&cfg.RequestSize, "request-size", "32KiB", "bytes per request (suffixes KiB, MiB)")
	f.StringVar(&cfg.Total, "total", "256MiB", "bytes over all processes (suffixes KiB, MiB, GiB)")
	f.IntVar(&cfg.Conns, "conns", 1, "connections to the forwarder; processes are spread over them")
	f.StringVar(&cfg.Dir, "dir", "bench", "directory on the forwarder for the benchmark files")
	f.Uint64Var(&cfg.Seed, "seed", 0, "varies the content written")
	f.BoolVar(&cfg.NoVerify, "no-verify", false, "skip the read-back phase")
	f.BoolVar(&cfg.NoFill, "no-fill", false, "time the I/O alone: fill each process's buffer once and write it in every request, and read back without checking (by default every request's content is generated and every byte read back is checked, in forwarded and --direct runs alike)")
	f.BoolVar(&cfg.Transfers, "transfers-only", false, "time each phase over its reads or writes alone: every process opens its file before the clock starts, and closes it after the clock stops at the last request's end (IOR reports open and close apart); the time the closes took, which on a mount includes waiting for its write-behind, is printed apart (by default a phase runs from the first open to the last close)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the files")
	f.IntVar(&cfg.ReadPasses, "read-passes", 1, "the read phase reads each process's requests this many times in a row through its one open file")
	f.BoolVar(&cfg.ReadOnly, "read-only", false, "skip the write phase and read the files a run with --keep and the same pattern, --seed and --dir left (implies --op read; the files stay)")
	f.StringVar(&cfg.Job, "job", "", "job id every process runs under on the forwarder, for its QoS rules and per-job metrics (docs/jobs.md; default none: job unknown)")
	f.IntVar(&cfg.Jobs, "jobs", 0, "split the processes into this many jobs of consecutive processes, named JOB.1 ... JOB.N (JOB: --job, else bench), as several applications sharing the forwarder (0 or 1: one job)")
	f.BoolVar(&cfg.NoShm, "no-shm", false, "with a unix: forwarder, send data over the socket instead of a shared-memory region (by default each process reads and writes through a buffer in the region, with no copy in the client)")
	f.BoolVar(&cfg.NoRing, "no-ring", false, "with a unix: forwarder, send each request in the shared region as a frame on the socket instead of through the region's submission and completion rings (docs/protocol.md, Rings)")
	f.StringVar(&cfg.ForwarderMetrics, "forwarder-metrics", "", "the daemon's Prometheus metrics URL (adaptio forward --metrics-addr), e.g. http://127.0.0.1:9090/metrics: each phase then also reports the daemon's CPU time per GiB, and --compare the CPU per GiB of both sides and their ratio, which another tenant's load on a shared machine moves less than bandwidth")
	f.DurationVar(&cfg.RingSpin, "ring-spin", client.DefaultRingSpin, "least time the completion reaper keeps polling the rings after its last completion before it sleeps: on an idle node 50 sweeps pass in microseconds, and each request would then wait for a wake-up through the socket (negative: sleep after 50 empty sweeps)")
	cfg.Auth.clientFlags(f)
	return cmd
}

// dial opens --conns connections to the forwarder: the first, and the
// others in opts.Clients. closeAll closes them all.
func (cfg benchConfig) dial(opts *fwdbench.Options) (c *client.Client, closeAll func(), err error) {
	token, tlsCfg, err := cfg.Auth.client()
	if err != nil {
		return nil, nil, err
	}
	copts := client.Options{Name: "bench", NoShm: cfg.NoShm, NoRing: cfg.NoRing, RingSpin: cfg.RingSpin, Token: token, TLS: tlsCfg}
	var all []*client.Client
	closeAll = func() {
		for _, x := range all {
			x.Close()
		}
	}
	for i := 0; i < cfg.Conns; i++ {
		x, err := client.DialOptions(cfg.Forwarder, copts)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		all = append(all, x)
	}
	opts.Clients = all[1:]
	return all[0], closeAll, nil
}

// runForwarder runs the pattern through --conns connections to the forwarder.
func (cfg benchConfig) runForwarder(cmd *cobra.Command, p workload.Pattern, opts fwdbench.Options) (fwdbench.Result, error) {
	c, closeAll, err := cfg.dial(&opts)
	if err != nil {
		return fwdbench.Result{}, err
	}
	defer closeAll()
	fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s through %s, %d connection(s)\n", p, cfg.Forwarder, cfg.Conns)
	return fwdbench.Run(cmd.Context(), c, p, opts)
}

// runCompare alternates runs through the forwarder and on --compare's directory.
func (cfg benchConfig) runCompare(cmd *cobra.Command, p workload.Pattern, opts fwdbench.Options) (fwdbench.Comparison, error) {
	c, closeAll, err := cfg.dial(&opts)
	if err != nil {
		return fwdbench.Comparison{}, err
	}
	defer closeAll()
	fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s, %d rounds through %s (%d connection(s)) and directly on %s\n", p, cfg.Rounds, cfg.Forwarder, cfg.Conns, cfg.Compare)
	return fwdbench.Compare(cmd.Context(), c, cfg.Compare, p, opts, cfg.Rounds)
}

// runReadOnly runs the read phase alone, on the files an earlier run with
// Keep left.
func (cfg benchConfig) runReadOnly(cmd *cobra.Command, p workload.Pattern, opts fwdbench.Options) (fwdbench.Result, error) {
	res := fwdbench.Result{Pattern: p, Direct: cfg.Direct != ""}
	var err error
	if cfg.Direct != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s directly on %s (no forwarder), read phase only\n", p, cfg.Direct)
		res.Read, err = fwdbench.VerifyDirect(cmd.Context(), cfg.Direct, p, opts)
	} else {
		c, closeAll, derr := cfg.dial(&opts)
		if derr != nil {
			return res, derr
		}
		defer closeAll()
		fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s through %s, %d connection(s), read phase only\n", p, cfg.Forwarder, cfg.Conns)
		res.Read, err = fwdbench.Verify(cmd.Context(), c, p, opts)
	}
	res.Verified = err == nil && !cfg.NoFill
	return res, err
}

// checkDirect refuses forwarder-only flags set together with --direct.
func (cfg benchConfig) checkDirect(cmd *cobra.Command) error {
	f := cmd.Flags()
	if cfg.Direct != "" && cfg.Compare != "" {
		return fmt.Errorf("--direct runs without the forwarder and --compare with and without it: drop one of them")
	}
	if f.Changed("rounds") && cfg.Compare == "" {
		return fmt.Errorf("--rounds applies to --compare")
	}
	if cfg.Compare != "" && cfg.Rounds < 1 {
		return fmt.Errorf("--rounds %d: want >= 1", cfg.Rounds)
	}
	if cfg.ReadPasses < 1 {
		return fmt.Errorf("--read-passes %d: want >= 1", cfg.ReadPasses)
	}
	if cfg.ReadOnly && (cfg.Compare != "" || cfg.NoVerify || f.Changed("op") && cfg.Op != "read") {
		return fmt.Errorf("--read-only runs the read phase alone: drop --compare, --no-verify and --op write")
	}
	if cfg.Jobs < 0 || cfg.Jobs > cfg.Processes {
		return fmt.Errorf("--jobs %d: want 0 to --procs (%d)", cfg.Jobs, cfg.Processes)
	}
	if cfg.Direct == "" {
		if f.Changed("direct") {
			return fmt.Errorf("--direct: want a directory")
		}
		return nil
	}
	for _, name := range []string{"forwarder", "conns", "dir", "no-shm", "no-ring", "ring-spin", "forwarder-metrics", "job", "jobs"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s applies to the forwarder; --direct runs without one: drop one of them", name)
		}
	}
	return nil
}

func (cfg benchConfig) pattern() (workload.Pattern, error) {
	var p workload.Pattern
	var err error
	if p.Layout, err = workload.ParseLayout(cfg.Layout); err != nil {
		return p, err
	}
	if p.Spatiality, err = workload.ParseSpatiality(cfg.Spatiality); err != nil {
		return p, err
	}
	if p.Op, err = rw.ParseOp(cfg.Op); err != nil {
		return p, err
	}
	if cfg.ReadOnly {
		p.Op = rw.Read
	}
	if p.RequestSize, err = workload.ParseSize(cfg.RequestSize); err != nil {
		return p, err
	}
	if p.TotalBytes, err = workload.ParseSize(cfg.Total); err != nil {
		return p, err
	}
	if cfg.Conns < 1 {
		return p, fmt.Errorf("--conns %d: want >= 1", cfg.Conns)
	}
	if p.Op == rw.Read && cfg.NoVerify {
		return p, fmt.Errorf("--op read needs the read phase; drop --no-verify")
	}
	p.Processes = cfg.Processes
	return p, p.Validate()
}
