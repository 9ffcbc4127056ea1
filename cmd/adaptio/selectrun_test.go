package main

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/selection"
)

// A forwarding daemon under dynamic selection changes its algorithm while
// a client writes, stays on one of the chosen set, and exports the one in
// force and the changes.
func TestForwardDynamicSelection(t *testing.T) {
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	rng := rand.New(rand.NewPCG(1, 2))
	dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: names}, Period: 20 * time.Millisecond}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, f := selectionDaemon(t, fwd.Options{Scheduler: dr.Current(0)}, "dyn.dat")
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runSelection(ctx, d, &daemonSelection{dr: dr}, 20*time.Millisecond, rng, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, names)
	}()
	changes := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "adaptio_fwd_scheduler_changes_total" {
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == sourceLocal {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(5 * time.Second)
	var off int64
	for changes() < 3 && time.Now().Before(deadline) {
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(buf))
	}
	cancel()
	<-done
	if dr.Changes < 3 {
		t.Fatalf("%d changes of algorithm in 5 s of writes, want >= 3", dr.Changes)
	}
	if s := d.Scheduler(); !slices.Contains(names, s) || s != dr.Current(0) {
		t.Errorf("daemon runs %q, the driver has %q in force", d.Scheduler(), dr.Current(0))
	}
	if n := changes(); int(n) != dr.Changes {
		t.Errorf("adaptio_fwd_scheduler_changes_total %v, driver %d", n, dr.Changes)
	}
}

// With pattern matching the daemon feeds every request to the period's
// series; the knowledge base grows, is saved at the end and loaded by the
// next run, in a file or in the Council's JetStream KV.
func TestForwardPatternSelectionKeepsItsKnowledge(t *testing.T) {
	council, err := service.New(service.Options{Port: -1, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := council.Start(); err != nil {
		t.Fatal(err)
	}
	defer council.Shutdown()
	for _, tt := range []struct {
		name  string
		store func(t *testing.T) kbStore
	}{
		{"file", func() func(t *testing.T) kbStore {
			path := filepath.Join(t.TempDir(), "kb.json")
			return func(*testing.T) kbStore { return fileStore(path) }
		}()},
		{"kv", func(t *testing.T) kbStore {
			st, err := selectionStore(context.Background(), forwardConfig{Council: council.ClientURL(), Node: 3, SelectState: "kv"})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := func() (loaded, known int) {
				store := tt.store(t) // a run opens its store and closes it at the end
				names := []string{"mlf", "to-agg", "sjf"}
				rng := rand.New(rand.NewPCG(3, 4))
				dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: names}, Period: 20 * time.Millisecond, Patterns: &selection.KBConfig{}}, 1, rng)
				if err != nil {
					t.Fatal(err)
				}
				ds := &daemonSelection{dr: dr, store: store}
				if loaded, err = ds.load(context.Background()); err != nil {
					t.Fatal(err)
				}
				d, f := selectionDaemon(t, fwd.Options{Scheduler: dr.Current(0), OnRequest: ds.request}, "pat.dat")
				defer d.Shutdown()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					runSelection(ctx, d, ds, 20*time.Millisecond, rng, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, names)
				}()
				buf := make([]byte, 4<<10)
				for i := range 2000 { // 4 KiB strided writes for a few periods
					if _, err := f.WriteAt(buf, int64(i%64)*64<<10+int64(i/64)*4<<10); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(60 * time.Millisecond)
				cancel()
				<-done
				ds.mu.Lock()
				defer ds.mu.Unlock()
				return loaded, dr.Patterns(0).Len()
			}
			loaded, known := run()
			if loaded != 0 || known == 0 {
				t.Fatalf("first run: loaded %d patterns, knew %d at the end; want 0 and some", loaded, known)
			}
			if loaded, _ = run(); loaded != known {
				t.Fatalf("second run loaded %d patterns, the first saved %d", loaded, known)
			}
		})
	}
}

// A stored knowledge base that does not decode is refused with its name,
// not overwritten.
func TestForwardPatternSelectionRefusesABadKnowledgeBase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kb.json")
	if err := os.WriteFile(path, []byte(`{"patterns":[{"id":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: []string{"mlf", "sjf"}}, Patterns: &selection.KBConfig{}}, 1, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ds := &daemonSelection{dr: dr, store: fileStore(path)}
	if _, err := ds.load(context.Background()); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("load of a malformed knowledge base: %v, want an error naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"patterns":[{"id":5}]}` {
		t.Fatalf("the file was changed: %s", b)
	}
}

// selectionDaemon starts a daemon with opts over a POSIX backend of 64 KiB
// stripes on 4 data servers and returns it with a file a client created
// through it; both end with the test.
func selectionDaemon(t *testing.T, opts fwd.Options, name string) (*fwd.Daemon, *client.File) {
	t.Helper()
	opts.Backend = fwdtest.PosixLayout(t, t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	d := fwdtest.Start(t, opts)
	c, err := client.Dial(d.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f, err := c.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	return d, f
}

// With --select-policy settle a steady workload settles: the daemon
// explores each algorithm for 3 periods, then keeps one, changing for
// estimates at most a few times; every period's decision is counted by
// its reason.
func TestForwardSettleSelectionSettles(t *testing.T) {
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	period := 50 * time.Millisecond // long enough that one period's bandwidth is not mostly the noise of a shared host
	rng := rand.New(rand.NewPCG(1, 2))
	dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: names}, Period: period,
		Policy: selection.PolicySettle, Start: selectionNow(time.Now()).Truncate(period)}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, f := selectionDaemon(t, fwd.Options{Scheduler: dr.Current(0)}, "settle.dat")
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runSelection(ctx, d, &daemonSelection{dr: dr}, period, rng, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, names)
	}()
	decisions := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "adaptio_fwd_selection_decisions_total" {
				for _, m := range mf.GetMetric() {
					out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
		return out
	}
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	var off int64
	for decisions()["settled"] < 40 && time.Now().Before(deadline) {
		if _, err := f.WriteAt(buf, off%(64<<20)); err != nil {
			t.Fatal(err)
		}
		off += int64(len(buf))
	}
	cancel()
	<-done
	got := decisions()
	t.Logf("decisions %v, changes %d", got, dr.Changes)
	if got["explore"] < 14 || got["settled"] < 40 {
		t.Fatalf("decisions %v: want at least 14 to explore (3 rounds of 5, the first chosen at the start) and 40 settled", got)
	}
	if got["estimates"] > 10 { // a quarter of the settled periods: on a shared host the one in force is measured under today's load, the others under that of their exploration
		t.Errorf("%v changes for the estimates on a steady workload, want at most 10 of 40 (AGIOS's rule changes in most periods)", got["estimates"])
	}
	if s := d.Scheduler(); s != dr.Current(0) {
		t.Errorf("daemon runs %q, the driver has %q in force", s, dr.Current(0))
	}
}
