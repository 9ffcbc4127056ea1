package service

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/internal/warnlog"
)

// stateKey is the KV key holding the core's snapshot.
const stateKey = "state"

// Service is the Council on NATS: it receives every Announcer's reports,
// drives the core, broadcasts decisions, persists learned state in JetStream
// KV after each round, and serves HTTP status and metrics. Its lifecycle is
// New -> Start -> Ready -> Shutdown. Methods are safe for concurrent use.
type Service struct {
	opts Options
	subj councilmsg.Subjects
	log  *slog.Logger

	mu         sync.Mutex
	core       *council.Council
	t0         time.Time
	timer      *time.Timer
	timerAt    time.Duration
	lastDec    council.Decision
	started    bool
	serving    bool // Start completed: the state may be persisted
	stopped    bool
	logw       *bufio.Writer
	scratch    []byte
	procTime   time.Duration // handler time spent on the open round
	groupSched string        // the group's scheduling algorithm decided last ("": none)
	stats      Stats

	ns      *server.Server
	tmpDir  string
	nc      *nats.Conn
	sub     *nats.Subscription
	kv      jetstream.KeyValue
	httpSrv *http.Server
	httpLn  net.Listener

	persistc chan []byte
	wg       sync.WaitGroup
	m        *metrics
	ready    chan struct{}

	// The operator's side (admin.go, health.go): admin subscription, ids
	// of recent requests, when each node last reported (under mu), the
	// outcome of the latest state writes (under pmu).
	om        *operatorMetrics
	adminSub  *nats.Subscription
	adminIDs  map[string]time.Time
	seen      map[int]nodeSeen
	pmu       sync.Mutex
	persisted persistState

	epoch uint64          // this run's id, in every decision
	adm   *admitter       // report admission (admit.go), under mu
	warns warnlog.Limiter // rejected reports' warnings
}

// New validates opts and builds the core; nothing runs until Start.
func New(opts Options) (*Service, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	core, err := council.New(opts.Core, rand.New(rand.NewPCG(opts.Seed, 0x636f756e63696c)))
	if err != nil {
		return nil, err
	}
	s := &Service{
		opts: opts, subj: councilmsg.Subjects{Prefix: opts.Prefix}, log: opts.Logger,
		core: core, persistc: make(chan []byte, 1), ready: make(chan struct{}),
		epoch: rand.Uint64() | 1, adm: newAdmitter(opts.Admission, opts.Keys.Ring, opts.Core.Nodes),
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
		s.opts.Registerer = reg
	}
	if s.m, err = newMetrics(reg); err != nil {
		return nil, err
	}
	if s.om, err = newOperatorMetrics(reg); err != nil {
		return nil, err
	}
	s.adminIDs = map[string]time.Time{}
	if opts.DecisionLog != nil {
		s.logw = bufio.NewWriterSize(opts.DecisionLog, 1<<16)
	}
	return s, nil
}

// Start starts the embedded NATS server (unless Options.URL is set),
// connects, restores learned state from JetStream KV, subscribes to reports
// and starts the HTTP server. It returns once the Council is serving.
func (s *Service) Start() error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("council/service: already started")
	}
	s.started = true
	s.mu.Unlock()
	if err := s.start(); err != nil {
		s.Shutdown()
		return err
	}
	close(s.ready)
	return nil
}

