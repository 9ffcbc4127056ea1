package fwd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/tunerun"
)

// pfsBackend is a backend of 4 emulated data servers (per-server objects,
// where both knobs act), closed when the test ends.
func pfsBackend(t *testing.T) backend.Backend {
	t.Helper()
	be, err := startCluster(t).Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// knobValues maps the daemon's knobs to their values.
func knobValues(d *fwd.Daemon) map[string]int {
	m := map[string]int{}
	for _, k := range d.Knobs() {
		m[k.Name] = k.Value
	}
	return m
}

// The knobs start at the dispatch the backend gets (per-server objects:
// IOFSL's 16 requests per access and ionode.PerServerLimit; a local
// directory: 64 pieces of a request and no limit but the workers), are
// set within their ranges only, and show in the metrics.
func TestKnobsDefaultsRangesAndMetrics(t *testing.T) {
	pfsBE := pfsBackend(t)
	for _, tt := range []struct {
		name          string
		daemon        func(reg prometheus.Registerer) *fwd.Daemon
		agg, perServe int
	}{
		{"per-server objects", func(reg prometheus.Registerer) *fwd.Daemon {
			return startDaemon(t, pfsBE, fwd.Options{Workers: 8, Registerer: reg})
		}, fwd.MaxMerge, ionode.PerServerLimit(8, 4)},
		{"local directory", func(reg prometheus.Registerer) *fwd.Daemon {
			return startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{Workers: 8, Registerer: reg})
		}, 64, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			d := tt.daemon(reg)
			want := map[string]int{fwd.KnobAggregate: tt.agg, fwd.KnobPerServer: tt.perServe}
			if got := knobValues(d); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("knobs %v, want %v", got, want)
			}
			for _, bad := range []struct {
				name string
				v    int
			}{{fwd.KnobAggregate, 0}, {fwd.KnobAggregate, fwd.MaxAggregate + 1}, {fwd.KnobPerServer, 0}, {fwd.KnobPerServer, 9}, {"max_pages_per_rpc", 4}} {
				if err := d.SetKnob(bad.name, bad.v); !errors.Is(err, fwd.ErrKnob) {
					t.Errorf("SetKnob(%s, %d): %v, want ErrKnob", bad.name, bad.v, err)
				}
			}
			if err := d.SetKnob(fwd.KnobAggregate, 4); err != nil {
				t.Fatal(err)
			}
			if err := d.SetKnob(fwd.KnobPerServer, 2); err != nil {
				t.Fatal(err)
			}
			if err := d.SetKnob(fwd.KnobPerServer, 2); err != nil { // no change: not counted
				t.Fatal(err)
			}
			for _, m := range []struct {
				name, knob string
				want       float64
			}{
				{"adaptio_fwd_knob", fwd.KnobAggregate, 4},
				{"adaptio_fwd_knob", fwd.KnobPerServer, 2},
				{"adaptio_fwd_knob_changes_total", fwd.KnobAggregate, 1},
				{"adaptio_fwd_knob_changes_total", fwd.KnobPerServer, 1},
			} {
				if got := fwdtest.Metric(t, reg, m.name, "knob", m.knob); got != m.want {
					t.Errorf("%s{knob=%q} = %v, want %v", m.name, m.knob, got, m.want)
				}
			}
		})
	}
}

// Knobs changed at random while clients write and read back: every byte
// lands where it was written and reads see it, whatever the settings in
// force when each request was queued, formed into accesses or executed.
func TestKnobChangesKeepEveryByte(t *testing.T) {
	be := pfsBackend(t)
	d := startDaemon(t, be, fwd.Options{Workers: 8})
	stop := make(chan struct{})
	var turner sync.WaitGroup
	turner.Add(1)
	go func() {
		defer turner.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.SetKnob(fwd.KnobAggregate, 1+rng.IntN(fwd.MaxAggregate)); err != nil {
				t.Error(err)
			}
			if err := d.SetKnob(fwd.KnobPerServer, 1+rng.IntN(8)); err != nil {
				t.Error(err)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	c := dial(t, d.Addr())
	const writers, size = 4, 1 << 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.Create(fmt.Sprintf("k%d", w))
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			// Overlapping passes of different request sizes: the last
			// pass (seed w+1) must win everywhere.
			for pass, chunk := range []int{48 << 10, 4 << 10, 100 << 10} {
				for off := 0; off < size; off += chunk {
					n := min(chunk, size-off)
					if _, err := f.WriteAt(fwdtest.Content(uint64(w*10+pass), int64(off), n), int64(off)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	turner.Wait()
	for w := range writers {
		f, err := c.Open(fmt.Sprintf("k%d", w))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if _, err := f.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if want := fwdtest.Content(uint64(w*10+2), 0, size); !bytes.Equal(got, want) {
			t.Fatalf("file k%d differs from its last pass", w)
		}
	}
}

// A tuner run against a real daemon changes its knobs while a client
// writes (the changes are logged in the metrics), and the data stays
// exact.
func TestTunersDriveTheDaemon(t *testing.T) {
	for _, name := range tune.Names() {
		t.Run(name, func(t *testing.T) {
			be := pfsBackend(t)
			reg := prometheus.NewRegistry()
			d := startDaemon(t, be, fwd.Options{Workers: 8, Registerer: reg})
			const every = 20 * time.Millisecond
			tn, err := tune.New(name, tune.Options{Knobs: d.Knobs(), Interval: every, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- tunerun.Run(ctx, tn, d, every, nil) }()
			changes := func() float64 {
				return fwdtest.Metric(t, reg, "adaptio_fwd_knob_changes_total")
			}
			c := dial(t, d.Addr())
			f, err := c.Create("tuned")
			if err != nil {
				t.Fatal(err)
			}
			const chunk = 256 << 10
			var off int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; ctx.Err() == nil; i++ {
					if _, err := f.WriteAt(fwdtest.Content(7, off, chunk), off); err != nil {
						t.Error(err)
						return
					}
					off += chunk
				}
			}()
			poll.Until(t, "3 knob changes by the tuner", 20*time.Second, func() bool { return changes() >= 3 })
			cancel()
			<-done
			if err := <-ran; !errors.Is(err, context.Canceled) {
				t.Errorf("tunerun.Run returned %v, want context.Canceled", err)
			}
			got := make([]byte, off)
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, fwdtest.Content(7, 0, int(off))) {
				t.Fatal("data written while the tuner changed the knobs differs")
			}
			t.Logf("%s: %v changes, knobs now %v", name, changes(), knobValues(d))
		})
	}
}
