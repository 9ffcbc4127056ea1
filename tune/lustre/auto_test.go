package lustre

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/internal/testlog"
	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/lustretest"
)

type logEntry struct {
	Time      time.Time `json:"time"`
	Msg       string    `json:"msg"`
	Target    string    `json:"target"`
	Parameter string    `json:"parameter"`
	Old, New  int
	Reason    string `json:"reason"`
}

// The moving tree's model: each of 3 targets' OST serves at most 500 MiB/s,
// at 1024 pages per RPC and 32 RPCs in flight (30% of it at Lustre's
// defaults); the application writes 400 MiB/s, which the OST serves
// at the best settings and at one doubling or halving of one knob from
// them, not further; from 400 s to 600 s
// another client takes half the OST. The loop's changes come at 10 s,
// 20 s, ...; the model's interval from 420 s shows at the tick of 430 s.
var movingModel = lustretest.Model{Peak: 500 << 20, App: 400 << 20, BestPages: 1024, BestInFlight: 32,
	ContentionFrom: 420 * time.Second, ContentionTo: 620 * time.Second, ContentionShare: 0.5}

// runMoving runs `adaptio tune lustre --auto --restore` (RunLustre) for
// 800 s of fake time against the moving tree, which updates every
// target's rpc_stats at the middle of each 10 s interval.
func runMoving(t *testing.T, lay lustretest.Layout, m lustretest.Model) (tr *lustretest.Tree, logs []logEntry, reg *prometheus.Registry, start time.Time, before [][2]int) {
	root := t.TempDir() // outside the bubble: it outlives it
	synctest.Test(t, func(t *testing.T) {
		var err error
		tr, err = lustretest.New(root, 3, lay, m)
		if err != nil {
			t.Fatal(err)
		}
		var buf testlog.Buffer
		reg = prometheus.NewRegistry()
		const interval = 10 * time.Second
		a, err := NewLustreAuto(LustreAutoConfig{Lustre: Lustre{Root: tr.Root}, Interval: interval,
			Log: slog.New(slog.NewJSONHandler(&buf, nil)), Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunLustre(ctx, a, true) }()
		var model sync.WaitGroup
		model.Go(func() {
			time.Sleep(interval / 2)
			for ctx.Err() == nil {
				if _, err := tr.Step(interval); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(interval)
			}
		})
		time.Sleep(800 * time.Second)
		synctest.Wait()
		for _, tg := range tr.Targets() {
			before = append(before, [2]int{param(t, tr, tg, "max_pages_per_rpc"), param(t, tr, tg, "max_rpcs_in_flight")})
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunLustre: %v", err)
		}
		model.Wait()
		sc := bufio.NewScanner(strings.NewReader(buf.String()))
		for sc.Scan() {
			var e logEntry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("log line %q: %v", sc.Text(), err)
			}
			logs = append(logs, e)
		}
	})
	return tr, logs, reg, start, before
}

