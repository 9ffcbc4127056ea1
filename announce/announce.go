package announce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/warnlog"
	"github.com/adaptio/adaptio/rw"
)

// Source supplies the metrics of each interval; the forwarding daemon
// implements it. CloseInterval ends the current interval at now and returns
// its observation, including the window that was in force.
type Source interface {
	CloseInterval(now time.Time) access.Observation
}

// JobSource is a Source that also observes each job's requests apart (the
// forwarding daemon does, from the job ids its clients declare). The
// Announcer calls CloseIntervalJobs instead of CloseInterval when it
// reports: the node's observation and one per job with requests in the
// interval, by job id. Its reports then carry the jobs when there are two
// or more (councilmsg.Report.Jobs, trimmed by councilmsg.TrimJobs), so the
// Council can tell each job's pattern in the node's mix.
type JobSource interface {
	Source
	CloseIntervalJobs(now time.Time) (access.Observation, map[string]access.Observation)
}

// SchedulerNamer is implemented by a Source that can say which scheduling
// algorithm it runs (the forwarding daemon does); its reports then carry
// it, and the Council's status shows it per node (dynamic selection
// changes it).
type SchedulerNamer interface {
	Scheduler() string
}

// SelectionReporter is implemented by a Source that selects its
// scheduling algorithm dynamically: Selection returns
// councilmsg.SelectionGroup (it follows the algorithm decisions name) or
// councilmsg.SelectionAlone, and its reports carry it
// (councilmsg.Report.Selection).
type SelectionReporter interface {
	Selection() string
}

// SchedulerApplier is an Applier that also follows the Council's choice of
// scheduling algorithm for the group: ApplyScheduler is called with every
// applied decision that names one (councilmsg.Decision.Scheduler), even
// when it names the same as the one before, so the receiver knows the
// Council still chooses. It is called before the interval restarts at the
// decision, so the next report covers the named algorithm only.
type SchedulerApplier interface {
	ApplyScheduler(name string) error
}

// Applier applies a window the Council decided; the forwarding daemon
// implements it.
type Applier interface {
	ApplyWindow(w time.Duration) error
}

// PlanApplier is an Applier that also follows a decision's plan: a window
// for each direction of requests, applied as the node's requests turn
// (see ionode.Plan). The forwarding daemon implements it; an Applier that
// does not gets the decision's window only.
type PlanApplier interface {
	Applier
	ApplyPlan(w, read, write time.Duration) error
}

// Defaults.
const (
	DefaultInterval = time.Second
	DefaultPrefix   = "adaptio.default"
)

// Errors.
var (
	ErrBadOptions = errors.New("announce: invalid options")
	ErrStarted    = errors.New("announce: already started")
)

