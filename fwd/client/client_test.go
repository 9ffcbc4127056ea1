package client_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

// restartable starts a daemon on a POSIX backend in dir and a client that
// reconnects to it for 10 s; start starts the daemon again on the same
// socket after d is shut down.
func restartable(t *testing.T) (dir string, start func() *fwd.Daemon, d *fwd.Daemon, c *client.Client) {
	t.Helper()
	dir = t.TempDir()
	be := fwdtest.Posix(t, dir)
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	start = func() *fwd.Daemon { return fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}}) }
	d = start()
	c, err := client.DialOptions(sock, client.Options{Reconnect: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return dir, start, d, c
}

// With Reconnect, a client rides through a daemon restart: writes in flight
// are repeated, open files are reopened, and every byte lands.
func TestClientReconnectAcrossRestart(t *testing.T) {
	_, start, d, c := restartable(t)
	f, err := c.Create("r")
	if err != nil {
		t.Fatal(err)
	}
	const chunk, chunks = 16 << 10, 200
	errc := make(chan error, 1)
	progress := make(chan int, chunks)
	go func() {
		for i := 0; i < chunks; i++ {
			off := int64(i) * chunk
			if _, err := f.WriteAt(fwdtest.Content(4, off, chunk), off); err != nil {
				errc <- fmt.Errorf("chunk %d: %w", i, err)
				return
			}
			progress <- i
		}
		errc <- nil
	}()
	for i := range progress { // restart once a quarter is written
		if i == chunks/4 {
			break
		}
	}
	d.Shutdown()
	d2 := start()
	defer d2.Shutdown()
	if err := <-errc; err != nil {
		t.Fatalf("writer across the restart: %v", err)
	}
	got := make([]byte, chunk*chunks)
	if n, err := f.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, fwdtest.Content(4, 0, len(got))) {
		t.Fatalf("after the restart: read %d bytes, %v; exact %v", n, err, bytes.Equal(got, fwdtest.Content(4, 0, len(got))))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Without Reconnect a lost connection fails clearly.
	c2, err := client.Dial(d2.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	d2.Shutdown()
	if _, err := c2.Stat("r"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call after the daemon went away: got %v, want ErrClosed", err)
	}
}

// Files renamed through the client (or below a directory it renamed) are
// known by their new names: after a daemon restart they are reopened there.
func TestReconnectReopensRenamedFiles(t *testing.T) {
	dir, start, d, c := restartable(t)
	if err := c.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create("d/a")
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Create("b")
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Create("untouched")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"d/a", "d/a2"}, {"./d", "e"}, {"b", "c"}} {
		if err := c.Rename(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		f    *client.File
		want string
	}{{f, "e/a2"}, {g, "c"}, {h, "untouched"}} {
		if got := tt.f.Name(); got != tt.want {
			t.Errorf("Name: got %q, want %q", got, tt.want)
		}
	}
	d.Shutdown()
	defer start().Shutdown()
	for _, w := range []struct {
		f    *client.File
		data string
	}{{f, "one"}, {g, "two"}, {h, "three"}} {
		if _, err := w.f.WriteAt([]byte(w.data), 0); err != nil {
			t.Fatalf("write to %s after the restart: %v", w.f.Name(), err)
		}
		if err := w.f.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, w.f.Name())); err != nil || string(got) != w.data {
			t.Errorf("backend %s: %q, %v; want %q", w.f.Name(), got, err, w.data)
		}
	}
}

// Clients size their requests to the frame limit the daemon announces.
func TestClientFollowsFrameLimit(t *testing.T) {
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), MaxFrame: 64 << 10})
	c, err := client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Servers() != 4 {
		t.Fatalf("Servers() = %d, want 4", c.Servers())
	}
	f, err := c.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	data := fwdtest.Content(8, 0, 1<<20)
	if n, err := f.WriteAt(data, 0); err != nil || n != len(data) {
		t.Fatalf("1 MiB write through 64 KiB frames: %d, %v", n, err)
	}
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, data) {
		t.Fatalf("1 MiB read through 64 KiB frames: %d, %v", n, err)
	}
}

// Many goroutines share one client's region; requests that find no room
// go over the socket; the bytes are exact either way.
func TestShmConcurrentSmallRegion(t *testing.T) {
	dir := t.TempDir()
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, dir), Listen: []string{"unix:" + filepath.Join(t.TempDir(), "s")}})
	c, err := client.DialOptions(d.Addr(), client.Options{ShmSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	const per, n = 96 << 10, 32
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(i) * per
			if _, err := f.WriteAt(fwdtest.Content(3, off, per), off); err != nil {
				errc <- err
				return
			}
			buf := make([]byte, per)
			if _, err := f.ReadAt(buf, off); err != nil {
				errc <- err
				return
			}
			if !bytes.Equal(buf, fwdtest.Content(3, off, per)) {
				errc <- errors.New("read back differs")
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(b, fwdtest.Content(3, 0, n*per)) {
		t.Fatal("file differs")
	}
}
