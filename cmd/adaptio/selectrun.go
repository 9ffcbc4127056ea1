package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
)

// selectSchedulers parses --select-from.
func selectSchedulers(from string) ([]string, error) {
	names := strings.Split(from, ",")
	for _, n := range names {
		if n == "dynamic" || n == "pattern" || !slices.Contains(sched.Names(), n) {
			return nil, fmt.Errorf("--select-from: unknown scheduler %q (known: %v)", n, sched.Names())
		}
	}
	return names, nil
}

// daemonSelection is dynamic selection in the daemon: the driver, which
// is not safe for concurrent use, behind a mutex, fed each request by the
// connections (pattern matching) and each period by runSelection; with
// pattern matching its knowledge base is loaded from and saved to store.
// With follow, the algorithm the Council's decisions name for the group
// (ApplyScheduler, from the Announcer) runs instead of the driver's
// choice, until no decision has named one for lapse.
type daemonSelection struct {
	mu    sync.Mutex
	dr    *selection.Driver
	store kbStore // nil: the knowledge base is not kept

	follow bool          // report councilmsg.SelectionGroup and follow the decisions' algorithm
	lapse  time.Duration // without a decision naming one for this long, choose alone again (0: 3 periods)
	group  string        // the Council's algorithm in force ("": choosing alone)
	at     time.Time     // when the last decision naming it arrived

	// Set by start.
	d     *fwd.Daemon
	names []string
	log   *slog.Logger
	m     *selectionMetrics
}

// selectionMetrics are dynamic selection's metrics in the daemon.
type selectionMetrics struct {
	selected  *prometheus.GaugeVec
	changes   *prometheus.CounterVec
	decisions *prometheus.CounterVec
	patterns  prometheus.Gauge
}

// Sources of adaptio_fwd_scheduler_changes_total.
const (
	sourceLocal   = "local"   // the daemon's own chooser
	sourceCouncil = "council" // the Council's choice for the group
)

// start joins the selection to the daemon it switches and registers its
// metrics; runSelection calls it if the caller has not.
func (s *daemonSelection) start(d *fwd.Daemon, names []string, period time.Duration, log *slog.Logger, reg prometheus.Registerer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.d != nil {
		return
	}
	s.d, s.names, s.log = d, names, log
	if s.lapse == 0 {
		s.lapse = 3 * period
	}
	m := &selectionMetrics{
		selected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "adaptio_fwd_selected_scheduler",
			Help: "1 for the scheduling algorithm dynamic selection has in force, 0 for the others"}, []string{"scheduler"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_fwd_scheduler_changes_total",
			Help: "changes of scheduling algorithm made by dynamic selection, by source: local (the daemon's chooser) or council (the Council's choice for the group)"}, []string{"source"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_fwd_selection_decisions_total",
			Help: "dynamic selection's decisions at the end of a period, by reason: explore, settled, estimates (settle), draw, pattern; none while the daemon follows the Council's choice"}, []string{"reason"}),
		patterns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_fwd_selection_patterns",
			Help: "access patterns in dynamic selection's knowledge base (--scheduler pattern)"}),
	}
	m.changes.WithLabelValues(sourceLocal)
	m.changes.WithLabelValues(sourceCouncil)
	if reg != nil {
		reg.MustRegister(m.selected, m.changes, m.decisions)
		if s.dr.Patterns(0) != nil {
			reg.MustRegister(m.patterns)
		}
	}
	s.m = m
	s.showLocked(d.Scheduler())
}

func (s *daemonSelection) showLocked(cur string) {
	for _, n := range s.names {
		v := 0.0
		if n == cur {
			v = 1
		}
		s.m.selected.WithLabelValues(n).Set(v)
	}
}

// switchLocked switches the daemon to next, counting and logging the
// change with its source and reason.
func (s *daemonSelection) switchLocked(next, source, reason string, attrs ...any) {
	if next == s.d.Scheduler() {
		return
	}
	if err := s.d.SwitchScheduler(next); err != nil {
		s.log.Warn("dynamic selection: switching scheduler", "to", next, "source", source, "err", err)
		return
	}
	s.m.changes.WithLabelValues(source).Inc()
	s.showLocked(next)
	s.log.Info("dynamic selection", append([]any{"scheduler", next, "source", source, "reason", reason}, attrs...)...)
}

