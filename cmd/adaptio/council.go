package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilbench"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/detect/learn"
	"github.com/adaptio/adaptio/internal/listen"
	"github.com/adaptio/adaptio/internal/statelock"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
)

// councilConfig is the configuration of "adaptio council".
type councilConfig struct {
	Prefix      string
	NATS        string
	Replicas    int
	Listen      string
	StateDir    string
	HTTP        string
	DecisionLog string
	Policy      string
	Epsilon     float64
	Windows     []time.Duration
	Default     time.Duration
	Consensus   string
	Reward      string
	Timeout     time.Duration
	Nodes       int
	Forget      int
	MaxNodes    int
	Model       string
	Seed        uint64
	NoPlan      bool
	Credit      string
	MaxPull     time.Duration
	Security    service.Security
	Insecure    bool              // embedded server: listen beyond loopback without authentication
	Keys        string            // --keys DIR: sign decisions, verify reports (keys.go)
	Admission   service.Admission // bounds of the reports that reach learning
	Verbose     bool
	Operator    operatorFlags // shadow, guardrail, audit log (councilctl.go)
	SelectFrom  string        // --select-from: the group's algorithms
	SelectPol   string        // --select-policy
	JobContext  string        // --job-context
}

// addCoreFlags registers the learning flags shared by "council" and "council bench".
func addCoreFlags(cmd *cobra.Command, cfg *councilConfig) {
	f := cmd.Flags()
	f.StringVar(&cfg.Policy, "policy", council.DefaultPolicy, "bandit policy: "+strings.Join(bandit.Names(), ", "))
	f.Float64Var(&cfg.Epsilon, "epsilon", 0, "exploration probability of the egreedy policies (0: the policy's default, 0.15 for egreedy)")
	f.DurationSliceVar(&cfg.Windows, "windows", sched.Windows, "TWINS windows to choose from (the bandit's arms)")
	f.DurationVar(&cfg.Default, "default-window", sched.DefaultWindow, "window in force before the first decision (one of --windows)")
	f.StringVar(&cfg.Consensus, "consensus", council.Majority, "how per-node recommendations become one window: majority (the papers) or bandwidth (votes weighted by bandwidth)")
	f.StringVar(&cfg.Reward, "reward", council.RewardOpBandwidth, "reward of an interval: op-bandwidth (bytes/s of the interval's majority operation while it ran: a phase shorter than the interval is not diluted), bandwidth (bytes/s over the interval, the papers'), per-process (bytes/s per process) or served (bytes completed / bytes requested)")
	f.DurationVar(&cfg.Timeout, "round-timeout", council.DefaultTimeout, "a round closes at most this long after its first report, even if known I/O nodes are silent")
	f.IntVar(&cfg.Forget, "forget", council.DefaultForget, "rounds a silent I/O node may miss before the Council stops waiting for it")
	f.IntVar(&cfg.MaxNodes, "max-nodes", council.DefaultMaxNodes, "reports from I/O node indexes >= this are refused (bounds the state a rogue reporter can create)")
	f.StringVar(&cfg.Model, "model", "", "access-pattern model file (from \"adaptio detect train\"; empty: the embedded default model)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the Council's random choices")
	addCreditFlags(f, &cfg.Credit, &cfg.MaxPull, council.DefaultMaxPull, "")
	addRoundCreditFlag(f, &cfg.Credit)
	f.StringVar(&cfg.JobContext, "job-context", council.JobContextNode, "what the bandits learn from where a report carries its I/O node's jobs (adaptio mount or adaptio bench --job, two or more jobs active; docs/jobs.md): node (the pattern of the node's mixed requests; every job's pattern is still detected and logged), mix (the set of the jobs' patterns, rewarded with the node's bandwidth) or dominant (the pattern of the job that moved the most bytes)")
	f.BoolVar(&cfg.NoPlan, "no-plan", false, "decide one window only, as the papers' Council; by default each decision also carries a window for reads and one for writes, for the pattern each direction is expected to take next, which the I/O nodes apply as soon as their requests turn")
}

// addCreditFlags registers --credit and --node-credit, its papers' mode by
// a name of its own; when prefixes their help ("with --learn: ").
func addCreditFlags(f *pflag.FlagSet, credit *string, maxPull *time.Duration, maxPullDefault time.Duration, when string) {
	f.StringVar(credit, "credit", council.CreditPhase, when+"how rewards teach the bandits: phase (the consecutive rounds in which a pattern ran one window are one pull of up to --max-pull, its bytes over its spans, and the plan keeps that window while the pull is open: a short phase is one pull under one window), round (each round a pull, with its I/O nodes' mean reward) or node (each I/O node's reward apart, as the papers' Council)")
	f.DurationVar(maxPull, "max-pull", maxPullDefault, when+"with --credit phase: the longest pull, in report intervals; a phase up to this long is one pull, a longer one a pull this long at a time and one of its tail")
	f.BoolFunc("node-credit", when+"the same as --credit node: each I/O node's reward apart, as the papers' Council", func(s string) error {
		v, err := strconv.ParseBool(s)
		if v {
			*credit = council.CreditNode
		}
		return err
	})
}

