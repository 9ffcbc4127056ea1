package main

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/selection"
)

// A forwarding daemon under dynamic selection changes its algorithm while
// a client writes, stays on one of the chosen set, and exports the one in
// force and the changes.
func TestForwardDynamicSelection(t *testing.T) {
	be, err := posix.New(t.TempDir(), backend.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	rng := rand.New(rand.NewPCG(1, 2))
	dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: names}, Period: 20 * time.Millisecond}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"127.0.0.1:0"}, Scheduler: dr.Current(0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown()
	c, err := client.Dial(d.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("dyn.dat")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reg := prometheus.NewRegistry()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runSelection(ctx, d, dr, 20*time.Millisecond, rng, slog.New(slog.NewTextHandler(io.Discard, nil)), reg, names)
	}()
	changes := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "adaptio_fwd_scheduler_changes_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
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