func (s *Service) start() error {
	url := s.opts.URL
	if url == "" {
		so := &server.Options{
			ServerName: "adaptio-council", Host: s.opts.Host, Port: s.opts.Port,
			JetStream: true, StoreDir: s.opts.StateDir, NoLog: true, NoSigs: true,
			MaxPayload: 1 << 20, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30,
		}
		if so.StoreDir == "" {
			dir, err := os.MkdirTemp("", "adaptio-council-*")
			if err != nil {
				return err
			}
			s.tmpDir, so.StoreDir = dir, dir
			s.log.Warn("no state directory: learned state will not survive a restart")
		}
		if err := s.opts.Security.serverOptions(so, s.subj); err != nil {
			return fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
		ns, err := server.NewServer(so)
		if err != nil {
			return fmt.Errorf("nats server: %w", err)
		}
		s.ns = ns
		ns.Start()
		if !ns.ReadyForConnections(s.opts.ReadyTimeout) {
			return fmt.Errorf("nats server: not ready after %v", s.opts.ReadyTimeout)
		}
		url = ns.ClientURL()
		s.log.Info("embedded NATS server started", "url", url, "state_dir", so.StoreDir)
	}
	sec := s.opts.Security
	var copts []nats.Option
	if s.ns != nil && (sec.TLSCert != "" || sec.TLSKey != "") {
		// The Council's own connection to its embedded server is in-process:
		// it trusts the server it started, and presents the server's
		// certificate when clients must authenticate by certificate.
		cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // in-process connection
		if sec.TLSCA != "" {
			cert, err := tls.LoadX509KeyPair(sec.TLSCert, sec.TLSKey)
			if err != nil {
				return err
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		copts = append(copts, nats.Secure(cfg))
		sec.TLSCert, sec.TLSKey, sec.TLSCA = "", "", ""
	}
	auth, err := sec.ClientOptions()
	if err != nil {
		return err
	}
	copts = append(copts, auth...)
	copts = append(copts, s.opts.Keys.clientOptions(sec, s.ns != nil)...)
	copts = append(copts, nats.Name("adaptio-council "+s.opts.Prefix), nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond), nats.ReconnectBufSize(8<<20),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: a clean close at shutdown
				s.log.Warn("disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { s.log.Info("reconnected to NATS", "url", c.ConnectedUrl()) }))
	if s.ns != nil {
		copts = append(copts, nats.InProcessServer(s.ns))
	}
	nc, err := nats.Connect(url, copts...)
	if errors.Is(err, nats.ErrNoServers) {
		// What nats.go says of a refused login too.
		return fmt.Errorf("connect %s: %w: the server is down or unreachable, or refused these credentials (--keys, --user, --nkey-seed, TLS; its own log says which)", url, err)
	}
	if err != nil {
		return fmt.Errorf("connect %s: %w", url, err)
	}
	s.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ReadyTimeout)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: s.opts.Bucket, Description: "adaptio Council learned state for " + s.opts.Prefix,
		History: 1, Storage: jetstream.FileStorage, Replicas: s.opts.Replicas,
	})
	if err != nil {
		return fmt.Errorf("JetStream KV bucket %s (does the NATS server have JetStream enabled?): %w", s.opts.Bucket, err)
	}
	s.kv = kv
	switch e, err := getState(ctx, kv); {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		s.log.Info("no learned state yet: starting fresh", "bucket", s.opts.Bucket)
	case err != nil:
		return fmt.Errorf("read learned state: %w", err)
	default:
		if err := s.core.Restore(e.Value()); err != nil {
			return fmt.Errorf("restore learned state from bucket %s: %w", s.opts.Bucket, err)
		}
		st := s.core.Status()
		s.log.Info("learned state restored", "round", st.Round, "contexts", len(st.Contexts), "window", st.Window)
	}
	s.t0 = time.Now()
	s.m.window.Set(s.core.Window().Seconds())
	s.m.round.Set(float64(s.core.Round()))
	s.persisted.round = s.core.Round()
	s.om.shadow.Set(b2f(s.core.Shadow()))
	s.om.pins.Set(float64(len(s.core.Operator().Pins)))

	s.wg.Add(1)
	go s.persistLoop()

	sub, err := nc.Subscribe(s.subj.Reports(), s.onReport)
	if err != nil {
		return err
	}
	if err := sub.SetPendingLimits(1<<20, 256<<20); err != nil {
		return err
	}
	s.sub = sub
	if err := s.subscribeAdmin(); err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	if s.opts.HTTPAddr != "" {
		ln, err := net.Listen("tcp", s.opts.HTTPAddr)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		s.httpLn = ln
		s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http server", "err", err)
			}
		}()
	}
	s.mu.Lock()
	s.serving = true
	s.mu.Unlock()
	s.log.Info("council serving", "prefix", s.opts.Prefix, "reports", s.subj.Reports(), "decisions", s.subj.Decision())
	return nil
}

// Ready reports whether Start completed within timeout.
func (s *Service) Ready(timeout time.Duration) bool {
	select {
	case <-s.ready:
		return true
	case <-time.After(timeout):
		return false
	}
}

