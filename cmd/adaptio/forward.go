package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/pfs/pfsclient"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
	"github.com/adaptio/adaptio/workload"
)

// forwardConfig is the configuration of "adaptio forward".
type forwardConfig struct {
	Listen        []string
	Backend       string
	StripeSize    string
	StripeCount   int
	Layout        string // posix backend's layout kind (--layout)
	Servers       int    // data servers (--servers); 0: the layout kind's count
	MooseFSExec   string // --moosefs-exec: prefix of the MooseFS tools, split at spaces
	MooseFSList   string // --moosefs-servers: chunk servers, comma-separated
	MooseFSMaster string // --moosefs-master: host:port
	Scheduler     string
	SelectFrom    string
	SelectPeriod  time.Duration
	SelectPolicy  string
	SelectState   string
	SelectAlone   bool // --select-alone: choose alone even with a Council
	Window        time.Duration
	SkipEmpty     bool
	IdleStart     bool
	Aligned       bool
	Node          int
	Nodes         int
	Workers       int
	RingPolls     int
	RingSpin      time.Duration
	MetricsAddr   string
	Council       string
	CouncilPrefix string
	CouncilAuth   service.Security // NATS authentication and TLS towards the Council
	Keys          string           // --keys DIR: keyring.json and node-K.nk (keys.go)
	Keyring       string           // --keyring FILE (with NodeSeed)
	NodeSeed      string           // --node-seed FILE
	Interval      time.Duration
	Verbose       bool
	QoSRules      string  // --qos-rules FILE (qos.go)
	QoS           bool    // --qos: the per-job gate without rules
	QoSFairness   float64 // --qos-fairness
	QoSDepth      int
	Tune          tuneConfig
	Auth          fwdAuth // the data protocol's authentication (--token-file, --tls-*, --insecure)
}

