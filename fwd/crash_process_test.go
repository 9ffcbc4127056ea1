package fwd_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/testproc"
	"github.com/adaptio/adaptio/layout"
)

// daemonEnv, set in the environment, makes the test binary run a
// forwarding daemon (serveDaemon) instead of the tests, so that a test can
// kill it with SIGKILL as a crash would.
const daemonEnv = "ADAPTIO_FWD_TEST_DAEMON"

// serveDaemon serves a daemon over dir/export on the socket dir/fwd.sock.
func serveDaemon(dir string) (string, func(), error) {
	return fwdtest.ServeDir(dir, layout.Layout{StripeSize: 4 << 10, StripeCount: 4})
}

// A daemon killed with SIGKILL in the middle of verified writes loses
// nothing it acknowledged: a client with Reconnect carries on once a new
// daemon serves the same directory (its outstanding write sent again), and
// every byte reads back exact; a client without it gets an error at once
// for the write that was outstanding, never a hang, and what it had
// acknowledged before is on the backend.
func TestDaemonKilledMidWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills daemon processes; skipped with -short")
	}
	dir := t.TempDir()
	p := testproc.StartProc(t, daemonEnv, dir, "the forwarding daemon")
	addr := p.Published

	const chunk, chunks = 64 << 10, 400
	writeAll := func(f *client.File, seed uint64, acked chan<- int) error {
		defer close(acked)
		for i := range chunks {
			off := int64(i) * chunk
			if _, err := f.WriteAt(fwdtest.Content(seed, off, chunk), off); err != nil {
				return fmt.Errorf("chunk %d: %w", i, err)
			}
			acked <- i
		}
		return nil
	}
	verify := func(c *client.Client, name string, seed uint64, n int) {
		t.Helper()
		f, err := c.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got := make([]byte, n*chunk)
		if m, err := f.ReadAt(got, 0); m != len(got) || err != nil {
			t.Fatalf("%s: read %d of %d acknowledged bytes: %v", name, m, len(got), err)
		}
		for i := range n {
			off := int64(i) * chunk
			if !bytes.Equal(got[off:off+chunk], fwdtest.Content(seed, off, chunk)) {
				t.Fatalf("%s: acknowledged chunk %d differs after the crash", name, i)
			}
		}
	}

	// With Reconnect: the writer survives the crash.
	c, err := client.DialOptions(addr, client.Options{Reconnect: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("survivor")
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan int, chunks)
	errc := make(chan error, 1)
	go func() { errc <- writeAll(f, 11, acked) }()
	for i := range acked {
		if i == chunks/4 {
			break
		}
	}
	p.Kill()
	p = testproc.StartProc(t, daemonEnv, dir, "the restarted forwarding daemon")
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("writer with Reconnect across the crash: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("writer with Reconnect still blocked 60 s after the crash")
	}
	verify(c, "survivor", 11, chunks)
	f.Close()

	// Without Reconnect: the outstanding write fails at once.
	c2, err := client.Dial(p.Published)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	f2, err := c2.Create("victim")
	if err != nil {
		t.Fatal(err)
	}
	acked2 := make(chan int, chunks)
	go func() { errc <- writeAll(f2, 12, acked2) }()
	last := -1
	for i := range acked2 {
		if last = i; i == chunks/4 {
			break
		}
	}
	killed := time.Now()
	p.Kill()
	select {
	case err := <-errc:
		if !errors.Is(err, client.ErrClosed) {
			t.Fatalf("writer without Reconnect after the crash: %v, want ErrClosed", err)
		}
		if d := time.Since(killed); d > 5*time.Second {
			t.Errorf("the outstanding write failed %v after the crash, want at once", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writer without Reconnect still blocked 30 s after the crash")
	}
	for range acked2 { // the writes acknowledged between our last look and the crash
		last++
	}
	p = testproc.StartProc(t, daemonEnv, dir, "the forwarding daemon, started a third time")
	c3, err := client.Dial(p.Published)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	verify(c3, "victim", 12, last+1)
}

// A second daemon on the socket of a live one is refused with a clear
// error instead of taking the socket over; a dead one's socket is reused
// (TestDaemonKilledMidWrites restarts on it).
func TestSecondDaemonOnALiveSocketIsRefused(t *testing.T) {
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	d := startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{Listen: []string{sock}})
	d2, err := fwd.New(fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Listen: []string{sock}})
	if err != nil {
		t.Fatal(err)
	}
	err = d2.Start()
	if err == nil {
		d2.Shutdown()
		t.Fatal("a second daemon started on a live daemon's socket")
	}
	if !strings.Contains(err.Error(), "another process serves this socket") {
		t.Errorf("error %q, want it to say the socket is in use", err)
	}
	c := dial(t, d.Addr()) // the first daemon still serves
	if _, err := c.Create("still-here"); err != nil {
		t.Errorf("first daemon after the refused start: %v", err)
	}
}