// Options configure an Announcer. Zero fields take the defaults listed.
type Options struct {
	// URL of the NATS server the Council listens on (ignored when Conn is set).
	URL string
	// Conn is an existing connection to share (the Announcer does not
	// close it). Nil: the Announcer connects to URL itself and reconnects
	// forever.
	Conn *nats.Conn
	// NATSOptions are extra connection options (authentication, TLS) used
	// when the Announcer connects itself.
	NATSOptions []nats.Option
	// Prefix is the Council group's subject prefix (default "adaptio.default").
	Prefix string
	// Node is this I/O node's index (>= 0); reports carry it.
	Node int
	// Interval between reports (default 1 s).
	Interval time.Duration
	// Default is the window applied at Start and kept until the first
	// decision (0: apply nothing until the first decision). After a
	// decision, the Announcer keeps the last decided window while the
	// Council is unreachable.
	Default time.Duration
	// Source supplies each interval's observation (required).
	Source Source
	// Applier applies decisions (nil: decisions are only recorded).
	Applier Applier
	// Instance identifies this run in reports (0: random).
	Instance uint64
	// NoAlign keeps reporting on a free-running ticker. By default each
	// decision restarts the interval: the few milliseconds between the
	// report and the decision (still under the old window) are discarded,
	// and the next report follows one Interval after the decision, so every
	// interval is observed under one window and all I/O nodes report in
	// step (the papers' Announcer sends one second after the decision).
	NoAlign bool
	// AlignClock reports at multiples of Interval on the wall clock (for
	// example every full second) instead of one Interval after each
	// decision. With synchronised clocks (NTP) every I/O node reports at
	// the same instant whatever the spread of decision delivery, which
	// keeps rounds short at large scale. Decisions still restart the
	// interval (unless NoAlign).
	AlignClock bool
	// OnDecision, if set, is called after each new decision is applied,
	// with the time since this Announcer's latest report was sent (zero if
	// no report was pending). It runs on the subscription's goroutine.
	OnDecision func(d councilmsg.Decision, sinceSend time.Duration)
	// Keyring is the group's keys. Set, the Announcer applies only
	// decisions signed by the Council's key in it and stamped with the
	// Council's epoch and time (Freshness.RequireStamp); others are
	// rejected, counted in adaptio_announce_decisions_rejected_total and
	// logged. Nil: decisions are not authenticated (a loopback-only setup).
	Keyring *keyring.Keyring
	// Signer signs every report with I/O node Node's key (nil: reports
	// are not signed). With a Keyring, it must be Node's key in it.
	Signer *keyring.Signer
	// Freshness bounds the decisions applied (zero: the defaults).
	Freshness Freshness
	// Logger (nil: discard) and Registerer (nil: metrics not registered).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Announcer reports an I/O node's metrics to the Council every interval and
// applies the Council's decisions. Lifecycle: New -> Start -> Shutdown.
// Methods are safe for concurrent use.
type Announcer struct {
	opts Options
	subj councilmsg.Subjects
	log  *slog.Logger
	m    *metrics

	mu       sync.Mutex
	nc       *nats.Conn
	ownConn  bool
	sub      *nats.Subscription
	seq      uint64
	round    uint64
	window   time.Duration
	plan     rw.Pair[time.Duration] // the plan applied last
	sentAt   time.Time
	started  bool
	cancel   context.CancelFunc
	done     chan struct{}
	buf      []byte
	timer    *time.Timer // next report; decisions reset it (aligned mode)
	stopOnce sync.Once
	guard    *Guard

	connErrs connErrLog
	warns    warnlog.Limiter
}

// connErrLog logs failed connection attempts without flooding: an error is
// logged when it differs from the previous one, or at most every 30 s.
type connErrLog struct {
	mu   sync.Mutex
	last string
	at   time.Time
}

func (l *connErrLog) warn(log *slog.Logger, msg string, err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	now := time.Now()
	due := err.Error() != l.last || now.Sub(l.at) >= 30*time.Second
	if due {
		l.last, l.at = err.Error(), now
	}
	l.mu.Unlock()
	if due {
		log.Warn(msg, "err", err)
	}
}

// New validates opts; nothing runs until Start.
func New(opts Options) (*Announcer, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Instance == 0 {
		opts.Instance = rand.Uint64() | 1
	}
	switch {
	case opts.Source == nil:
		return nil, fmt.Errorf("%w: Source is required", ErrBadOptions)
	case opts.Conn == nil && opts.URL == "":
		return nil, fmt.Errorf("%w: URL or Conn is required", ErrBadOptions)
	case opts.Node < 0:
		return nil, fmt.Errorf("%w: Node = %d, want >= 0", ErrBadOptions, opts.Node)
	case opts.Interval < 0:
		return nil, fmt.Errorf("%w: Interval = %v, want > 0", ErrBadOptions, opts.Interval)
	case opts.Default < 0:
		return nil, fmt.Errorf("%w: Default = %v, want >= 0", ErrBadOptions, opts.Default)
	}
	if err := councilmsg.ValidPrefix(opts.Prefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
	}
	if opts.Keyring != nil {
		if err := opts.Keyring.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
		opts.Freshness.RequireStamp = true
		if opts.Signer != nil && opts.Keyring.Node(opts.Node) != opts.Signer.PublicKey() {
			return nil, fmt.Errorf("%w: the signing key %s is not node %d's key in the keyring (give node %d its own seed, %s)",
				ErrBadOptions, opts.Signer.PublicKey(), opts.Node, opts.Node, keyring.NodeSeed(opts.Node))
		}
	}
	m, err := newMetrics(opts.Registerer, opts.Node)
	if err != nil {
		return nil, err
	}
	return &Announcer{opts: opts, subj: councilmsg.Subjects{Prefix: opts.Prefix}, log: opts.Logger, m: m, done: make(chan struct{}),
		guard: NewGuard(opts.Freshness)}, nil
}

// Start connects (retrying in the background if the server is not up
// yet), applies the default window, subscribes to decisions and starts
// reporting every interval until ctx is cancelled or Shutdown is called.
func (a *Announcer) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return ErrStarted
	}
	a.started = true
	a.nc = a.opts.Conn
	if a.nc == nil {
		copts := append([]nats.Option{
			nats.Name(fmt.Sprintf("adaptio-announcer %s node %d", a.opts.Prefix, a.opts.Node)),
			nats.MaxReconnects(-1), nats.ReconnectWait(200 * time.Millisecond),
			nats.RetryOnFailedConnect(true), nats.ReconnectBufSize(-1), // reports are not buffered while disconnected
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				a.m.connected.Set(0)
				if err == nil {
					return // a clean close (Stop), not a loss of the Council
				}
				a.log.Warn("disconnected from the Council's NATS server; keeping the window in force", "err", err)
			}),
			nats.ReconnectHandler(func(c *nats.Conn) {
				a.m.connected.Set(1)
				a.log.Info("reconnected to the Council's NATS server", "url", c.ConnectedUrl())
			}),
			nats.ConnectHandler(func(*nats.Conn) { a.m.connected.Set(1) }),
			// Failed attempts (refused, authorization, TLS) and asynchronous
			// server errors are the operator's only clue: log them, rate-limited.
			nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
				a.connErrs.warn(a.log, "cannot reach the Council's NATS server; keeping the window in force", err)
			}),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				a.connErrs.warn(a.log, "NATS error", err)
			}),
		}, a.opts.NATSOptions...)
		nc, err := nats.Connect(a.opts.URL, copts...)
		if err != nil {
			return fmt.Errorf("announce: connect %s: %w", a.opts.URL, err)
		}
		a.nc, a.ownConn = nc, true
	}
	if a.nc.IsConnected() {
		a.m.connected.Set(1)
	}
	if a.opts.Default > 0 {
		a.applyLocked(a.opts.Default)
	}
	a.opts.Source.CloseInterval(time.Now()) // start a fresh interval
	a.timer = time.NewTimer(a.next(time.Now()))
	sub, err := a.nc.Subscribe(a.subj.Decision(), a.onDecision)
	if err != nil {
		a.timer.Stop()
		if a.ownConn {
			a.nc.Close()
		}
		return fmt.Errorf("announce: subscribe: %w", err)
	}
	a.sub = sub
	ctx, a.cancel = context.WithCancel(ctx)
	go a.loop(ctx, a.timer)
	return nil
}

