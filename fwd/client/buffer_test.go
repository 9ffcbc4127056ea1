package client_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
)

// Buffers move exact bytes over every transport: in the shared region on a
// Unix socket (read-shm and write-shm naming the Buffer's own pages), in
// ordinary memory otherwise; requests longer than MaxIO are split; a read
// past the end is short with io.EOF.
func TestBufferReadWriteExact(t *testing.T) {
	for _, tt := range []struct {
		name   string
		unix   bool
		o      client.Options
		shared bool
	}{
		{"tcp", false, client.Options{}, false},
		{"unix-shm", true, client.Options{}, true},
		{"unix-shm-split", true, client.Options{MaxIO: 20 << 10}, true},
		{"unix-shm-full", true, client.Options{ShmSize: 64 << 10}, false}, // no room: ordinary memory
		{"unix-socket", true, client.Options{NoShm: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			listen := "127.0.0.1:0"
			if tt.unix {
				listen = "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
			}
			d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Listen: []string{listen}})
			c, err := client.DialOptions(d.Addr(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const n = 100<<10 + 123
			w, err := c.AllocBuffer(n)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Free()
			if w.Shared() != tt.shared || w.Len() != n {
				t.Fatalf("buffer: shared %v, len %d; want %v, %d", w.Shared(), w.Len(), tt.shared, n)
			}
			f, err := c.Create("b")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const off = 5000
			copy(w.Bytes(), fwdtest.Content(7, off, n))
			if k, err := f.WriteBuffer(w, off); k != n || err != nil {
				t.Fatalf("WriteBuffer = %d, %v; want %d, nil", k, err, n)
			}
			got := make([]byte, n)
			if k, err := f.ReadAt(got, off); k != n || err != nil || !bytes.Equal(got, fwdtest.Content(7, off, n)) {
				t.Fatalf("ReadAt after WriteBuffer = %d, %v, exact %v", k, err, bytes.Equal(got, fwdtest.Content(7, off, n)))
			}
			r, err := c.AllocBuffer(n)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Free()
			if k, err := f.ReadBuffer(r, off); k != n || err != nil || !bytes.Equal(r.Bytes(), fwdtest.Content(7, off, n)) {
				t.Fatalf("ReadBuffer = %d, %v, exact %v", k, err, bytes.Equal(r.Bytes(), fwdtest.Content(7, off, n)))
			}
			// Past the end: short, io.EOF, the bytes that exist.
			k, err := f.ReadBuffer(r, off+n-1000)
			if k != 1000 || !errors.Is(err, io.EOF) || !bytes.Equal(r.Bytes()[:k], fwdtest.Content(7, off+n-1000, 1000)) {
				t.Fatalf("ReadBuffer at the end = %d, %v; want 1000, io.EOF", k, err)
			}
		})
	}
}

// Free gives the region back (a freed Buffer's place is handed out again),
// is harmless twice, and makes later calls with the Buffer fail; a Buffer
// still held does not hold up Close and stays usable memory until freed.
func TestBufferLifetime(t *testing.T) {
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Listen: []string{"unix:" + filepath.Join(t.TempDir(), "s")}})
	c, err := client.DialOptions(d.Addr(), client.Options{ShmSize: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Create("l")
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.AllocBuffer(256 << 10) // the whole region
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.AllocBuffer(1); err != nil || b.Shared() {
		t.Fatalf("second buffer of a full region: shared %v, %v; want ordinary memory", b.Shared(), err)
	}
	a.Free()
	a.Free()
	if _, err := f.WriteBuffer(a, 0); !errors.Is(err, client.ErrBufferFreed) {
		t.Fatalf("WriteBuffer with a freed buffer: %v, want ErrBufferFreed", err)
	}
	b, err := c.AllocBuffer(4096)
	if err != nil || !b.Shared() {
		t.Fatalf("after Free: shared %v, %v; want a place in the region", b.Shared(), err)
	}
	copy(b.Bytes(), "held")
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a held buffer")
	}
	if string(b.Bytes()[:4]) != "held" {
		t.Fatal("buffer memory changed by Close")
	}
	if _, err := f.WriteBuffer(b, 0); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("WriteBuffer on a closed client: %v, want ErrClosed", err)
	}
	b.Free()
}

// A Buffer of a connection since replaced (daemon restart with Reconnect)
// still works: its bytes go over the new connection as a plain write.
func TestBufferAcrossReconnect(t *testing.T) {
	be := fwdtest.Posix(t, t.TempDir())
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	d := fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}})
	c, err := client.DialOptions(sock, client.Options{Reconnect: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("r")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := c.AllocBuffer(32 << 10)
	if err != nil || !buf.Shared() {
		t.Fatalf("buffer: shared %v, %v", buf.Shared(), err)
	}
	defer buf.Free()
	copy(buf.Bytes(), fwdtest.Content(3, 0, buf.Len()))
	if _, err := f.WriteBuffer(buf, 0); err != nil {
		t.Fatal(err)
	}
	d.Shutdown()
	fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}})
	copy(buf.Bytes(), fwdtest.Content(4, 0, buf.Len()))
	if _, err := f.WriteBuffer(buf, 0); err != nil {
		t.Fatalf("WriteBuffer after the restart: %v", err)
	}
	clear(buf.Bytes())
	if k, err := f.ReadBuffer(buf, 0); k != buf.Len() || err != nil || !bytes.Equal(buf.Bytes(), fwdtest.Content(4, 0, buf.Len())) {
		t.Fatalf("ReadBuffer after the restart = %d, %v, exact %v", k, err, bytes.Equal(buf.Bytes(), fwdtest.Content(4, 0, buf.Len())))
	}
}

// A forwarded 32 KiB write through the rings allocates a handful of small
// objects on both sides (the client's call, the daemon's op and job), not
// one per layer: a regression guard for the per-request path.
func TestRingWriteAllocations(t *testing.T) {
	be, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4}) // PVFS's default stripe: one piece
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	d := fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{"unix:" + filepath.Join(t.TempDir(), "fwd.sock")}, Scheduler: "fifo"})
	c, err := client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := c.AllocBuffer(32 << 10)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	if !buf.Shared() {
		t.Skip("no shared region on this system")
	}
	off := int64(0)
	write := func() {
		if _, err := f.WriteBuffer(buf, off); err != nil {
			t.Fatal(err)
		}
		off += 32 << 10
	}
	for range 50 {
		write() // warm pools, maps and the pollers
	}
	n := testing.AllocsPerRun(200, write)
	t.Logf("%v allocations per forwarded 32 KiB write", n)
	if n > 8 {
		t.Errorf("%v allocations per forwarded 32 KiB write, want at most 8", n)
	}
}