// Selection is what the daemon's reports say of its selection
// (announce.SelectionReporter).
func (s *daemonSelection) Selection() string {
	if s.follow {
		return councilmsg.SelectionGroup
	}
	return councilmsg.SelectionAlone
}

// ApplyScheduler runs the algorithm a verified decision names for the
// group, at once: the Announcer calls it before the interval restarts at
// the decision, so the Council's next round measures it alone
// (announce.SchedulerApplier). Ignored without follow; an algorithm
// outside the daemon's list is refused.
func (s *daemonSelection) ApplyScheduler(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.follow || s.d == nil {
		return nil
	}
	if !slices.Contains(s.names, name) {
		return fmt.Errorf("the Council's scheduler %q is not among --select-from %s: choosing alone", name, strings.Join(s.names, ","))
	}
	if s.group == "" {
		s.log.Info("dynamic selection: following the Council's choice for the group", "scheduler", name)
	}
	s.group, s.at = name, time.Now()
	s.switchLocked(name, sourceCouncil, "council")
	return nil
}

// following reports whether the Council's choice is in force at now; when
// it has lapsed, it goes back to the driver's choice and logs it. Called
// with s.mu held.
func (s *daemonSelection) following(now time.Time) bool {
	if s.group == "" {
		return false
	}
	if now.Sub(s.at) <= s.lapse {
		return true
	}
	s.log.Info("dynamic selection: no decision of the Council named the group's scheduler: choosing alone again", "for", now.Sub(s.at).Round(time.Millisecond), "scheduler", s.dr.Current(0))
	s.group = ""
	s.switchLocked(s.dr.Current(0), sourceLocal, "alone")
	return true // the period just ended ran the Council's algorithm
}

// request feeds one request to the period's access series.
func (s *daemonSelection) request(file uint64, offset, length int64, op rw.Op) {
	s.mu.Lock()
	s.dr.Request(0, selection.Request{File: file, Offset: offset, Length: length, Write: op == rw.Write})
	s.mu.Unlock()
}

// load restores the knowledge base from the store, if it holds one.
func (s *daemonSelection) load(ctx context.Context) (int, error) {
	kb := s.dr.Patterns(0)
	if s.store == nil || kb == nil {
		return 0, nil
	}
	data, err := s.store.Load(ctx)
	if err != nil || data == nil {
		return 0, err
	}
	if err := json.Unmarshal(data, kb); err != nil {
		return 0, fmt.Errorf("%s: %w (move it away to start with an empty knowledge base)", s.store, err)
	}
	return kb.Len(), nil
}

// save writes the knowledge base to the store.
func (s *daemonSelection) save(ctx context.Context) error {
	kb := s.dr.Patterns(0)
	if s.store == nil || kb == nil {
		return nil
	}
	data, err := json.Marshal(kb)
	if err != nil {
		return err
	}
	return s.store.Save(ctx, data)
}

// kbStore keeps a knowledge base between runs.
type kbStore interface {
	Load(ctx context.Context) ([]byte, error) // nil, nil: nothing stored yet
	Save(ctx context.Context, data []byte) error
	Close()
	String() string
}

// fileStore keeps it in a file, replaced atomically.
type fileStore string

func (f fileStore) Load(context.Context) ([]byte, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (f fileStore) Save(_ context.Context, data []byte) error {
	return atomicfile.Write(string(f), func(w io.Writer) error { _, err := w.Write(data); return err })
}

func (fileStore) Close() {}

func (f fileStore) String() string { return "knowledge base " + string(f) }

// kvStore keeps it in the Council's JetStream, bucket selectionBucket,
// one key per I/O node.
type kvStore struct {
	nc  *nats.Conn // closed by Close
	kv  jetstream.KeyValue
	key string
}

// selectionBucket is the JetStream KV bucket of the daemons' knowledge
// bases.
const selectionBucket = "adaptio_selection"

func newKVStore(ctx context.Context, nc *nats.Conn, prefix string, node int) (*kvStore, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: selectionBucket, History: 1,
		Description: "adaptio forward --scheduler pattern: each I/O node's knowledge base of access patterns"})
	if err != nil {
		return nil, fmt.Errorf("JetStream KV bucket %s: %w", selectionBucket, err)
	}
	return &kvStore{nc: nc, kv: kv, key: fmt.Sprintf("%s.node%d", prefix, node)}, nil
}