// End to end on the moving tree: the loop climbs toward the model's best
// settings, reverts its last change when contention appears, never writes
// a value out of range, logs every change of every target with its
// reason, keeps its metrics, and with --restore leaves the tree as it
// found it.
func TestLustreAutoOnAMovingTree(t *testing.T) {
	tr, logs, reg, start, before := runMoving(t, lustretest.Layout215, movingModel)
	hist := tr.History()
	// Never out of range: every value the model read.
	for _, s := range hist {
		if tune.CheckLustre("max_pages_per_rpc", s.Pages) != nil || tune.CheckLustre("max_rpcs_in_flight", s.InFlight) != nil {
			t.Fatalf("out of range at %v: %+v", s.At, s)
		}
	}
	// Toward the better settings: what the OST could serve at the values
	// in force, over 200-400 s, against Lustre's defaults.
	var served, n float64
	for _, s := range hist {
		if s.At >= 200*time.Second && s.At < 400*time.Second {
			served += movingModel.Served(s.Pages, s.InFlight, s.At) / movingModel.Peak
			n++
		}
	}
	defaults := movingModel.Served(256, 8, 0) / movingModel.Peak
	t.Logf("served at the values in force, 200-400 s: %.2f of the peak (Lustre's defaults: %.2f)", served/n, defaults)
	if served/n < 0.8 {
		t.Errorf("over 200-400 s the values in force serve %.2f of the peak, want >= 0.8 (defaults %.2f)", served/n, defaults)
	}
	// Every change logged, per target, each one's old value the last one's
	// new, and the last one's new what the tree held at the end.
	type key struct{ target, param string }
	cur := map[key]int{}
	for _, tg := range tr.Targets() {
		cur[key{tg, "max_pages_per_rpc"}], cur[key{tg, "max_rpcs_in_flight"}] = 256, 8
	}
	changes := map[string]int{}
	var reverts []logEntry
	for _, e := range logs {
		if e.Msg != "lustre: parameter changed" {
			continue
		}
		k := key{e.Target, e.Parameter}
		if e.Old != cur[k] || e.Reason == "" || tune.CheckLustre(e.Parameter, e.New) != nil {
			t.Fatalf("log %+v: old should be %d, a reason given, new in range", e, cur[k])
		}
		cur[k] = e.New
		if e.Target == tr.Targets()[0] {
			changes[e.Reason]++
			if e.Reason == string(tune.ReasonContention) {
				reverts = append(reverts, e)
			}
		}
	}
	for i, tg := range tr.Targets() {
		if got := [2]int{cur[key{tg, "max_pages_per_rpc"}], cur[key{tg, "max_rpcs_in_flight"}]}; got != before[i] {
			t.Errorf("%s: the log ends at %v, the tree held %v", tg, got, before[i])
		}
	}
	t.Logf("changes by reason (each on 3 targets): %v", changes)
	// Contention from 420 s: the change made at 420 s is judged at 430 s
	// and reverted; without contention it is not.
	if !revertedAt(t, reverts, start, 430*time.Second) {
		t.Errorf("no contention revert at 430 s, 10 s after the contention started")
	}
	calm := movingModel
	calm.ContentionShare = 1
	_, calmLogs, _, calmStart, _ := runMoving(t, lustretest.Layout212, calm)
	var calmReverts []logEntry
	for _, e := range calmLogs {
		if e.Reason == string(tune.ReasonContention) && e.Target == tr.Targets()[0] {
			calmReverts = append(calmReverts, e)
		}
	}
	if revertedAt(t, calmReverts, calmStart, 430*time.Second) {
		t.Errorf("without contention, a revert at 430 s all the same: the test shows nothing")
	}
	// Metrics: changes by reason, and the values in force (restored).
	for reason, c := range changes {
		var sum float64
		for _, p := range []string{"max_pages_per_rpc", "max_rpcs_in_flight"} {
			sum += testutil.ToFloat64(mustCounter(t, reg, p, reason))
		}
		if int(sum) != c {
			t.Errorf("adaptio_lustre_changes_total{reason=%q} %v, logged %d", reason, sum, c)
		}
	}
	// --restore: the values found at start.
	for _, tg := range tr.Targets() {
		if p, f := param(t, tr, tg, "max_pages_per_rpc"), param(t, tr, tg, "max_rpcs_in_flight"); p != 256 || f != 8 {
			t.Errorf("%s after --restore: %d pages, %d in flight; want 256, 8", tg, p, f)
		}
	}
}

// revertedAt reports whether one of reverts came at (time since start).
func revertedAt(t *testing.T, reverts []logEntry, start time.Time, at time.Duration) bool {
	found := false
	for _, e := range reverts {
		t.Logf("contention revert at %v: %s %d -> %d", e.Time.Sub(start), e.Parameter, e.Old, e.New)
		found = found || e.Time.Sub(start) == at
	}
	return found
}

// mustCounter finds adaptio_lustre_changes_total{param, reason} in reg
// (a zero counter if it was never incremented).
func mustCounter(t *testing.T, reg *prometheus.Registry, param, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != "adaptio_lustre_changes_total" {
			continue
		}
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["param"] == param && labels["reason"] == reason {
				c.Add(m.Counter.GetValue())
			}
		}
	}
	return c
}