func (a *Announcer) loop(ctx context.Context, t *time.Timer) {
	defer close(a.done)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			t.Reset(a.next(time.Now()))
			a.report(now)
		}
	}
}

// next returns the delay until the next report after now.
func (a *Announcer) next(now time.Time) time.Duration {
	if !a.opts.AlignClock {
		return a.opts.Interval
	}
	iv := int64(a.opts.Interval)
	return time.Duration(iv - now.UnixNano()%iv)
}

// report closes the interval and publishes its observation.
func (a *Announcer) report(now time.Time) {
	var o access.Observation
	var jobs map[string]access.Observation
	if js, ok := a.opts.Source.(JobSource); ok {
		o, jobs = js.CloseIntervalJobs(now)
	} else {
		o = a.opts.Source.CloseInterval(now)
	}
	o.Node = a.opts.Node
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	if !a.nc.IsConnected() {
		a.m.dropped.Inc()
		return
	}
	r := councilmsg.Report{Instance: a.opts.Instance, Seq: a.seq, Round: a.round, Obs: o}
	if n, ok := a.opts.Source.(SchedulerNamer); ok {
		r.Scheduler = n.Scheduler()
	}
	if s, ok := a.opts.Source.(SelectionReporter); ok {
		r.Selection = s.Selection()
	}
	r.Jobs = councilmsg.ReportJobs(o, jobs)
	b, err := councilmsg.AppendReport(a.buf[:0], r)
	if err != nil {
		a.m.dropped.Inc()
		a.log.Warn("observation not sent", "err", err)
		return
	}
	a.buf = b
	a.sentAt = time.Now()
	if err := a.publishLocked(a.subj.Report(a.opts.Node), b); err != nil {
		a.m.dropped.Inc()
		a.sentAt = time.Time{}
		return
	}
	a.m.reports.Inc()
}