func newForwardCmd() *cobra.Command {
	cfg := forwardConfig{}
	cmd := &cobra.Command{
		Use:   "forward",
		Short: "Run the forwarding daemon on an I/O node",
		Long: `Run the forwarding daemon of one I/O node. Clients (adaptio mount, adaptio bench,
programs using the fwd client library) connect over TCP or a Unix socket with the
binary protocol of docs/protocol.md. Each read or write is split per PFS data
server, scheduled (TWINS by default) and executed by a pool of workers that
aggregate contiguous requests (on a posix: backend, the pieces of one request
released together run as one pread/pwrite); a write is acknowledged once the
backend has it. Clients on this host connected to a unix: address move data
through a shared-memory region and pass requests through rings in it, polled by
the daemon (--ring-polls), so a busy client makes no system call per request.

Backends:
  posix:DIR              a directory (e.g. a mounted parallel file system), striped
                         over --stripe-count data-server queues in --stripe-size units
                         (a .adaptio-layout file in a directory overrides both), or
                         per the file system's own layouts (--layout lustre: one
                         queue per OST, each file's pieces on its OSTs; --layout
                         moosefs: one queue per chunk server, each 64 MiB chunk on
                         its server; docs/pfs.md)
  pfs:ADDR,ADDR,...      the data servers of "adaptio pfs", striped in --stripe-size units

Prometheus metrics (queue depth per server, window in force, bytes, request
latency, dispatch knobs, and adaptio_fwd_worker_wake_seconds: how late an idle
worker starts after requests are queued for it, the host's scheduling latency)
are served on --metrics-addr at /metrics.

--tune iopathtune (the IOPathTune heuristic of Rashid et al.) or dqn (a CAPES-style deep Q-network)
changes the dispatch knobs while the daemon runs, one decision every
--tune-interval from the bytes acknowledged and the bytes waiting: the most
requests merged into one access to a data server and the most accesses in
flight to one (docs/tuning.md). Each change is logged and counted in
adaptio_fwd_knob_changes_total; adaptio_fwd_knob shows the values in force.

Security: a --listen address beyond loopback (anything but 127.0.0.0/8, ::1,
localhost, unix:) is refused unless clients authenticate: --token-file FILE (each
client proves it holds the shared token, adaptio mount/bench --token-file FILE), or
--tls-cert/--tls-key/--tls-ca (mutual TLS: clients present certificates of the CA);
--insecure starts without either, on a network you trust. Refused sessions are logged
at WARN with the peer's address and counted in adaptio_fwd_sessions_refused_total.
The token authenticates; only TLS also encrypts the data (docs/security.md).

Nothing is written besides what clients write to the backend. Stops cleanly
on SIGINT/SIGTERM: requests already received complete first.`,
		Example: `  adaptio forward --backend posix:/mnt/pfs --listen 0.0.0.0:7070 --token-file /etc/adaptio/fwd.token --listen unix:/run/adaptio.sock
  adaptio forward --backend pfs:127.0.0.1:7101,127.0.0.1:7102 --node 1 --nodes 4 --window 2ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.SkipEmpty = skipEmpty(cmd.Flags(), cfg.SkipEmpty, cfg.Nodes)
			return runForward(cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&cfg.Listen, "listen", []string{"127.0.0.1:7070"}, "address to accept clients on: host:port or unix:/path (repeatable)")
	f.StringVar(&cfg.Backend, "backend", "", "posix:DIR or pfs:ADDR,ADDR,... (required)")
	f.StringVar(&cfg.StripeSize, "stripe-size", "64KiB", "stripe unit in bytes (suffixes KiB, MiB)")
	f.IntVar(&cfg.StripeCount, "stripe-count", 4, "posix backend, static layout: number of data servers (scheduler queues) files are striped over")
	f.StringVar(&cfg.Layout, "layout", posix.LayoutStatic, "posix backend: where each file's pieces go: "+strings.Join(posix.Kinds(), ", ")+". static: --stripe-size/--stripe-count round robin and .adaptio-layout files; lustre: each file's lustre.lov layout, queue i = OST index i; moosefs: each 64 MiB chunk on the queue of the chunk server holding it (mfsfileinfo), queue i = i-th chunk server (--moosefs-*); auto: lustre on a Lustre mount (statfs type), moosefs on a MooseFS mount (type fuse.mfs, or fuse from mfs#HOST:PORT), else static")
	f.IntVar(&cfg.Servers, "servers", 0, "posix backend: number of data servers (scheduler queues, TWINS's round robin); with --layout lustre the file system's OST count, the highest OST index in 'lfs df DIR' plus one (default 0: the layout kind decides: static --stripe-count; lustre the highest OST index the client lists in lov.*.target_obd, plus one)")
	f.StringVar(&cfg.MooseFSExec, "moosefs-exec", "", "--layout moosefs: command prefix the MooseFS tools (mfsfileinfo, mfscli) run with, split at spaces, e.g. 'nsenter --net=/var/run/netns/NAME' where the master is reachable only from a network namespace (default: none)")
	f.StringVar(&cfg.MooseFSList, "moosefs-servers", "", "--layout moosefs: the chunk servers as IP:PORT, comma-separated, in queue order (default: the master's list from 'mfscli -SCS', sorted by address, so every I/O node numbers them alike)")
	f.StringVar(&cfg.MooseFSMaster, "moosefs-master", "", "--layout moosefs: the master's HOST:PORT (port 9421 if left out) for listing the chunk servers (default: the mount's source mfs#HOST:PORT in the mount table)")
	f.StringVar(&cfg.Scheduler, "scheduler", fwd.DefaultScheduler, "scheduling algorithm: "+strings.Join(sched.Names(), ", ")+"; dynamic: --select-policy chooses among --select-from every --select-period (with --council, the Council's one choice for every I/O node that selects with the group, unless --select-alone); pattern: dynamic plus the JLESC AGIOS selection report's pattern matching and Markov prediction (docs/selection.md)")
	f.StringVar(&cfg.SelectFrom, "select-from", "mlf,to-agg,sjf,to,noop", "with --scheduler dynamic: the algorithms to choose among")
	f.DurationVar(&cfg.SelectPeriod, "select-period", time.Second, "with --scheduler dynamic: how often the algorithm may change")
	f.StringVar(&cfg.SelectPolicy, "select-policy", selection.PolicySettle, "with --scheduler dynamic: settle explores each algorithm 3 periods, in lockstep with every daemon whose clock agrees (periods start at multiples of --select-period since the Unix epoch), then keeps the least estimated time and changes only for one estimated 5% faster; agios: AGIOS's armed bandit; else a bandit policy (e.g. thompson) over the same algorithms")
	f.BoolVar(&cfg.SelectAlone, "select-alone", false, "with --scheduler dynamic and --council: choose the algorithm alone; by default the daemon runs the algorithm the Council's decisions name for every I/O node that selects with the group (switching as each decision arrives), and chooses alone until the first such decision, and again when none has named one for 3 periods (of --select-period or --interval, the longer)")
	f.StringVar(&cfg.SelectState, "select-state", "", "with --scheduler pattern: where the knowledge base of access patterns persists between runs: kv (the Council's JetStream KV, bucket "+selectionBucket+"; needs --council), a file path, or none (default: kv with --council, else none)")
	f.DurationVar(&cfg.Window, "window", sched.DefaultWindow, "TWINS time window (e.g. 125us, 1ms, 8ms)")
	f.BoolVar(&cfg.Aligned, "aligned", false, "TWINS: windows are slots of the wall clock (from the top of the hour), so forwarders whose clocks agree serve different data servers in every slot; --idle-start does not apply (default: the reference's windows, which drift apart forwarder by forwarder)")
	f.BoolVar(&cfg.SkipEmpty, "skip-empty", false, "TWINS: move to the next data server with requests when the current one has none (default: on when --nodes is 1, where no other I/O node's windows are there to keep clear and waiting for an empty server's window only idles; off with several I/O nodes, waiting for the window's end as the reference)")
	f.BoolVar(&cfg.IdleStart, "idle-start", true, "TWINS: a request reaching an idle I/O node (nothing queued or in flight) is served at once, its server's window starting then, instead of waiting for the round robin to reach its server; a lone synchronous request then costs what it costs under FIFO (--idle-start=false: the reference behaviour)")
	f.IntVar(&cfg.Node, "node", 0, "index of this I/O node, 0-based (TWINS starts at data server node mod servers)")
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of I/O nodes")
	f.IntVar(&cfg.Workers, "workers", 0, fmt.Sprintf("worker goroutines executing batches (most batches in flight); 0: %d, which keeps a parallel file system over the network busy, or %d per CPU if fewer when the posix: directory is on a local file system (tmpfs, ext4, XFS...), whose calls rarely block and whose extra workers only queue for the CPUs", fwd.DefaultWorkers, fwd.LocalWorkersPerCPU))
	f.IntVar(&cfg.RingPolls, "ring-polls", fwd.DefaultRingPolls, "sweeps over the unix: clients' submission rings that find nothing before the ring poller sleeps until a doorbell (negative: sleep at once, spending no CPU on polling)")
	f.DurationVar(&cfg.RingSpin, "ring-spin", fwd.DefaultRingSpin, "least time the ring poller keeps polling the rings after its last submission before it sleeps, unless requests wait in the scheduler: on an idle node 50 sweeps pass in microseconds, and each request would then wait for a wake-up through the socket (negative: --ring-polls alone decides)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this host:port (empty: off; read-only and unauthenticated: beyond loopback it is logged at WARN)")
	f.StringVar(&cfg.Council, "council", "", "NATS URL of the Council (nats://host:4222); empty: no announcer")
	f.StringVar(&cfg.CouncilPrefix, "council-prefix", announce.DefaultPrefix, "subject prefix of the Council group")
	f.StringVar(&cfg.CouncilAuth.User, "council-user", "", "NATS user name towards the Council (the password comes from $ADAPTIO_NATS_PASSWORD)")
	f.StringVar(&cfg.CouncilAuth.NKeySeedFile, "council-nkey-seed", "", "file holding an NKey user seed (SU...) to authenticate to NATS with")
	f.StringVar(&cfg.CouncilAuth.TLSCA, "council-tls-ca", "", "PEM CA bundle that the NATS server's certificate must chain to")
	f.StringVar(&cfg.CouncilAuth.TLSCert, "council-tls-cert", "", "PEM client certificate for NATS (mutual TLS)")
	f.StringVar(&cfg.CouncilAuth.TLSKey, "council-tls-key", "", "PEM private key of --council-tls-cert")
	f.DurationVar(&cfg.Interval, "interval", announce.DefaultInterval, "how often the announcer reports to the Council")
	f.StringVar(&cfg.Keys, "keys", "", "with --council: the group's key directory holding keyring.json and this node's seed node-K.nk (K = --node): reports are signed with node K's key, which also authenticates to NATS, and only decisions signed by the keyring's Council key, fresh and with rounds moving forward, are applied. Without keys, a --council beyond loopback is refused unless --insecure")
	f.StringVar(&cfg.Keyring, "keyring", "", "with --council, instead of --keys: the group's keyring.json")
	f.StringVar(&cfg.NodeSeed, "node-seed", "", "with --keyring: this node's seed file (SU..., mode 0600)")
	f.BoolVarP(&cfg.Verbose, "verbose", "v", false, "log connections and errors to stderr at debug level")
	qosFlags(f, &cfg)
	cfg.Tune.flags(f, "the aggregation limit and the accesses in flight per data server")
	cfg.Auth.serverFlags(f)
	return cmd
}

// openBackend opens a backend from its "posix:DIR" or "pfs:ADDR,..." spec.
// The pfs: client announces node to the data servers (their model charges
// the cost of interleaving I/O nodes) and logs to log when a data server
// goes down or comes back.
func openBackend(spec, stripeSize string, stripeCount, node int, log *slog.Logger, layoutKind string, servers int, mfs posix.MooseFSOptions) (backend.Backend, error) {
	kind, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("backend %q: want posix:DIR or pfs:ADDR,ADDR,... (see --help)", spec)
	}
	stripe, err := workload.ParseSize(stripeSize)
	if err != nil {
		return nil, fmt.Errorf("--stripe-size: %w", err)
	}
	switch kind {
	case "posix":
		if servers < 0 {
			return nil, fmt.Errorf("--servers %d: want a positive count, or 0 for the layout kind's", servers)
		}
		b, err := posix.Open(posix.Options{Root: arg, Layout: layoutKind, Static: layout.Layout{StripeSize: stripe, StripeCount: stripeCount}, Servers: servers, MooseFS: mfs, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", spec, err)
		}
		return b, nil
	case "pfs":
		b, err := pfsclient.NewClient(pfsclient.ClientOptions{Addrs: strings.Split(arg, ","), StripeSize: stripe, Node: node, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", spec, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("backend %q: unknown kind %q (want posix or pfs)", spec, kind)
}

// mooseFS is the moosefs layout kind's settings from the --moosefs-* flags.
func (cfg forwardConfig) mooseFS() (posix.MooseFSOptions, error) {
	servers, err := posix.ParseMooseFSServerList(cfg.MooseFSList)
	if err != nil {
		return posix.MooseFSOptions{}, fmt.Errorf("--moosefs-servers: %w", err)
	}
	return posix.MooseFSOptions{Exec: strings.Fields(cfg.MooseFSExec), ChunkServers: servers, Master: strings.TrimSpace(cfg.MooseFSMaster)}, nil
}

// skipEmpty is TWINS's SkipEmpty for the daemon: as set by --skip-empty,
// else on for a lone I/O node (nodes 1), which has no other node's windows
// to keep clear: waiting for an empty server's window there only idles
// (IOR reads through the mount on tmpfs, 8 ranks of 256 KiB, one file
// each: 343 MiB/s waiting, 1,243 moving on; FIFO 1,081).
func skipEmpty(flags *pflag.FlagSet, set bool, nodes int) bool {
	if flags.Changed("skip-empty") {
		return set
	}
	return nodes == 1
}

func runForward(cmd *cobra.Command, cfg forwardConfig) error {
	if cfg.Backend == "" {
		return errors.New("forward: --backend is required (posix:DIR or pfs:ADDR,...)")
	}
	if err := requirePositive(cmd, "interval"); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := cfg.Tune.check(); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	var selectNames []string
	var driver *selection.Driver
	var selectRNG *rand.Rand
	patterns := cfg.Scheduler == "pattern"
	follow := cfg.Scheduler == "dynamic" && cfg.Council != "" && !cfg.SelectAlone
	if cfg.SelectAlone && (cfg.Scheduler != "dynamic" || cfg.Council == "") {
		return errors.New("forward: --select-alone needs --scheduler dynamic and --council")
	}
	if cfg.SelectState != "" && !patterns {
		return errors.New("forward: --select-state needs --scheduler pattern")
	}
	if patterns || cfg.Scheduler == "dynamic" {
		selectRNG = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cfg.Node)))
		var err error
		if selectNames, err = selectSchedulers(cfg.SelectFrom); err != nil {
			return fmt.Errorf("forward: %w", err)
		}
		if cfg.SelectPeriod <= 0 {
			return fmt.Errorf("forward: --select-period %v: want a positive duration", cfg.SelectPeriod)
		}
		// Periods on the wall clock (since the Unix epoch), so that daemons
		// whose clocks agree explore in lockstep (--select-policy settle).
		dcfg := selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: selectNames}, Period: cfg.SelectPeriod, Policy: cfg.SelectPolicy,
			Start: selectionNow(time.Now()).Truncate(cfg.SelectPeriod)}
		if patterns {
			dcfg.Patterns = &selection.KBConfig{}
		}
		if driver, err = selection.NewDriver(dcfg, 1, selectRNG); err != nil {
			return fmt.Errorf("forward: %w", err)
		}
		cfg.Scheduler = driver.Current(0)
	}
	level := slog.LevelInfo
	if cfg.Verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var ring *keyring.Keyring
	var signer *keyring.Signer
	if cfg.Council != "" {
		var err error
		if ring, signer, err = forwardKeys(cfg, log); err != nil {
			return fmt.Errorf("forward: %w", err)
		}
	}
	mfs, err := cfg.mooseFS()
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	be, err := openBackend(cfg.Backend, cfg.StripeSize, cfg.StripeCount, cfg.Node, log, cfg.Layout, cfg.Servers, mfs)
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	defer be.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ds *daemonSelection
	if driver != nil {
		ds = &daemonSelection{dr: driver, follow: follow, lapse: 3 * max(cfg.SelectPeriod, cfg.Interval)}
		if patterns {
			if ds.store, err = selectionStore(cmd.Context(), cfg); err != nil {
				return fmt.Errorf("forward: --select-state: %w", err)
			}
			n, err := ds.load(cmd.Context())
			if err != nil {
				return fmt.Errorf("forward: %w", err)
			}
			if ds.store != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: %s: %d known patterns\n", ds.store, n)
			}
		}
	}
	var onRequest func(uint64, int64, int64, rw.Op)
	if patterns {
		onRequest = ds.request
	}
	token, tlsCfg, err := cfg.Auth.server()
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	qosRules, err := readQoSRules(cfg.QoSRules)
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	d, err := fwd.New(fwd.Options{
		QoS: cfg.QoS || cfg.QoSRules != "", QoSRules: qosRules, QoSDepth: cfg.QoSDepth, QoSFairness: cfg.QoSFairness,
		Token: token, TLS: tlsCfg, Insecure: cfg.Auth.Insecure,
		Listen: cfg.Listen, Backend: be, Scheduler: cfg.Scheduler, Workers: cfg.Workers, RingPolls: cfg.RingPolls, RingSpin: cfg.RingSpin,
		Sched:       sched.Config{Window: cfg.Window, SkipEmpty: cfg.SkipEmpty, IdleStart: cfg.IdleStart, Aligned: cfg.Aligned, Node: cfg.Node, Nodes: cfg.Nodes},
		MetricsAddr: cfg.MetricsAddr, Logger: log, Registerer: reg, Gatherer: reg,
		Observe: cfg.Council != "", OnRequest: onRequest,
	})
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := d.Start(); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	defer d.Shutdown()
	defer watchQoSRules(cmd, d, cfg.QoSRules, log)()
	fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: serving %s on %s (scheduler %s, %d data servers, %d workers%s)\n",
		cfg.Backend, strings.Join(d.Addrs(), ", "), cfg.Scheduler, be.Servers(), d.Workers(), workersWhy(cfg.Workers, d.Workers()))
	if a := d.MetricsAddr(); a != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: metrics on http://%s/metrics\n", a)
	}
	if driver != nil {
		with := ""
		if follow {
			with = ", following the Council's choice for the group when it makes one"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: dynamic selection among %s every %v%s\n", strings.Join(selectNames, ","), cfg.SelectPeriod, with)
		ds.start(d, selectNames, cfg.SelectPeriod, log, reg)
		go runSelection(cmd.Context(), d, ds, cfg.SelectPeriod, selectRNG, log, reg, selectNames)
	}
	if err := cfg.Tune.start(cmd.Context(), d, log, cmd.ErrOrStderr(), "adaptio forward"); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	stopAnnouncer, err := startAnnouncer(cmd, cfg, d, ds, log, reg, ring, signer)
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	defer stopAnnouncer()
	<-cmd.Context().Done()
	fmt.Fprintln(cmd.ErrOrStderr(), "adaptio forward: shutting down")
	return nil
}

// workersWhy explains a default worker count under fwd.DefaultWorkers (the
// daemon's rule for a local file system); flag is --workers.
func workersWhy(flag, workers int) string {
	if flag == 0 && workers < fwd.DefaultWorkers {
		return fmt.Sprintf(": %d per CPU on a local file system", fwd.LocalWorkersPerCPU)
	}
	return ""
}

// The daemon is the Announcer's Source and Applier; package fwd does not
// import announce (its clients would link NATS), so the fit is checked
// here, where the two are joined.
var (
	_ announce.Source  = (*fwd.Daemon)(nil)
	_ announce.Applier = (*fwd.Daemon)(nil)

	_ announce.JobSource         = selectingDaemon{}
	_ announce.PlanApplier       = selectingDaemon{}
	_ announce.SelectionReporter = selectingDaemon{}
	_ announce.SchedulerApplier  = selectingDaemon{}
)

// selectingDaemon is the daemon under dynamic selection as the Announcer
// sees it: its reports say whether it follows the group's choice, and the
// algorithm a decision names reaches its selection.
type selectingDaemon struct {
	*fwd.Daemon
	sel *daemonSelection
}

func (s selectingDaemon) Selection() string                { return s.sel.Selection() }
func (s selectingDaemon) ApplyScheduler(name string) error { return s.sel.ApplyScheduler(name) }

// ApplyWindow and ApplyPlan pass the Council's windows on while the
// daemon runs TWINS; under the other algorithms a window has no meaning,
// and is not an error to log every round.
func (s selectingDaemon) ApplyWindow(w time.Duration) error {
	if s.Scheduler() != "twins" {
		return nil
	}
	return s.Daemon.ApplyWindow(w)
}

func (s selectingDaemon) ApplyPlan(w, read, write time.Duration) error {
	if s.Scheduler() != "twins" {
		return nil
	}
	return s.Daemon.ApplyPlan(w, read, write)
}

// startAnnouncer connects the daemon to the Council when --council is set:
// every --interval it reports the daemon's observation and it applies the
// windows the Council decides. It returns the function that stops it.
func startAnnouncer(cmd *cobra.Command, cfg forwardConfig, d *fwd.Daemon, ds *daemonSelection, log *slog.Logger, reg prometheus.Registerer, ring *keyring.Keyring, signer *keyring.Signer) (func(), error) {
	if cfg.Council == "" {
		return func() {}, nil
	}
	var def time.Duration
	if cfg.Scheduler == "twins" {
		def = cfg.Window
	}
	natsOpts, err := councilNATSOptions(cfg)
	if err != nil {
		return nil, err
	}
	ao := announce.Options{
		URL: cfg.Council, Prefix: cfg.CouncilPrefix, Node: cfg.Node, Interval: cfg.Interval, Default: def,
		Source: d, Applier: d, Logger: log, Registerer: reg, NATSOptions: natsOpts,
	}
	if ds != nil {
		sd := selectingDaemon{d, ds}
		ao.Source, ao.Applier = sd, sd
	}
	announceKeys(&ao, cfg, ring, signer)
	a, err := announce.New(ao)
	if err != nil {
		return nil, fmt.Errorf("--council: %w", err)
	}
	if err := a.Start(cmd.Context()); err != nil {
		return nil, fmt.Errorf("--council: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "adaptio forward: reporting to the Council at %s every %v as node %d\n", cfg.Council, cfg.Interval, cfg.Node)
	return a.Shutdown, nil
}

// councilNATSOptions are the connection options towards the Council's
// NATS: user and password ($ADAPTIO_NATS_PASSWORD), NKey, TLS.
func councilNATSOptions(cfg forwardConfig) ([]nats.Option, error) {
	auth := cfg.CouncilAuth
	if auth.User != "" {
		auth.Password = os.Getenv("ADAPTIO_NATS_PASSWORD")
		if auth.Password == "" {
			return nil, errors.New("--council-user needs the password in $ADAPTIO_NATS_PASSWORD")
		}
	}
	natsOpts, err := auth.ClientOptions()
	if err != nil {
		return nil, fmt.Errorf("--council: %w", err)
	}
	return natsOpts, nil
}

// selectionStore is where --scheduler pattern keeps its knowledge base
// (--select-state): the Council's JetStream KV, a file, or nowhere (nil).
func selectionStore(ctx context.Context, cfg forwardConfig) (kbStore, error) {
	where := cfg.SelectState
	if where == "" {
		where = "none"
		if cfg.Council != "" {
			where = "kv"
		}
	}
	switch where {
	case "none":
		return nil, nil
	case "kv":
		if cfg.Council == "" {
			return nil, errors.New("kv needs --council (the Council's NATS)")
		}
		opts, err := councilNATSOptions(cfg)
		if err != nil {
			return nil, err
		}
		nc, err := nats.Connect(cfg.Council, append(opts, nats.Name(fmt.Sprintf("adaptio forward %d selection", cfg.Node)))...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Council, err)
		}
		prefix := cfg.CouncilPrefix
		if prefix == "" {
			prefix = announce.DefaultPrefix
		}
		st, err := newKVStore(ctx, nc, prefix, cfg.Node)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return st, nil
	}
	return fileStore(where), nil
}