// addRoundCreditFlag registers --round-credit, the default for a while
// (deprecated: --credit round).
func addRoundCreditFlag(f *pflag.FlagSet, credit *string) {
	f.BoolFunc("round-credit", "", func(s string) error {
		v, err := strconv.ParseBool(s)
		if v {
			*credit = council.CreditRound
		}
		return err
	})
	_ = f.MarkDeprecated("round-credit", "use --credit round (or the default, --credit phase)")
}

// addSecurityFlags registers the NATS authentication and TLS flags.
func addSecurityFlags(cmd *cobra.Command, s *service.Security) {
	f := cmd.Flags()
	f.StringVar(&s.User, "user", "", "NATS user name (the password comes from $ADAPTIO_NATS_PASSWORD)")
	f.StringVar(&s.NKeySeedFile, "nkey-seed", "", "file holding an NKey user seed (SU...) to authenticate with; the embedded server accepts its public key")
	f.StringSliceVar(&s.AllowNKeys, "allow-nkey", nil, "embedded server: further NKey user public keys (U...) to accept, e.g. one per I/O node (repeatable); each may publish the reports of any node of the group, or only its own when the group's keyring (--keys) lists it as node k's")
	f.StringVar(&s.TLSCert, "tls-cert", "", "PEM certificate: the embedded server's, or the client certificate for --nats")
	f.StringVar(&s.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&s.TLSCA, "tls-ca", "", "PEM CA bundle: embedded server: require client certificates signed by it; --nats: verify the server with it")
}

func (c councilConfig) core() (council.Config, error) {
	cc := council.Config{
		Policy: c.Policy, Options: bandit.Options{Epsilon: c.Epsilon}, Windows: c.Windows, Default: c.Default,
		Consensus: c.Consensus, Reward: c.Reward, Timeout: c.Timeout, Nodes: c.Nodes, Forget: c.Forget, MaxNodes: c.MaxNodes,
		NoPlan: c.NoPlan, Credit: c.Credit, MaxPull: c.MaxPull, JobContext: c.JobContext,
		Select: council.SelectConfig{Policy: c.SelectPol, Seed: c.Seed},
	}
	if c.SelectFrom != "" {
		names, err := selectSchedulers(c.SelectFrom)
		if err != nil {
			return cc, err
		}
		cc.Select.Schedulers = names
	}
	if c.Model != "" {
		m, err := learn.LoadFile(c.Model)
		if err != nil {
			return cc, fmt.Errorf("--model: %w", err)
		}
		cc.Detector = m
	}
	return cc, nil
}