// publishLocked publishes a report, signed when the Announcer has a Signer.
func (a *Announcer) publishLocked(subject string, b []byte) error {
	if a.opts.Signer == nil {
		return a.nc.Publish(subject, b)
	}
	msg, err := a.opts.Signer.Msg(subject, b)
	if err != nil {
		return err
	}
	return a.nc.PublishMsg(msg)
}

// reject counts a decision refused for reason and logs it at WARN, at
// most once per reason every few seconds.
func (a *Announcer) reject(reason string, err error) {
	a.m.rejected.WithLabelValues(reason).Inc()
	if ok, n := a.warns.Allow(reason, time.Now()); ok {
		a.log.Warn("decision rejected: the window in force is kept", "reason", reason, "err", err, "suppressed", n)
	}
}

func (a *Announcer) onDecision(m *nats.Msg) {
	t := time.Now()
	if a.opts.Keyring != nil {
		if err := a.opts.Keyring.VerifyCouncil(m.Header, m.Subject, m.Data); err != nil {
			a.reject(keyring.Reason(err), err)
			return
		}
	}
	d, err := councilmsg.UnmarshalDecision(m.Data)
	if err != nil {
		a.m.badDecisions.Inc()
		return
	}
	a.mu.Lock()
	if err := a.guard.Admit(d, t); err != nil {
		a.mu.Unlock()
		a.reject(RejectReason(err), err)
		return
	}
	var since time.Duration
	if !a.sentAt.IsZero() {
		since = t.Sub(a.sentAt)
		a.sentAt = time.Time{}
		a.m.latency.Observe(since.Seconds())
	}
	a.round = d.Round
	a.applyDecisionLocked(d)
	if sa, ok := a.opts.Applier.(SchedulerApplier); ok && d.Scheduler != "" {
		if err := sa.ApplyScheduler(d.Scheduler); err != nil {
			a.m.applyErrors.Inc()
			if ok, n := a.warns.Allow("scheduler", t); ok {
				a.log.Warn("apply the group's scheduler", "scheduler", d.Scheduler, "err", err, "suppressed", n)
			}
		}
	}
	a.m.decisions.Inc()
	cb := a.opts.OnDecision
	a.mu.Unlock()
	if !a.opts.NoAlign {
		a.opts.Source.CloseInterval(time.Now()) // the sliver since the report ran the old window
		if !a.opts.AlignClock {
			a.timer.Reset(a.opts.Interval) // safe from any goroutine (Go >= 1.23 timers)
		}
	}
	if cb != nil {
		cb(d, since)
	}
}

// applyDecisionLocked applies d's window and, to a PlanApplier, its plan.
func (a *Announcer) applyDecisionLocked(d councilmsg.Decision) {
	pa, ok := a.opts.Applier.(PlanApplier)
	if !ok {
		a.applyLocked(d.Window)
		return
	}
	plan := d.Plan
	if d.Window == a.window && plan == a.plan {
		return
	}
	if err := pa.ApplyPlan(d.Window, d.Plan.Read, d.Plan.Write); err != nil {
		a.m.applyErrors.Inc()
		a.log.Warn("apply plan", "window", d.Window, "read", d.Plan.Read, "write", d.Plan.Write, "err", err)
		return
	}
	a.window, a.plan = d.Window, plan
	a.m.window.Set(d.Window.Seconds())
}

func (a *Announcer) applyLocked(w time.Duration) {
	if a.opts.Applier != nil && w != a.window {
		if err := a.opts.Applier.ApplyWindow(w); err != nil {
			a.m.applyErrors.Inc()
			a.log.Warn("apply window", "window", w, "err", err)
			return
		}
	}
	a.window = w
	a.m.window.Set(w.Seconds())
}

// Window returns the window in force (the last decision's, or the default).
func (a *Announcer) Window() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.window
}

// Round returns the round of the last decision applied (0: none).
func (a *Announcer) Round() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.round
}

// Connected reports whether the NATS connection is up.
func (a *Announcer) Connected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nc != nil && a.nc.IsConnected()
}

// Shutdown stops reporting, unsubscribes and closes the connection the
// Announcer opened. It is safe to call more than once.
func (a *Announcer) Shutdown() {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		started := a.started
		cancel := a.cancel
		a.mu.Unlock()
		if !started || cancel == nil {
			return
		}
		cancel()
		<-a.done
		if a.sub != nil {
			_ = a.sub.Unsubscribe()
		}
		if a.ownConn {
			a.nc.Close()
		}
	})
}