// ClientURL is the NATS URL Announcers connect to (the embedded server's, or Options.URL).
func (s *Service) ClientURL() string {
	if s.ns != nil {
		return s.ns.ClientURL()
	}
	return s.opts.URL
}

// Server returns the embedded NATS server (nil with an external one).
func (s *Service) Server() *server.Server { return s.ns }

// HTTPAddr is the address the HTTP server listens on ("" if none).
func (s *Service) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Subjects returns the group's subjects.
func (s *Service) Subjects() councilmsg.Subjects { return s.subj }

func (s *Service) now() time.Duration { return time.Since(s.t0) }

// loggedDecision is a line of the decision log: the decision, with the
// wall-clock time of at_ns (RFC 3339, nanoseconds, UTC) so that the log can
// be matched with an application's own timeline.
type loggedDecision struct {
	council.Decision
	Wall time.Time `json:"wall"`
}

// onReport handles one report message (on the subscription's goroutine).
func (s *Service) onReport(m *nats.Msg) {
	t := time.Now()
	r, err := s.subj.DecodeReport(m.Subject, m.Data)
	if err != nil {
		s.m.rejected.WithLabelValues(councilmsg.Reason(err)).Inc()
		s.log.Debug("report rejected", "subject", m.Subject, "err", err)
		return
	}
	if err := s.authenticate(m, r.Obs.Node); err != nil {
		s.rejectReport(r.Obs.Node, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	now := s.now()
	if err := s.adm.admit(now, r); err != nil {
		s.rejectReport(r.Obs.Node, err)
		return
	}
	if err := s.core.Observe(now, r); err != nil {
		reason := "invalid"
		if errors.Is(err, council.ErrStale) {
			reason = "stale"
		}
		s.m.rejected.WithLabelValues(reason).Inc()
		return
	}
	s.m.reports.Inc()
	s.noteReport(r)
	s.stats.Reports++
	s.poll(now)
	el := time.Since(t)
	s.procTime += el
	s.stats.Processing += el
}

// onTimer polls the core at a round's deadline.
func (s *Service) onTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.timerAt = 0
	s.poll(s.now())
}

// poll closes the round if due, else arms the timer. Called with s.mu held.
func (s *Service) poll(now time.Duration) {
	d, ok, wake := s.core.Poll(now)
	if !ok {
		if wake > 0 && wake != s.timerAt {
			s.timerAt = wake
			if s.timer == nil {
				s.timer = time.AfterFunc(wake-now, s.onTimer)
			} else {
				s.timer.Reset(wake - now)
			}
		}
		return
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timerAt = 0
	}
	s.publishDecision(d) // stamped and signed (sign.go)
	s.lastDec = d
	s.noteDecision(d)
	s.stats.Rounds++
	s.m.rounds.WithLabelValues(d.Reason).Inc()
	if d.Explore {
		s.m.explorations.Inc()
	}
	s.m.window.Set(d.Window.Seconds())
	s.m.round.Set(float64(d.Round))
	s.noteGroup(d.Select)
	s.m.known.Set(float64(s.core.Known()))
	s.m.roundNodes.Observe(float64(len(d.Nodes)))
	s.m.proc.Observe(s.procTime.Seconds())
	s.procTime = 0
	if s.logw != nil {
		b, err := json.Marshal(loggedDecision{Decision: d, Wall: s.t0.Add(d.At).UTC()})
		if err == nil {
			s.logw.Write(b)
			s.logw.WriteByte('\n')
			s.logw.Flush()
		}
	}
	if snap, err := s.core.Snapshot(); err == nil {
		select {
		case s.persistc <- snap:
		default: // a newer snapshot replaces the pending one
			select {
			case <-s.persistc:
			default:
			}
			s.persistc <- snap
		}
	}
}

// persistLoop writes snapshots to KV, latest first, off the report path.
func (s *Service) persistLoop() {
	defer s.wg.Done()
	for snap := range s.persistc {
		s.put(snap)
	}
}

func (s *Service) put(snap []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.kv.Put(ctx, stateKey, snap)
	s.notePersist(snap, err)
	if err != nil {
		s.m.persistErrors.Inc()
		s.log.Warn("persist learned state", "err", err)
		return fmt.Errorf("council/service: persist learned state: %w", err)
	}
	s.m.persisted.Inc()
	return nil
}

// Persist writes the current learned state to KV now (it is also written
// after every round and at Shutdown).
func (s *Service) Persist() error {
	s.mu.Lock()
	snap, err := s.core.Snapshot()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if s.kv == nil {
		return errors.New("council/service: not started")
	}
	return s.put(snap)
}

// Stats are cumulative counters of this Service since Start.
type Stats struct {
	Reports    uint64        // reports accepted
	Rounds     uint64        // rounds closed
	Processing time.Duration // time spent handling reports: decode, detect, learn, decide, publish, log
}

// Stats returns the counters since Start.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Status returns the core's learned state.
func (s *Service) Status() council.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Status()
}

