// Package fwdtest starts forwarding daemons for tests of fwd and of the
// packages built on it (the FUSE mount, the benchmark client).
package fwdtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
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
func ServeDir(dir string, layout backend.Layout) (string, func(), error) {
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
