package fwd_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// newPosixDir is fwdtest.Posix for callers without a testing.TB to clean up with.
func newPosixDir(dir string) backend.Backend {
	b, err := posix.New(dir, layout.Layout{StripeSize: 4 << 10, StripeCount: 4})
	if err != nil {
		panic(err)
	}
	return b
}

// startDaemon starts a daemon over be with opts (Backend and Listen filled in).
func startDaemon(t testing.TB, be backend.Backend, opts fwd.Options) *fwd.Daemon {
	t.Helper()
	opts.Backend = be
	return fwdtest.Start(t, opts)
}

func dial(t testing.TB, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Reads and writes are exact over each transport: TCP, a Unix socket with
// the shared region (the default), a region too small for most requests (they
// fall back to the socket), and a Unix socket without the region.
func TestReadWriteExact(t *testing.T) {
	for _, tt := range []struct {
		name string
		unix bool
		o    client.Options
	}{
		{"tcp", false, client.Options{}},
		{"unix-shm", true, client.Options{}},
		{"unix-shm-small", true, client.Options{ShmSize: 64 << 10}},
		{"unix-socket", true, client.Options{NoShm: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			listen := "127.0.0.1:0"
			if tt.unix {
				listen = "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
			}
			readWriteExact(t, listen, tt.o)
		})
	}
}

func readWriteExact(t *testing.T, listen string, o client.Options) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{Listen: []string{listen}})
	c, err := client.DialOptions(d.Addr(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mkdir("out", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create("out/a")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.HasPrefix(listen, "unix:") && !o.NoShm; c.SharedMemory() != want {
		t.Fatalf("SharedMemory() = %v, want %v", c.SharedMemory(), want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 100, 4096, 4097, 12345, 64 << 10, 1 << 20, 5<<20 + 3}
	var off int64
	for _, n := range sizes {
		data := fwdtest.Content(7, off, n)
		if got, err := f.WriteAt(data, off); err != nil || got != n {
			t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", n, off, got, err)
		}
		off += int64(n)
	}
	// The backend holds exactly the bytes.
	onDisk, err := os.ReadFile(filepath.Join(dir, "out/a"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, fwdtest.Content(7, 0, int(off))) {
		t.Fatalf("file on the backend differs from what was written (%d bytes, want %d)", len(onDisk), off)
	}
	// Random reads are exact; reads past the end are short with io.EOF.
	for i := 0; i < 50; i++ {
		o := rng.Int64N(off)
		n := 1 + rng.IntN(300<<10)
		buf := make([]byte, n)
		got, err := f.ReadAt(buf, o)
		want := int(min(int64(n), off-o))
		if got != want || (want < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d at %d) = %d, %v; want %d", n, o, got, err, want)
		}
		if !bytes.Equal(buf[:got], fwdtest.Content(7, o, got)) {
			t.Fatalf("ReadAt(%d at %d): bytes differ", n, o)
		}
	}
	fi, err := c.Stat("out/a")
	if err != nil || fi.Size != off || fi.IsDir {
		t.Fatalf("Stat = %+v, %v; want size %d", fi, err, off)
	}
	if err := c.Truncate("out/a", 10); err != nil {
		t.Fatal(err)
	}
	ents, err := c.ReadDir("out")
	if err != nil || len(ents) != 1 || ents[0].Name != "a" || ents[0].Size != 10 {
		t.Fatalf("ReadDir = %+v, %v", ents, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil || !strings.Contains(err.Error(), "bad handle") {
		t.Fatalf("read after close: got %v, want bad handle", err)
	}
	if err := c.Unlink("out/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat("out/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after unlink: got %v, want ErrNotExist", err)
	}
	if _, err := c.Open("out/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: got %v, want ErrNotExist", err)
	}
	if _, err := c.OpenFile("out", fwdproto.OpenCreate|fwdproto.OpenExcl, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create of an existing name: got %v, want ErrExist", err)
	}
}

// Every scheduler of the registry carries requests correctly.
func TestEverySchedulerConcurrentWriters(t *testing.T) {
	for _, name := range sched.Names() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			be := fwdtest.Posix(t, dir)
			d := startDaemon(t, be, fwd.Options{Scheduler: name, Workers: 4, Sched: sched.Config{Window: 200 * time.Microsecond}})
			concurrentWriters(t, d.Addr(), dir, 8, 24)
		})
	}
}

// Concurrent writers over the shared-memory transport: every acknowledged
// write is on the backend and the file is exact.
func TestConcurrentWritersShm(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{Listen: []string{"unix:" + filepath.Join(t.TempDir(), "fwd.sock")},
		Workers: 4, Sched: sched.Config{Window: 200 * time.Microsecond}})
	concurrentWriters(t, d.Addr(), dir, 8, 24)
}