// LastDecision returns the latest round's decision (zero before the first).
func (s *Service) LastDecision() council.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastDec
}

// Shutdown stops receiving, persists the learned state, and stops the HTTP
// and embedded NATS servers. It is safe to call more than once.
func (s *Service) Shutdown() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	var snap []byte
	if s.serving {
		// Only a Council that restored (or found no) state may write it: a
		// failed start must not overwrite learned state with a fresh core's.
		snap, _ = s.core.Snapshot()
	}
	s.mu.Unlock()
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	if s.adminSub != nil {
		_ = s.adminSub.Unsubscribe()
	}
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.httpSrv.Shutdown(ctx)
		cancel()
	}
	close(s.persistc) // stops persistLoop (if it runs) after the pending write
	s.wg.Wait()
	if snap != nil {
		s.put(snap)
	}
	if s.nc != nil {
		s.nc.Close()
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
	s.log.Info("council stopped")
}

// Handler returns the HTTP handler: /metrics, /status, /healthz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	g, ok := s.opts.Registerer.(prometheus.Gatherer)
	if !ok {
		g = prometheus.DefaultGatherer
	}
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		st := statusJSON{Prefix: s.opts.Prefix, NATS: s.ClientURL(), Status: s.core.Status(), Last: s.lastDec.Wire()}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	mux.HandleFunc("/healthz", s.serveHealth)
	return mux
}

type statusJSON struct {
	Prefix string `json:"prefix"`
	NATS   string `json:"nats"`
	council.Status
	Last councilmsg.Decision `json:"last_decision"`
}

// getState reads the learned state from kv. A bucket just created on a
// cluster answers "no responders" until its replicas have elected a
// leader: that is retried until ctx ends, every other answer returned.
func getState(ctx context.Context, kv jetstream.KeyValue) (jetstream.KeyValueEntry, error) {
	for {
		e, err := kv.Get(ctx, stateKey)
		if !errors.Is(err, nats.ErrNoResponders) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (the bucket's replicas elected no leader in time)", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noteGroup counts and logs the group's scheduling algorithm of a
// decision (nil: no node follows). Called with s.mu held.
func (s *Service) noteGroup(g *council.GroupChoice) {
	prev := s.groupSched
	s.groupSched = ""
	if g != nil {
		s.groupSched = g.Scheduler
		s.m.groupDecisions.WithLabelValues(g.Reason).Inc()
		if g.Changed {
			s.m.groupChanges.Inc()
		}
	}
	if s.groupSched == prev {
		return
	}
	for _, n := range s.core.Config().Select.Schedulers {
		v := 0.0
		if n == s.groupSched {
			v = 1
		}
		s.m.groupSched.WithLabelValues(n).Set(v)
	}
	switch {
	case g == nil:
		s.log.Info("group scheduler: no I/O node follows the group's choice", "was", prev)
	case prev == "":
		s.log.Info("group scheduler", "scheduler", g.Scheduler, "reason", g.Reason, "nodes", g.Nodes)
	default:
		s.log.Info("group scheduler", "scheduler", g.Scheduler, "was", prev, "reason", g.Reason, "estimates_s", formatEstimates(g.Estimates, s.core.Config().Select.Schedulers),
			"bytes", g.Bytes, "secs", g.Seconds)
	}
}

// formatEstimates formats estimated times in names' order.
func formatEstimates(est map[string]float64, names []string) string {
	var b []byte
	for _, n := range names {
		if v, ok := est[n]; ok {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = fmt.Appendf(b, "%s=%.3g", n, v)
		}
	}
	return string(b)
}