func newCouncilCmd() *cobra.Command {
	var cfg councilConfig
	cmd := &cobra.Command{
		Use:   "council",
		Short: "Run the Council: detects each I/O node's access pattern and decides the TWINS window over NATS",
		Long: `The Council receives each I/O node's metrics every interval (from the Announcer in
"adaptio forward --council URL"), detects the node's access pattern, learns per
pattern and operation which TWINS window gives the most bandwidth (a contextual
bandit), and broadcasts one window to all I/O nodes of its group each round.

By default it runs an embedded NATS server (--listen) with JetStream in --state-dir:
learned state is written to a JetStream KV bucket after every round, so killing and
restarting the Council resumes learning where it stopped. --nats joins an existing
NATS cluster instead (it must have JetStream enabled): three "adaptio nats" nodes, or
nats-server, with --replicas 3 so the learned state survives the loss of a node.

Subjects: <prefix>.report.<node> (reports), <prefix>.decision (decisions); several
Councils, one per group of I/O nodes, use different --prefix values.
HTTP (--http): /metrics (Prometheus), /status (JSON: contexts, value estimates,
counts, current window), /healthz. --decision-log writes one JSON line per round:
per-node metrics, detected pattern, recommendation, chosen window and probability.
See docs/council.md.`,
		Example: `  adaptio council --state-dir /var/lib/adaptio/council --http 0.0.0.0:9464 --decision-log decisions.jsonl
  adaptio council --nats nats://nats1:4222,nats://nats2:4222 --prefix adaptio.rack7 --user council
  adaptio council --nats nats://n1:4222,nats://n2:4222,nats://n3:4222 --replicas 3
  adaptio council bench --announcers 768 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requirePositive(cmd, "replicas"); err != nil {
				return fmt.Errorf("council: %w", err)
			}
			return runCouncil(cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Prefix, "prefix", service.DefaultPrefix, "subject prefix of this Council's group of I/O nodes")
	f.StringVar(&cfg.NATS, "nats", "", "URL(s) of an external NATS server or cluster with JetStream (empty: embedded server)")
	f.IntVar(&cfg.Replicas, "replicas", 1, "copies of the learned-state KV bucket on a clustered JetStream (3 on a cluster of three adaptio nats nodes: the state survives the loss of any one)")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:4222", "embedded NATS server: host:port to accept Announcers on")
	f.StringVar(&cfg.StateDir, "state-dir", "adaptio-council-state", "embedded NATS server: JetStream directory where learned state persists (empty: temporary, lost at exit)")
	f.StringVar(&cfg.HTTP, "http", "127.0.0.1:9464", "host:port for /metrics, /status and /healthz (empty: off)")
	f.StringVar(&cfg.DecisionLog, "decision-log", "", "append one JSON line per round to this file (\"-\": stdout; empty: off)")
	f.IntVar(&cfg.Nodes, "nodes", 0, "I/O nodes 0..N-1 expected from the start (others are waited for once they report)")
	f.BoolVarP(&cfg.Verbose, "verbose", "v", false, "log at debug level (rejected messages, ...)")
	addCoreFlags(cmd, &cfg)
	f.StringVar(&cfg.SelectFrom, "select-from", strings.Join(council.DefaultSelectFrom, ","), "the scheduling algorithms the Council chooses among for the I/O nodes that select theirs with the group (adaptio forward --scheduler dynamic --council, unless --select-alone): each round in which all of them ran the group's algorithm is one period of that choice, their bytes summed")
	f.StringVar(&cfg.SelectPol, "select-policy", selection.PolicySettle, "how the Council chooses the group's algorithm: settle (explore each 3 rounds, then keep the least estimated time, changing only for one estimated 5% faster), agios (AGIOS's armed bandit) or a bandit policy (e.g. thompson)")
	addSecurityFlags(cmd, &cfg.Security)
	f.StringVar(&cfg.Keys, "keys", "", "the group's key directory (adaptio keys init DIR) or its keyring.json with council.nk beside it: the Council signs every decision with council.nk, accepts a report on <prefix>.report.K only when signed by node K's key (other nodes refused), the embedded server admits the keyring's keys with their roles' rights, and operators' requests must be signed by an operator key. Without it, messages are unsigned: refused with --nats beyond loopback unless --insecure")
	f.DurationVar(&cfg.Admission.Interval, "report-interval", time.Second, "the I/O nodes' report interval (adaptio forward --interval): a report claiming an interval over 4 times it is refused, and a node may send 4 reports per interval (a burst of 8)")
	f.Float64Var(&cfg.Admission.MaxBandwidth, "max-node-bandwidth", service.DefaultMaxBandwidth, "one I/O node's bandwidth ceiling in bytes per second (default 1e12, 1 TB/s): a report claiming more, or more bytes than that over its interval, is refused before it reaches learning")
	addOperatorFlags(cmd, &cfg.Operator)
	f.BoolVar(&cfg.Insecure, "insecure", false, "embedded server: start even though --listen is beyond loopback and no client authentication is configured (--user, --nkey-seed/--allow-nkey, --keys, --tls-ca); anyone who reaches it could publish decisions: a trusted network only")
	cmd.AddCommand(newCouncilBenchCmd())
	cmd.AddCommand(newCouncilCtlCmds()...)
	return cmd
}

func councilLogger(verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func runCouncil(cmd *cobra.Command, cfg councilConfig) error {
	log := councilLogger(cfg.Verbose)
	if cfg.HTTP != "" && !listen.Local(cfg.HTTP) {
		log.Warn("--http serves /metrics, /status and /healthz beyond loopback without authentication (read-only: the learned state is visible)", "addr", cfg.HTTP)
	}
	cfg.Security.Password = os.Getenv("ADAPTIO_NATS_PASSWORD")
	if cfg.Security.User != "" && cfg.Security.Password == "" {
		return errors.New("council: --user needs the password in $ADAPTIO_NATS_PASSWORD")
	}
	core, err := cfg.core()
	if err != nil {
		return fmt.Errorf("council: %w", err)
	}
	opts := service.Options{
		Prefix: cfg.Prefix, URL: cfg.NATS, StateDir: cfg.StateDir, Security: cfg.Security, Core: core,
		Seed: cfg.Seed, HTTPAddr: cfg.HTTP, Logger: log, Replicas: cfg.Replicas, Admission: cfg.Admission,
	}
	if err := councilKeys(cfg.Keys, &opts, cfg.Insecure, log); err != nil {
		return fmt.Errorf("council: %w", err)
	}
	if cfg.NATS == "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return fmt.Errorf("council: --listen: %w", err)
		}
		opts.Host, opts.Port = host, port
		if err := listen.Require("council --listen", cfg.Listen, embeddedAuth(cmd, cfg.Security), cfg.Insecure); err != nil {
			return fmt.Errorf("council: %w", err)
		}
		if listen.Insecure(cfg.Listen, embeddedAuth(cmd, cfg.Security)) {
			log.Warn("embedded NATS server beyond loopback without authentication (--insecure): anyone who reaches it can publish decisions and reports", "listen", cfg.Listen)
		}
		if port > 0 {
			// The embedded server would retry a taken port until its
			// start-up deadline and then say only "not ready".
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return fmt.Errorf("council: --listen %s: %w (another Council or NATS server there? choose another port, or --nats to use it)", cfg.Listen, err)
			}
			ln.Close()
		}
		if cfg.StateDir != "" {
			lock, err := statelock.Acquire(cfg.StateDir)
			if err != nil {
				return fmt.Errorf("council: --state-dir: %w", err)
			}
			defer lock.Release()
		}
	}
	switch cfg.DecisionLog {
	case "":
	case "-":
		opts.DecisionLog = cmd.OutOrStdout()
	default:
		f, err := os.OpenFile(cfg.DecisionLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return fmt.Errorf("council: --decision-log: %w", err)
		}
		defer f.Close()
		opts.DecisionLog = f
	}
	closeAudit, err := cfg.Operator.apply(&opts)
	if err != nil {
		return fmt.Errorf("council: %w", err)
	}
	defer closeAudit()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Registerer = reg
	s, err := service.New(opts)
	if err != nil {
		return fmt.Errorf("council: %w", err)
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("council: %w", err)
	}
	defer s.Shutdown()
	st := s.Status()
	log.Info("council ready", "nats", s.ClientURL(), "prefix", cfg.Prefix, "http", s.HTTPAddr(),
		"round", st.Round, "contexts", len(st.Contexts), "policy", core.Policy)
	<-cmd.Context().Done()
	log.Info("council stopping: persisting learned state")
	return nil
}

func splitHostPort(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q: want host:port", s)
	}
	p, err := strconv.Atoi(s[i+1:])
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", s)
	}
	if p == 0 {
		p = -1 // any free port
	}
	return s[:i], p, nil
}

// councilBenchConfig is the configuration of "adaptio council bench".
type councilBenchConfig struct {
	councilConfig
	Announcers int
	Interval   time.Duration
	Duration   time.Duration
	Warmup     int
	Conns      int
	Procs      int
	JSON       bool
	Align      string
	// Worker mode (child processes started by --procs).
	Worker      bool
	WorkerFirst int
	WorkerCount int
}

func newCouncilBenchCmd() *cobra.Command {
	var cfg councilBenchConfig
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the Council's time to decision with N Announcers",
		Long: `Starts a Council (embedded NATS server on a free loopback port, temporary state) and N
Announcers that report every --interval, in this process (sharing --conns NATS
connections) or in --procs child processes over loopback NATS. After --warmup rounds,
every Announcer records the time from sending its report to receiving the round's
decision, for --duration. Prints p50, p99, max and the Council's cost per round:
handler time (decode, detect, learn, decide, publish) and, with --procs, the CPU time
of the Council process (Council and embedded NATS server) per round.`,
		Example: `  adaptio council bench --announcers 768 --duration 30s
  adaptio council bench --announcers 10000 --procs 4 --duration 30s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCouncilBench(cmd, cfg) },
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Prefix, "prefix", "adaptio.bench", "subject prefix")
	f.StringVar(&cfg.NATS, "nats", "", "URL of an external NATS server running a Council (empty: start one here)")
	f.IntVar(&cfg.Announcers, "announcers", 768, "number of Announcers (simulated I/O nodes)")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "reporting interval")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured time after the warm-up")
	f.IntVar(&cfg.Warmup, "warmup", 3, "rounds ignored at the start")
	f.IntVar(&cfg.Conns, "conns", 0, "in-process: NATS connections shared by the Announcers (0: one per 128)")
	f.IntVar(&cfg.Procs, "procs", 0, "run the Announcers in this many child processes (0: in this process)")
	f.BoolVar(&cfg.JSON, "json", false, "print the result as JSON instead of a table")
	f.StringVar(&cfg.Align, "align", "clock", "when Announcers report: clock (at multiples of --interval on the wall clock) or decision (one --interval after each decision)")
	f.BoolVarP(&cfg.Verbose, "verbose", "v", false, "log the Council at debug level")
	f.BoolVar(&cfg.Worker, "worker", false, "internal: run as a child process of --procs")
	f.IntVar(&cfg.WorkerFirst, "worker-first", 0, "internal: first node index of this child")
	f.IntVar(&cfg.WorkerCount, "worker-count", 0, "internal: Announcers in this child")
	for _, n := range []string{"worker", "worker-first", "worker-count"} {
		_ = f.MarkHidden(n)
	}
	addCoreFlags(cmd, &cfg.councilConfig)
	addSecurityFlags(cmd, &cfg.Security)
	return cmd
}

