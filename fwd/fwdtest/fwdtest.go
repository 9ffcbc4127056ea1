// Package fwdtest starts forwarding daemons for tests of fwd and of the
// packages built on it (the client library, the FUSE mount, the benchmark
// client), and gives them backends and verifiable content. It does not
// import the client library, so that library's own tests can use it.
package fwdtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/layout"
)

// Start creates and starts a daemon with opts (Listen defaults to a free
// loopback TCP port), waits until it accepts connections, and shuts it down
// when the test ends. Shutdown is idempotent, so a test may also stop the
// daemon itself, for example to restart it.
func Start(t testing.TB, opts fwd.Options) *fwd.Daemon {
	t.Helper()
	if len(opts.Listen) == 0 {
		opts.Listen = []string{"127.0.0.1:0"}
	}
	d, err := fwd.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	if !d.Ready(5 * time.Second) {
		t.Fatal("fwdtest: daemon not ready after 5 s")
	}
	return d
}

// Posix opens dir as a POSIX backend with small stripes (4 KiB) over 4
// data servers, so requests of a few KiB already span several of them; it
// is closed when the test ends.
func Posix(t testing.TB, dir string) backend.Backend {
	t.Helper()
	return PosixLayout(t, dir, layout.Layout{StripeSize: 4 << 10, StripeCount: 4})
}

// PosixLayout opens dir as a POSIX backend with layout l; it is closed
// when the test ends.
func PosixLayout(t testing.TB, dir string, l layout.Layout) backend.Backend {
	t.Helper()
	b, err := posix.New(dir, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Content is deterministic bytes for (seed, offset): byte i of a file
// written with seed s is the same whatever the request sizes that wrote
// it, so any range read back can be checked.
func Content(seed uint64, off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint64(off+int64(i))*0x9E3779B97F4A7C15 ^ seed
		b[i] = byte(x >> 56)
	}
	return b
}

// Metric sums the values of the series of metric name that g gathers
// (counters and gauges) whose labels include every pair of labels (name,
// value, name, value...).
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if v, ok := have[labels[i]]; !ok || v != labels[i+1] {
					continue series
				}
			}
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// MemDir is a fresh directory on tmpfs (/dev/shm) when the machine has one,
// else a test directory, removed when the test ends: a backend there has no
// disk delays, which the forwarder's speed benchmarks need.
func MemDir(t testing.TB) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "adaptio-bench-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// ServeDir is a testproc service (internal/testproc): a daemon over a POSIX
// backend with layout in dir/export, listening on the Unix socket
// dir/fwd.sock, so that a restarted one serves the same files at the same
// address. It returns the daemon's address and its stop function.
func ServeDir(dir string, layout layout.Layout) (string, func(), error) {
	export := filepath.Join(dir, "export")
	if err := os.MkdirAll(export, 0o755); err != nil {
		return "", nil, err
	}
	be, err := posix.New(export, layout)
	if err != nil {
		return "", nil, err
	}
	d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"unix:" + filepath.Join(dir, "fwd.sock")}})
	if err != nil {
		be.Close()
		return "", nil, err
	}
	if err := d.Start(); err != nil {
		be.Close()
		return "", nil, err
	}
	return d.Addr(), func() { d.Shutdown(); be.Close() }, nil
}