// concurrentWriters runs writers goroutines (each its own connection) that
// write distinct, randomly sized ranges of one shared file; every write,
// once acknowledged, must already be on the backend, and at the end the
// whole file must be exact.
func concurrentWriters(t *testing.T, addr, dir string, writers, perWriter int) {
	t.Helper()
	c0 := dial(t, addr)
	f0, err := c0.Create("shared")
	if err != nil {
		t.Fatal(err)
	}
	defer f0.Close()
	const region = 256 << 10
	osf, err := os.Open(filepath.Join(dir, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			f, err := c.Open("shared")
			if err != nil {
				errs <- err
				return
			}
			f.Process = uint32(w)
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			base := int64(w) * region
			var off int64
			for i := 0; i < perWriter && off < region; i++ {
				n := int64(1 + rng.IntN(24<<10))
				n = min(n, region-off)
				data := fwdtest.Content(3, base+off, int(n))
				if _, err := f.WriteAt(data, base+off); err != nil {
					errs <- err
					return
				}
				got := make([]byte, n)
				if _, err := osf.ReadAt(got, base+off); err != nil || !bytes.Equal(got, data) {
					errs <- fmt.Errorf("writer %d: acknowledged write at %d not on the backend (%v)", w, base+off, err)
					return
				}
				off += n
			}
			// Fill the rest of the region in one write.
			if off < region {
				if _, err := f.WriteAt(fwdtest.Content(3, base+off, int(region-off)), base+off); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := os.ReadFile(filepath.Join(dir, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fwdtest.Content(3, 0, writers*region); !bytes.Equal(all, want) {
		t.Fatalf("shared file: %d bytes, want %d; contents differ", len(all), len(want))
	}
}

// One connection carries many outstanding requests; answers match calls.
func TestPipelining(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{})
	c := dial(t, d.Addr())
	const files = 8
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < files; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("p%d", i)
			f, err := c.Create(name)
			if err != nil {
				errs <- err
				return
			}
			data := fwdtest.Content(uint64(i), 0, 40<<10+i)
			var iw sync.WaitGroup
			for k := 0; k < 10; k++ {
				iw.Add(1)
				go func() {
					defer iw.Done()
					lo, hi := k*len(data)/10, (k+1)*len(data)/10
					if _, err := f.WriteAt(data[lo:hi], int64(lo)); err != nil {
						errs <- err
					}
				}()
			}
			iw.Wait()
			for k := 0; k < 5; k++ {
				if _, err := c.Stat(name); err != nil {
					errs <- err
				}
			}
			got := make([]byte, len(data))
			if n, err := f.ReadAt(got, 0); err != nil || n != len(data) || !bytes.Equal(got, data) {
				errs <- fmt.Errorf("%s: read back %d bytes, %v", name, n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestPathConfinement(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, fwdtest.Posix(t, root), fwd.Options{})
	c := dial(t, d.Addr())
	paths := []string{"../x", "a/../../x", "/etc/passwd", "escape/secret", "link", "escape/new", "x\x00y"}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			if _, err := c.Open(p); !errors.Is(err, fs.ErrPermission) && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("open: got %v, want refused", err)
			}
			if _, err := c.OpenFile(p, fwdproto.OpenCreate, 0o644); !errors.Is(err, fs.ErrPermission) {
				t.Errorf("create: got %v, want a path error", err)
			}
			if err := c.Mkdir(p+"/d", 0o755); !errors.Is(err, fs.ErrPermission) {
				t.Errorf("mkdir: got %v, want a path error", err)
			}
			if err := c.Mknod(p+"/n", fs.ModeNamedPipe|0o644, 0); !errors.Is(err, fs.ErrPermission) {
				t.Errorf("mknod: got %v, want a path error", err)
			}
			// A link leaving the root is described itself (lstat neither
			// follows nor reads it), but not read.
			if fi, err := c.Stat(p); err == nil && (p != "link" || fi.Mode&fs.ModeSymlink == 0) {
				t.Errorf("stat: got %v, want refused", fi.Mode)
			}
			if target, err := c.Readlink(p); !errors.Is(err, fs.ErrPermission) && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("readlink: got %q, %v; want refused", target, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file was created outside the export root")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
		t.Fatal("a file outside the export root changed")
	}
}

// Mknod makes FIFOs and sockets' files on a POSIX backend; it refuses
// directories and symbolic links (which have their own operations) and an
// existing name.
func TestMknod(t *testing.T) {
	root := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, root), fwd.Options{})
	c := dial(t, d.Addr())
	for _, m := range []fs.FileMode{fs.ModeNamedPipe | 0o640, fs.ModeSocket | 0o755} {
		name := "n" + fmt.Sprint(uint32(m.Type()))
		if err := c.Mknod(name, m, 0); err != nil {
			t.Fatalf("mknod %v: %v", m, err)
		}
		if fi, err := c.Stat(name); err != nil || fi.Mode != m {
			t.Fatalf("stat after mknod %v: %v, %v", m, fi.Mode, err)
		}
		if fi, err := os.Lstat(filepath.Join(root, name)); err != nil || fi.Mode() != m {
			t.Fatalf("backend after mknod %v: %v, %v", m, fi.Mode(), err)
		}
		if err := c.Mknod(name, m, 0); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("mknod over an existing name: %v, want exists", err)
		}
	}
	for _, m := range []fs.FileMode{fs.ModeDir | 0o755, fs.ModeSymlink | 0o777} {
		var we *fwdproto.Error
		if err := c.Mknod("bad", m, 0); !errors.As(err, &we) || we.Code != fwdproto.CodeBadArgument {
			t.Fatalf("mknod %v: %v, want bad argument", m, err)
		}
	}
}

// rawConn sends hand-made frames.
func rawConn(t *testing.T, addr string) (net.Conn, *fwdproto.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc, fwdproto.NewReader(nc, 0)
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{MaxFrame: 64 << 10})
	good := dial(t, d.Addr())
	hello := fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpHello, ID: 1, ClientID: 5})
	oversized := make([]byte, fwdproto.HeaderSize)
	fwdproto.PutHeader(oversized, uint8(fwdproto.OpWrite), 2, 1<<20)
	badMagic := fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpStat, ID: 3, Path: "x"})
	badMagic[4] = 0x12
	truncatedPayload := fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpStat, ID: 4, Path: "x"})
	binary.BigEndian.PutUint16(truncatedPayload[fwdproto.HeaderSize:], 500) // path length beyond the frame
	tests := []struct {
		name  string
		frame []byte
		want  fwdproto.Code
	}{
		{"oversized", oversized, fwdproto.CodeTooLarge},
		{"bad magic", badMagic, fwdproto.CodeBadFrame},
		{"malformed payload", truncatedPayload, fwdproto.CodeBadFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, r := rawConn(t, d.Addr())
			if _, err := nc.Write(append(append([]byte(nil), hello...), tt.frame...)); err != nil {
				t.Fatal(err)
			}
			var codes []fwdproto.Code
			for {
				h, p, err := r.ReadFrame()
				if err != nil {
					if err != io.EOF {
						t.Fatalf("after the error reply: got %v, want the connection closed (EOF)", err)
					}
					break
				}
				var m fwdproto.Msg
				if err := fwdproto.Decode(h, p, &m); err != nil {
					t.Fatal(err)
				}
				codes = append(codes, m.Code)
			}
			if len(codes) != 2 || codes[0] != fwdproto.CodeOK || codes[1] != tt.want {
				t.Fatalf("replies %v, want [ok %v] then close", codes, tt.want)
			}
			// The daemon keeps serving the others.
			if err := good.Mkdir("still-"+strings.ReplaceAll(tt.name, " ", "-"), 0o755); err != nil {
				t.Fatalf("other client after a bad frame: %v", err)
			}
		})
	}
	// A request before hello is refused but the connection stays.
	nc, r := rawConn(t, d.Addr())
	nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpStat, ID: 9, Path: "."}))
	h, p, err := r.ReadFrame()
	var m fwdproto.Msg
	if err == nil {
		err = fwdproto.Decode(h, p, &m)
	}
	if err != nil || m.Code != fwdproto.CodeNoHello {
		t.Fatalf("request before hello: got %+v, %v; want CodeNoHello", m, err)
	}
}