func (s *kvStore) Load(ctx context.Context) ([]byte, error) {
	e, err := s.kv.Get(ctx, s.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (s *kvStore) Save(ctx context.Context, data []byte) error {
	_, err := s.kv.Put(ctx, s.key, data)
	return err
}

func (s *kvStore) Close() { s.nc.Close() }

func (s *kvStore) String() string { return "knowledge base " + selectionBucket + "/" + s.key }

// selectionNow is t on the driver's clock: the time since the Unix epoch.
func selectionNow(t time.Time) time.Duration { return time.Duration(t.UnixNano()) }

// runSelection lets the driver choose the daemon's scheduling algorithm
// every period until ctx ends: each period's acknowledged bytes are the
// reward of the algorithm in force (an idle period changes nothing). The
// algorithm in force is exported as adaptio_fwd_selected_scheduler{scheduler}
// (1 for the one in force), the changes as
// adaptio_fwd_scheduler_changes_total{source} and every period's decision by its
// reason as adaptio_fwd_selection_decisions_total{reason}; each change is
// logged with its reason and estimates. Periods start at multiples of
// period on the wall clock. With pattern matching the known
// patterns as adaptio_fwd_selection_patterns, and the knowledge base is
// saved every period and at the end. While the daemon follows the
// Council's choice (daemonSelection.follow) the driver neither learns nor
// chooses: each period restarts it.
func runSelection(ctx context.Context, d *fwd.Daemon, ds *daemonSelection, period time.Duration, rng *rand.Rand, log *slog.Logger, reg prometheus.Registerer, names []string) {
	ds.start(d, names, period, log, reg)
	dr, m := ds.dr, ds.m
	saveErr := func(err error) {
		if err != nil {
			log.Warn("dynamic selection: saving the knowledge base", "store", ds.store, "err", err)
		}
	}
	defer func() { // at the end, with a context of its own: ctx is done
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds.mu.Lock()
		defer ds.mu.Unlock()
		saveErr(ds.save(c))
		if ds.store != nil {
			ds.store.Close()
		}
	}()
	// Wait for the next period boundary of the wall clock.
	wait := time.NewTimer(time.Until(time.Unix(0, int64(selectionNow(time.Now()).Truncate(period)+period))))
	select {
	case <-ctx.Done():
		wait.Stop()
		return
	case <-wait.C:
	}
	last, lastRead := d.BytesTotal(), d.BytesRead()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			total, read := d.BytesTotal(), d.BytesRead()
			bytes, readBytes := total-last, read-lastRead
			last, lastRead = total, read
			served := int64(0) // the daemon counts bytes, not requests: served or not
			if bytes > 0 {
				served = 1
			}
			ds.mu.Lock()
			if ds.following(now) {
				dr.Interval(0, selectionNow(now), selection.Figures{}, rng) // an idle period to the driver: it restarts
				ds.mu.Unlock()
				continue
			}
			judged := dr.Judged(0)
			next, change := dr.Interval(0, selectionNow(now), selection.Figures{Bytes: bytes, ReadBytes: readBytes, Served: served}, rng)
			choice := dr.Last(0)
			if dr.Judged(0) > judged {
				m.decisions.WithLabelValues(choice.Reason).Inc()
			}
			if kb := dr.Patterns(0); kb != nil {
				m.patterns.Set(float64(kb.Len()))
				saveErr(ds.save(ctx))
			}
			if change {
				ds.switchLocked(next, sourceLocal, choice.Reason, "estimates_s", estimates(choice.Estimates, names), "bytes_last_period", bytes)
			}
			ds.mu.Unlock()
		}
	}
}

// estimates formats a Choice's estimated times in names' order ("" for
// none).
func estimates(est map[string]float64, names []string) string {
	var parts []string
	for _, n := range names {
		if v, ok := est[n]; ok {
			parts = append(parts, fmt.Sprintf("%s=%.3g", n, v))
		}
	}
	return strings.Join(parts, " ")
}