func runCouncilBench(cmd *cobra.Command, cfg councilBenchConfig) error {
	cfg.Security.Password = os.Getenv("ADAPTIO_NATS_PASSWORD")
	if cfg.Align != "clock" && cfg.Align != "decision" {
		return fmt.Errorf("council bench: --align %q: want clock or decision", cfg.Align)
	}
	alignDecision := cfg.Align == "decision"
	if cfg.Worker {
		return councilbench.RunWorker(cmd.Context(), councilbench.WorkerConfig{
			URL: cfg.NATS, Prefix: cfg.Prefix, First: cfg.WorkerFirst, Count: cfg.WorkerCount,
			Conns: max(1, (cfg.WorkerCount+127)/128), Interval: cfg.Interval, Warmup: cfg.Warmup, Duration: cfg.Duration,
			AlignDecision: alignDecision,
		}, cfg.Security, cmd.OutOrStdout())
	}
	core, err := cfg.core()
	if err != nil {
		return fmt.Errorf("council bench: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("council bench: %w", err)
	}
	var logger *slog.Logger
	if cfg.Verbose {
		logger = councilLogger(true)
	}
	res, err := councilbench.Run(cmd.Context(), councilbench.Config{
		Announcers: cfg.Announcers, Interval: cfg.Interval, Duration: cfg.Duration, Warmup: cfg.Warmup,
		Conns: cfg.Conns, AlignDecision: alignDecision, Procs: cfg.Procs, URL: cfg.NATS, Prefix: cfg.Prefix, Core: core, Security: cfg.Security,
		Progress: cmd.ErrOrStderr(), Logger: logger,
		Worker: func(w councilbench.WorkerConfig) *exec.Cmd {
			c := exec.CommandContext(cmd.Context(), exe, "council", "bench", "--worker",
				"--nats", w.URL, "--prefix", w.Prefix, "--worker-first", strconv.Itoa(w.First),
				"--worker-count", strconv.Itoa(w.Count), "--interval", w.Interval.String(),
				"--warmup", strconv.Itoa(w.Warmup), "--duration", w.Duration.String(), "--align", cfg.Align)
			if cfg.Security.User != "" {
				c.Args = append(c.Args, "--user", cfg.Security.User)
			}
			if cfg.Security.NKeySeedFile != "" {
				c.Args = append(c.Args, "--nkey-seed", cfg.Security.NKeySeedFile)
			}
			if cfg.Security.TLSCA != "" {
				c.Args = append(c.Args, "--tls-ca", cfg.Security.TLSCA)
			}
			c.Stderr = cmd.ErrOrStderr()
			return c
		},
	})
	if err != nil {
		return fmt.Errorf("council bench: %w", err)
	}
	if cfg.JSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printBench(cmd.OutOrStdout(), res)
	return nil
}

func printBench(w io.Writer, r councilbench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	mode := "in-process"
	if r.Procs > 0 {
		mode = fmt.Sprintf("%d procs", r.Procs)
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }
	fmt.Fprintln(tw, "announcers\tmode\talign\trounds\tby deadline\tsamples\tp50 ms\tp99 ms\tmax ms\tmean ms\tcouncil ms/round\tcpu ms/round\t")
	cpu := "-"
	if r.Procs > 0 {
		cpu = ms(r.CPUPerRound)
	}
	fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Announcers, mode, r.Align, r.Rounds, r.Deadline, r.Samples,
		ms(r.P50), ms(r.P99), ms(r.Max), ms(r.Mean), ms(r.ProcessingPerRound), cpu)
	tw.Flush()
}