// Shutting the daemon down under load loses no acknowledged write and
// corrupts nothing; a new daemon on the same root serves the same bytes.
func TestShutdownMidLoadAndRestart(t *testing.T) {
	dir := t.TempDir()
	be := fwdtest.Posix(t, dir)
	d := startDaemon(t, be, fwd.Options{Workers: 4})
	const writers, chunk = 6, 48 << 10
	acked := make([]int64, writers) // bytes acknowledged per writer, from the start of its file
	var wg sync.WaitGroup
	started := make(chan struct{}, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(d.Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			f, err := c.Create(fmt.Sprintf("w%d", w))
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; ; i++ {
				off := int64(i) * chunk
				if _, err := f.WriteAt(fwdtest.Content(uint64(w), off, chunk), off); err != nil {
					return // the daemon went away
				}
				acked[w] = off + chunk
				if i == 2 {
					started <- struct{}{}
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		<-started
	}
	d.Shutdown()
	wg.Wait()
	d2 := startDaemon(t, be, fwd.Options{})
	c := dial(t, d2.Addr())
	for w := 0; w < writers; w++ {
		f, err := c.Open(fmt.Sprintf("w%d", w))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, acked[w])
		if n, err := f.ReadAt(got, 0); int64(n) != acked[w] {
			t.Fatalf("writer %d: read %d of %d acknowledged bytes after restart: %v", w, n, acked[w], err)
		}
		if !bytes.Equal(got, fwdtest.Content(uint64(w), 0, int(acked[w]))) {
			t.Fatalf("writer %d: acknowledged bytes differ after restart", w)
		}
		// Whatever landed beyond the acknowledged prefix is whole chunks of the right bytes.
		fi, _ := f.Stat()
		rest := make([]byte, fi.Size-acked[w])
		f.ReadAt(rest, acked[w])
		want := fwdtest.Content(uint64(w), acked[w], len(rest))
		for i := range rest {
			if rest[i] != 0 && rest[i] != want[i] {
				t.Fatalf("writer %d: byte %d beyond the acknowledged prefix is corrupt", w, acked[w]+int64(i))
			}
		}
	}
}

func TestWindowObservationAndMetrics(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{Registerer: reg, Observe: true, Sched: sched.Config{Node: 1, Nodes: 2}})
	if d.Window() != time.Millisecond {
		t.Fatalf("default window %v, want 1ms", d.Window())
	}
	d.CloseInterval(time.Now()) // start a fresh interval
	c := dial(t, d.Addr())
	f, err := c.Create("obs")
	if err != nil {
		t.Fatal(err)
	}
	f.Process = 3
	for i := 0; i < 4; i++ {
		if _, err := f.WriteAt(make([]byte, 8<<10), int64(i)*(8<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.ApplyWindow(250 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyWindow(0); !errors.Is(err, fwd.ErrBadWindow) {
		t.Fatalf("ApplyWindow(0) = %v, want ErrBadWindow", err)
	}
	if _, err := f.ReadAt(make([]byte, 16<<10), 0); err != nil {
		t.Fatal(err)
	}
	o := d.CloseInterval(time.Now())
	want := struct {
		node, servers, clients, procs, files int
		reqs                                 int64
		min, max                             int64
		bytes                                int64
		op                                   rw.Op
		window                               time.Duration
		dist                                 float64
	}{1, 4, 1, 1, 1, 5, 8 << 10, 8 << 10, 48 << 10, rw.Write, 250 * time.Microsecond, 8192}
	// Sizes and distances are the majority operation's (the writes'); the
	// request count and the bytes are all of them.
	got := want
	got.node, got.servers, got.clients, got.procs, got.files = o.Node, o.DataServers, o.Clients, o.Processes, o.FileHandles
	got.reqs, got.min, got.max, got.bytes, got.op, got.window, got.dist = o.Requests, o.ReqMin, o.ReqMax, o.Bytes, o.Op, o.Window, o.OffsetDist
	if got != want {
		t.Fatalf("observation\n got %+v\nwant %+v", got, want)
	}
	if o.Interval <= 0 || o.Bandwidth <= 0 {
		t.Fatalf("interval %v bandwidth %v, want positive", o.Interval, o.Bandwidth)
	}
	if next := d.CloseInterval(time.Now()); !next.Idle() {
		t.Fatalf("second interval not idle: %+v", next)
	}
	expected := `
# HELP adaptio_fwd_window_seconds TWINS time window in force (0 for other schedulers).
# TYPE adaptio_fwd_window_seconds gauge
adaptio_fwd_window_seconds 0.00025
# HELP adaptio_fwd_bytes_total Bytes acknowledged to clients, by operation (rate() gives bandwidth).
# TYPE adaptio_fwd_bytes_total counter
adaptio_fwd_bytes_total{op="read"} 16384
adaptio_fwd_bytes_total{op="write"} 32768
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "adaptio_fwd_window_seconds", "adaptio_fwd_bytes_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "adaptio_fwd_queue_depth"); n != 4 {
		t.Fatalf("queue depth series: %d, want one per server (4)", n)
	}
	// Each request reached idle workers: one woke for it, and how late is
	// measured, in Wakes and in the histogram alike.
	w := d.Wakes()
	if w.Wakes == 0 || w.Mean() <= 0 {
		t.Fatalf("wake-ups %+v after 6 requests to idle workers, want them measured", w)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var observed uint64
	for _, mf := range mfs {
		if mf.GetName() == "adaptio_fwd_worker_wake_seconds" {
			observed = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if observed < uint64(w.Wakes) { // gathered later: a straggling wake-up may have added one
		t.Fatalf("wake-up histogram has %d samples, Wakes %d", observed, w.Wakes)
	}
	if err := d.SwitchScheduler("fifo"); err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyWindow(time.Millisecond); !errors.Is(err, fwd.ErrNotTunable) {
		t.Fatalf("ApplyWindow under fifo: got %v, want ErrNotTunable", err)
	}
	if _, err := f.ReadAt(make([]byte, 16<<10), 0); err != nil {
		t.Fatalf("read after switching scheduler: %v", err)
	}
}

func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "fwd.sock")
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{Listen: []string{"unix:" + sock, "127.0.0.1:0"}})
	if got := d.Addrs(); len(got) != 2 || got[0] != "unix:"+sock {
		t.Fatalf("Addrs = %v", got)
	}
	for _, a := range d.Addrs() {
		c := dial(t, a)
		if err := c.Mkdir("d-"+filepath.Base(strings.ReplaceAll(a, ":", "_")), 0o755); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
}

func TestNewValidates(t *testing.T) {
	be := fwdtest.Posix(t, t.TempDir())
	tests := []struct {
		name string
		opts fwd.Options
		want error
	}{
		{"no backend", fwd.Options{}, fwd.ErrNoBackend},
		{"unknown scheduler", fwd.Options{Backend: be, Scheduler: "nope"}, sched.ErrUnknownAlgo},
		{"negative workers", fwd.Options{Backend: be, Workers: -1}, fwd.ErrBadOptions},
		{"tiny frames", fwd.Options{Backend: be, MaxFrame: 100}, fwd.ErrBadOptions},
		{"bad listen", fwd.Options{Backend: be, Listen: []string{"unix:"}}, fwd.ErrBadListener},
		{"bad node", fwd.Options{Backend: be, Sched: sched.Config{Node: 3, Nodes: 2}}, sched.ErrBadConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := fwd.New(tt.opts); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// A client that pipelines requests and never reads the answers neither
// blocks the other clients nor Shutdown.
func TestClientNotReading(t *testing.T) {
	dir := t.TempDir()
	be := fwdtest.Posix(t, dir)
	d := startDaemon(t, be, fwd.Options{})
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var req []byte
	req = fwdproto.Append(req, &fwdproto.Msg{Op: fwdproto.OpHello, ID: 1, ClientID: 9})
	req = fwdproto.Append(req, &fwdproto.Msg{Op: fwdproto.OpOpen, ID: 2, Path: "big"})
	go func() {
		nc.Write(req)
		// The handle of the first file opened is 1. Ask for 1 MiB 1000 times.
		for i := 0; i < 1000; i++ {
			if _, err := nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpRead, ID: uint64(3 + i), Handle: 1, Length: 1 << 20})); err != nil {
				return
			}
		}
	}()
	good := dial(t, d.Addr())
	gf, err := good.Open("big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	for i := 0; i < 40; i++ { // more reads than workers: the pool must not be stuck
		if _, err := gf.ReadAt(buf, int64(i%4)*int64(len(buf))); err != nil {
			t.Fatalf("another client while one does not read: %v", err)
		}
	}
	done := make(chan struct{})
	go func() { d.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown blocked by a client that does not read")
	}
}

// gated holds every write until open is closed; held counts the bytes of
// the writes waiting.
type gated struct {
	backend.Backend
	open chan struct{}
	held *atomic.Int64
}

func (g gated) WriteAt(ctx context.Context, p string, server int, b []byte, off int64) (int, error) {
	g.held.Add(int64(len(b)))
	<-g.open
	return g.Backend.WriteAt(ctx, p, server, b, off)
}

// With an aggregating scheduler, contiguous pieces of different clients are
// executed as one backend access, and every byte still lands.
func TestAggregation(t *testing.T) {
	dir := t.TempDir()
	pb, err := posix.New(dir, layout.Layout{StripeSize: 1 << 20, StripeCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	be := gated{Backend: pb, open: make(chan struct{}), held: new(atomic.Int64)}
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(be.open) }) }
	reg := prometheus.NewRegistry()
	d := startDaemon(t, be, fwd.Options{Scheduler: "to-agg", Workers: 1, Registerer: reg})
	t.Cleanup(openGate) // runs before the daemon's Shutdown, even after a failure
	const writers, per, size = 8, 16, 4 << 10
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(d.Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			f, err := c.OpenFile("agg", fwdproto.OpenCreate, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			var iw sync.WaitGroup
			for i := 0; i < per; i++ { // strided, all outstanding at once: request i of writer w at (i*writers+w)*size
				iw.Add(1)
				go func() {
					defer iw.Done()
					off := int64(i*writers+w) * size
					if _, err := f.WriteAt(fwdtest.Content(1, off, size), off); err != nil {
						t.Error(err)
					}
				}()
			}
			iw.Wait()
		}()
	}
	// Wait until every request but those of the batch the worker holds (the
	// requests that had arrived when it was dispatched) is queued.
	deadline := time.Now().Add(10 * time.Second)
	for fwdtest.Metric(t, reg, "adaptio_fwd_queue_depth")+float64(be.held.Load()/size) < writers*per {
		if time.Now().After(deadline) {
			t.Fatalf("queue depth %v + %d held, want %d", fwdtest.Metric(t, reg, "adaptio_fwd_queue_depth"), be.held.Load()/size, writers*per)
		}
		time.Sleep(time.Millisecond)
	}
	openGate()
	wg.Wait()
	got, err := os.ReadFile(filepath.Join(dir, "agg"))
	if err != nil || !bytes.Equal(got, fwdtest.Content(1, 0, writers*per*size)) {
		t.Fatalf("file after aggregated writes: %d bytes, %v; exact %v", len(got), err, bytes.Equal(got, fwdtest.Content(1, 0, writers*per*size)))
	}
	// 127 queued 4 KiB requests covering one range with one hole (the
	// request the worker held), at most 16 per batch (MaxBatch): at least 9
	// batches; fragments around the hole and the oldest request's position
	// add a few, far fewer than one per request.
	batches := fwdtest.Metric(t, reg, "adaptio_fwd_batches_total")
	if batches < 9 || batches > 20 {
		t.Fatalf("%v batches for %d requests, want 9..20 (aggregated by up to 16)", batches, writers*per)
	}
}

// Clients opening the same path get the same handle while it is open; the
// daemon forgets a path once every open is closed or its connection gone.
func TestSharedHandles(t *testing.T) {
	d := startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{})
	c1, c2 := dial(t, d.Addr()), dial(t, d.Addr())
	f1, err := c1.Create("s")
	if err != nil {
		t.Fatal(err)
	}
	f2, err := c2.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	if f1.Handle() != f2.Handle() {
		t.Fatalf("handles %d and %d for one path, want equal", f1.Handle(), f2.Handle())
	}
	if _, err := c2.Open("s"); err != nil { // a second open on c2, left open
		t.Fatal(err)
	}
	f1.Close()
	f2.Close()
	if n := d.OpenFiles(); n != 1 {
		t.Fatalf("%d open paths with one open left, want 1", n)
	}
	c2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for d.OpenFiles() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d open paths after the last connection closed, want 0", d.OpenFiles())
		}
		time.Sleep(time.Millisecond)
	}
	f3, err := c1.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	if f3.Handle() == f1.Handle() {
		t.Fatal("a handle was reused")
	}
}

// Batches of a file with a batch executing are held back only while other
// work is dispatchable: one client's request striped over four data servers
// still runs on four workers at once.
func TestOneFileStillSpreadsOverServers(t *testing.T) {
	be := gated{Backend: fwdtest.Posix(t, t.TempDir()), open: make(chan struct{}), held: new(atomic.Int64)}
	var opened sync.Once
	openGate := func() { opened.Do(func() { close(be.open) }) }
	d := startDaemon(t, be, fwd.Options{Scheduler: "fifo", Workers: 4})
	t.Cleanup(openGate)
	c := dial(t, d.Addr())
	f, err := c.Create("one")
	if err != nil {
		t.Fatal(err)
	}
	const n = 16 << 10 // four 4 KiB stripes, one per data server
	errc := make(chan error, 1)
	go func() { _, err := f.WriteAt(fwdtest.Content(2, 0, n), 0); errc <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for be.held.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes reached the backend at once, want all four pieces in parallel", be.held.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	openGate()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// slowFile holds writes to one file until open is closed; other files go
// straight through.
type slowFile struct {
	backend.Backend
	name    string
	open    chan struct{}
	entered chan struct{} // receives once a write of the file is held
}

func (s slowFile) WriteAt(ctx context.Context, p string, server int, b []byte, off int64) (int, error) {
	if path.Base(p) == s.name {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.open
	}
	return s.Backend.WriteAt(ctx, p, server, b, off)
}

// While a batch executes, the daemon's poller stands down and workers take
// ring submissions between batches; a worker stuck on a long batch takes
// none, so the poller must still sweep: another client's request through
// the rings is served while the long one is still on the backend.
func TestRingServedBehindLongBatch(t *testing.T) {
	be := slowFile{Backend: fwdtest.Posix(t, t.TempDir()), name: "slow", open: make(chan struct{}), entered: make(chan struct{}, 1)}
	d := startDaemon(t, be, fwd.Options{Listen: []string{"unix:" + filepath.Join(t.TempDir(), "fwd.sock")}, Scheduler: "fifo"})
	dial := func() (*client.Client, *client.Buffer) {
		c, err := client.Dial(d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		buf, err := c.AllocBuffer(4 << 10)
		if err != nil {
			t.Fatal(err)
		}
		if !buf.Shared() {
			t.Skip("no shared region on this system")
		}
		return c, buf
	}
	// The fast client's ring is known to the poller first: once awake, the
	// poller marks it busy, and its client rings no doorbell.
	fastC, fastBuf := dial()
	fast, err := fastC.Create("fast")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fast.WriteBuffer(fastBuf, 0); err != nil {
		t.Fatal(err)
	}
	slowC, slowBuf := dial()
	slow, err := slowC.Create("slow")
	if err != nil {
		t.Fatal(err)
	}
	slowDone := make(chan error, 1)
	go func() { _, err := slow.WriteBuffer(slowBuf, 0); slowDone <- err }()
	select {
	case <-be.entered: // the slow write is on the backend
	case <-time.After(10 * time.Second):
		t.Fatal("the slow write never reached the backend")
	}
	copy(fastBuf.Bytes(), "served")
	fastDone := make(chan error, 1)
	go func() {
		for i := range 20 {
			if _, err := fast.WriteBuffer(fastBuf, int64(i)<<12); err != nil {
				fastDone <- err
				return
			}
		}
		fastDone <- nil
	}()
	select {
	case err := <-fastDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(be.open)
		t.Fatal("requests behind a long batch were not served within 10 s")
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow write finished before it was let through: %v", err)
	default:
	}
	close(be.open)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
}

// Observation switched on at run time counts from then on: bytes moved
// while it was off belong to no interval.
func TestSetObserveStartsCounting(t *testing.T) {
	d := startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{})
	c := dial(t, d.Addr())
	f, err := c.Create("obs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 24<<10), 0); err != nil { // observation off
		t.Fatal(err)
	}
	d.SetObserve(true)
	if _, err := f.WriteAt(make([]byte, 8<<10), 0); err != nil {
		t.Fatal(err)
	}
	if o := d.CloseInterval(time.Now()); o.Bytes != 8<<10 || o.Requests != 1 {
		t.Fatalf("interval after SetObserve(true): %d bytes in %d requests, want %d in 1", o.Bytes, o.Requests, 8<<10)
	}
	if o := d.CloseInterval(time.Now()); o.Bytes != 0 || !o.Idle() {
		t.Fatalf("idle interval: %d bytes, idle %v", o.Bytes, o.Idle())
	}
}

// TestApplyPlanFollowsTheRequests checks the daemon's side of a decision's
// plan: the window of the direction its requests take, switched as they
// turn, and each interval credited with its direction's window.
func TestApplyPlanFollowsTheRequests(t *testing.T) {
	d := startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{Observe: true, Sched: sched.Config{Node: 0, Nodes: 2}})
	c := dial(t, d.Addr())
	f, err := c.Create("plan")
	if err != nil {
		t.Fatal(err)
	}
	const n = 2 * ionode.FollowAfter
	run := func(write bool) {
		t.Helper()
		buf := make([]byte, 8<<10)
		for i := range n {
			if write {
				_, err = f.WriteAt(buf, int64(i)*(8<<10))
			} else {
				_, err = f.ReadAt(buf, int64(i)*(8<<10))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.ApplyPlan(time.Millisecond, 250*time.Microsecond, 8*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyPlan(time.Millisecond, -1, 0); !errors.Is(err, fwd.ErrBadWindow) {
		t.Fatalf("negative plan window: %v, want ErrBadWindow", err)
	}
	run(true)
	if w := d.Window(); w != time.Millisecond {
		t.Fatalf("window %v after the first writes, want the decision's 1ms (no turn yet)", w)
	}
	d.CloseInterval(time.Now())
	run(false)
	if w := d.Window(); w != 250*time.Microsecond {
		t.Fatalf("window %v after %d reads, want the plan's 250µs", w, n)
	}
	o := d.CloseInterval(time.Now())
	if o.Window != 250*time.Microsecond {
		t.Fatalf("read interval credited to %v, want 250µs", o.Window)
	}
	// The reads' own bytes and span: access.Accumulator.Served.
	if o.OpBytes != n*8<<10 || o.OpSpan <= 0 || o.OpSpan > o.Interval || o.OpBandwidth() < o.Bandwidth {
		t.Fatalf("read interval: %d bytes over %v (interval %v, %.0f B/s), want %d over a span within it", o.OpBytes, o.OpSpan, o.Interval, o.Bandwidth, n*8<<10)
	}
	run(true)
	if w := d.Window(); w != 8*time.Millisecond {
		t.Fatalf("window %v after turning back to writes, want the plan's 8ms", w)
	}
	// A plain window ends the plan.
	if err := d.ApplyWindow(2 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	run(false)
	if w := d.Window(); w != 2*time.Millisecond {
		t.Fatalf("window %v after ApplyWindow and reads, want 2ms", w)
	}
}
