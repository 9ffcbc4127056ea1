package client_test

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/testlog"
)

// With the forwarder gone, calls wait Options.Reconnect once, then fail at
// once with ErrUnavailable instead of each waiting again; the client
// redials in the background and, once the forwarder is back, calls work
// again (files reopened) without any call having to wait. The loss, the
// giving up and the reconnection are logged once each, with the address.
func TestUnavailableForwarderFailsFastThenRecovers(t *testing.T) {
	dir := t.TempDir()
	be := fwdtest.Posix(t, dir)
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	start := func() *fwd.Daemon { return fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}}) }
	d := start()
	var logs testlog.Buffer
	const wait = 300 * time.Millisecond
	c, err := client.DialOptions(sock, client.Options{Reconnect: wait, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	data := fwdtest.Content(9, 0, 4096)
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}

	d.Shutdown()
	t0 := time.Now()
	if _, err := c.Stat("f"); !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrClosed) {
		t.Fatalf("first call without a forwarder: %v, want ErrUnavailable and ErrClosed", err)
	}
	if waited := time.Since(t0); waited < wait {
		t.Fatalf("first call failed after %v, before the %v it should wait", waited, wait)
	}
	t1 := time.Now()
	const later = 10
	for i := range later {
		if _, err := f.ReadAt(make([]byte, 10), 0); !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("call %d after giving up: %v, want ErrUnavailable", i, err)
		}
	}
	// Each would wait the whole Reconnect again if the client had not
	// given up, later waits in all; failing at once, they take a small
	// part of one. The bound sits halfway, so a loaded machine does not
	// fail the test.
	if took := time.Since(t1); took >= later*wait/2 {
		t.Fatalf("%d calls after giving up took %v, want them to fail at once (under %v together)", later, took, later*wait/2)
	}

	d2 := start()
	defer d2.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Stat("f")
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("while the background redial runs: %v, want ErrUnavailable", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnection 10 s after the forwarder came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after the reconnection: %d bytes, %v", n, err)
	}

	out := logs.String()
	addr := strings.TrimPrefix(sock, "unix:")
	for _, want := range []string{"level=WARN msg=\"lost the connection to the forwarder", "level=WARN msg=\"gave up waiting for the forwarder", "level=INFO msg=\"reconnected to the forwarder\""} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	if n := strings.Count(out, "addr="+addr); n != 3 {
		t.Errorf("the address in %d lines, want 3:\n%s", n, out)
	}
}
