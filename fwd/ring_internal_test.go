package fwd

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/internal/shm"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/sched"
)

// startInternal starts a daemon on a Unix socket for the package's own
// tests (fwd/fwdtest imports fwd, so they cannot use it); opts.Backend
// defaults to a POSIX backend with 64 KiB stripes over 4 data servers.
func startInternal(t *testing.T, opts Options) *Daemon {
	t.Helper()
	if opts.Backend == nil {
		be, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		opts.Backend = be
	}
	opts.Listen = []string{"unix:" + filepath.Join(t.TempDir(), "s")}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	return d
}

// pattern is the content of byte off of writer w.
func pattern(w int, off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int64(w)*31 + (off+int64(i))*7)
	}
	return b
}

// createFile dials d with default options and creates file "f"; both are
// closed when the test ends.
func createFile(t *testing.T, d *Daemon) *client.File {
	t.Helper()
	c, err := client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f, err := c.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// While requests wait in the scheduler (here for their TWINS window) the
// poller does not spin for new ones, which would wait as well: it sleeps
// after its sweeps however long the spin.
func TestRingPollerSleepsWhileRequestsQueue(t *testing.T) {
	const window = 400 * time.Millisecond
	d := startInternal(t, Options{RingPolls: 1, RingSpin: time.Hour, Scheduler: "twins", Sched: sched.Config{Window: window}})
	f := createFile(t, d)
	d.rings.mu.Lock()
	rings := slices.Clone(d.rings.rings)
	d.rings.mu.Unlock()
	if len(rings) != 1 {
		t.Fatalf("%d rings registered, want the client's 1", len(rings))
	}
	r := rings[0] // the client's rings, as the daemon maps them
	done := make(chan error, 1)
	go func() {
		// 128 KiB is in data server 2's stripe: it waits for the third
		// window, while the first (data server 0's) runs.
		_, err := f.WriteAt(make([]byte, 4096), 128<<10)
		done <- err
	}()
	// The request waits for the third window (two windows); the poller
	// seen asleep while it is still queued is the property, whenever that
	// is observed.
	poll.Until(t, "the poller to sleep with a request queued", 2*window, func() bool {
		return r.r.Counter(shm.OffIdle).Load() == 1 && d.rings.queued.Load() > 0
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A client whose requests follow each other with gaps longer than the
// poller's sweeps but shorter than its spin rings no doorbell: the poller
// is still polling when each request comes. Without a spin every request
// after a gap rings one.
func TestRingSpinSparesDoorbells(t *testing.T) {
	const requests = 20
	const gap = 2 * time.Millisecond
	for _, tt := range []struct {
		name      string
		spin      time.Duration
		doorbells func(n float64) bool
		want      string
	}{
		{"spin longer than the gaps", time.Second, func(n float64) bool { return n <= 2 }, "at most 2"},
		{"no spin", -1, func(n float64) bool { return n >= requests/2 }, fmt.Sprintf("at least %d", requests/2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := startInternal(t, Options{RingPolls: 1, RingSpin: tt.spin, Scheduler: "fifo"})
			f := createFile(t, d)
			buf := make([]byte, 4096)
			if _, err := f.WriteAt(buf, 0); err != nil { // the first request wakes the poller
				t.Fatal(err)
			}
			before := testutil.ToFloat64(d.m.doorbells)
			for i := 0; i < requests; i++ {
				time.Sleep(gap)
				if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
					t.Fatal(err)
				}
			}
			if n := testutil.ToFloat64(d.m.doorbells) - before; !tt.doorbells(n) {
				t.Errorf("%v doorbells for %d requests %v apart, want %s", n, requests, gap, tt.want)
			}
		})
	}
}
