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
type daemonSelection struct {
	mu    sync.Mutex
	dr    *selection.Driver
	store kbStore // nil: the knowledge base is not kept
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
// adaptio_fwd_scheduler_changes_total and every period's decision by its
// reason as adaptio_fwd_selection_decisions_total{reason}; each change is
// logged with its reason and estimates. Periods start at multiples of
// period on the wall clock. With pattern matching the known
// patterns as adaptio_fwd_selection_patterns, and the knowledge base is
// saved every period and at the end.
func runSelection(ctx context.Context, d *fwd.Daemon, ds *daemonSelection, period time.Duration, rng *rand.Rand, log *slog.Logger, reg prometheus.Registerer, names []string) {
	dr := ds.dr
	selected := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "adaptio_fwd_selected_scheduler",
		Help: "1 for the scheduling algorithm dynamic selection has in force, 0 for the others"}, []string{"scheduler"})
	changes := prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_fwd_scheduler_changes_total",
		Help: "changes of scheduling algorithm made by dynamic selection"})
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_fwd_selection_decisions_total",
		Help: "dynamic selection's decisions at the end of a period, by reason: explore, settled, estimates (settle), draw, pattern"}, []string{"reason"})
	patterns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_fwd_selection_patterns",
		Help: "access patterns in dynamic selection's knowledge base (--scheduler pattern)"})
	if reg != nil {
		reg.MustRegister(selected, changes, decisions)
		if dr.Patterns(0) != nil {
			reg.MustRegister(patterns)
		}
	}
	show := func(cur string) {
		for _, n := range names {
			v := 0.0
			if n == cur {
				v = 1
			}
			selected.WithLabelValues(n).Set(v)
		}
	}
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
	show(dr.Current(0))
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
			judged := dr.Judged(0)
			next, change := dr.Interval(0, selectionNow(now), selection.Figures{Bytes: bytes, ReadBytes: readBytes, Served: served}, rng)
			choice := dr.Last(0)
			if dr.Judged(0) > judged {
				decisions.WithLabelValues(choice.Reason).Inc()
			}
			if kb := dr.Patterns(0); kb != nil {
				patterns.Set(float64(kb.Len()))
				saveErr(ds.save(ctx))
			}
			ds.mu.Unlock()
			if !change {
				continue
			}
			if err := d.SwitchScheduler(next); err != nil {
				log.Warn("dynamic selection: switching scheduler", "to", next, "err", err)
				continue
			}
			changes.Inc()
			show(next)
			log.Info("dynamic selection", "scheduler", next, "reason", choice.Reason, "estimates_s", estimates(choice.Estimates, names), "bytes_last_period", bytes)
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
