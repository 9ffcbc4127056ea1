package fwd_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

// memfd returns a memfd of size bytes and its mapping; sealed adds
// F_SEAL_SHRINK as the daemon requires.
func memfd(t testing.TB, size int, sealed bool) (int, []byte) {
	t.Helper()
	fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	if sealed {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
			t.Fatal(err)
		}
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem); unix.Close(fd) })
	return fd, mem
}

// rawUnix is a hand-driven Unix connection that has said hello.
type rawUnix struct {
	t  testing.TB
	uc *net.UnixConn
	r  *fwdproto.Reader
	id uint64
}

func dialRawUnix(t testing.TB, addr string) *rawUnix {
	t.Helper()
	nc, err := net.Dial("unix", addr[len("unix:"):])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	ru := &rawUnix{t: t, uc: nc.(*net.UnixConn), r: fwdproto.NewReader(nc, 0)}
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpHello, ClientID: 9}, -1); m.Code != fwdproto.CodeOK {
		t.Fatalf("hello: %+v", m)
	}
	return ru
}

// do sends m (with descriptor fd when fd >= 0) and returns the response.
func (ru *rawUnix) do(m *fwdproto.Msg, fd int) fwdproto.Msg {
	ru.t.Helper()
	ru.id++
	m.ID = ru.id
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if _, _, err := ru.uc.WriteMsgUnix(fwdproto.Append(nil, m), oob, nil); err != nil {
		ru.t.Fatal(err)
	}
	h, p, err := ru.r.ReadFrame()
	if err != nil {
		ru.t.Fatalf("%s: %v", m.Op, err)
	}
	var resp fwdproto.Msg
	if err := fwdproto.Decode(h, p, &resp); err != nil || resp.ID != m.ID {
		ru.t.Fatalf("%s: response %+v, %v", m.Op, resp, err)
	}
	return resp
}

// The daemon maps only sealed memfds, once per connection, and refuses
// every (offset, length) that leaves the region; the connection stays
// usable and in-range requests move the right bytes.
func TestShmBoundsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{Listen: []string{"unix:" + filepath.Join(t.TempDir(), "s")}})
	const size = 64 << 10

	ru := dialRawUnix(t, d.Addr())
	open := ru.do(&fwdproto.Msg{Op: fwdproto.OpOpen, Flags: fwdproto.OpenCreate, Path: "f"}, -1)
	if open.Code != fwdproto.CodeOK {
		t.Fatalf("open: %+v", open)
	}
	h := open.Handle
	// Before any region: shared-memory requests are refused.
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpWriteShm, Handle: h, Length: 1}, -1); m.Code != fwdproto.CodeBadArgument {
		t.Fatalf("write-shm without a region: %+v", m)
	}
	unsealed, _ := memfd(t, size, false)
	fd, mem := memfd(t, size, true)
	refusals := []struct {
		name string
		m    fwdproto.Msg
		fd   int
	}{
		{"no descriptor", fwdproto.Msg{Op: fwdproto.OpShm, Length: size}, -1},
		{"not sealed", fwdproto.Msg{Op: fwdproto.OpShm, Length: size}, unsealed},
		{"larger than the memfd", fwdproto.Msg{Op: fwdproto.OpShm, Length: size + 1}, fd},
		{"not a memfd", fwdproto.Msg{Op: fwdproto.OpShm, Length: 1}, int(mustOpen(t, filepath.Join(dir, "f")).Fd())},
		{"zero size", fwdproto.Msg{Op: fwdproto.OpShm, Length: 0}, fd},
	}
	for _, tt := range refusals {
		if m := ru.do(&tt.m, tt.fd); m.Code != fwdproto.CodeBadArgument {
			t.Fatalf("%s: got %+v, want bad argument", tt.name, m)
		}
	}
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpShm, Length: size}, fd); m.Code != fwdproto.CodeOK {
		t.Fatalf("shm: %+v", m)
	}
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpShm, Length: size}, fd); m.Code != fwdproto.CodeBadArgument {
		t.Fatalf("second region: got %+v, want bad argument", m)
	}
	outside := []struct {
		off uint64
		n   int64
	}{
		{size, 1}, {size - 1, 2}, {0, size + 1}, {1<<64 - 1, 2}, {1 << 63, 1 << 62}, {size + 1, 0},
	}
	for _, o := range outside {
		for _, op := range []fwdproto.Op{fwdproto.OpWriteShm, fwdproto.OpReadShm} {
			if m := ru.do(&fwdproto.Msg{Op: op, Handle: h, ShmOff: o.off, Length: o.n}, -1); m.Code != fwdproto.CodeBadArgument {
				t.Fatalf("%s [%d, +%d): got %+v, want bad argument", op, o.off, o.n, m)
			}
		}
	}
	// In range: the bytes go from the region to the file and back.
	copy(mem[size-5:], "hello")
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpWriteShm, Handle: h, Offset: 3, ShmOff: size - 5, Length: 5}, -1); m.Code != fwdproto.CodeOK || m.N != 5 {
		t.Fatalf("write-shm: %+v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(b, []byte("\x00\x00\x00hello")) {
		t.Fatalf("file holds %q", b)
	}
	if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpReadShm, Handle: h, Offset: 1, ShmOff: 0, Length: 100}, -1); m.Code != fwdproto.CodeOK || m.N != 7 {
		t.Fatalf("read-shm: %+v", m)
	}
	if got := string(mem[:7]); got != "\x00\x00hello" {
		t.Fatalf("region holds %q after read-shm", got)
	}
}

func mustOpen(t *testing.T, p string) *os.File {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// FuzzDaemonShm sends arbitrary bytes, in two writes, on a Unix connection
// that has said hello, offered a 128 KiB region and opened a file (handle
// 1 on a fresh daemon): the daemon must answer or close, never touch
// memory outside the region (it would crash), and keep serving.
func FuzzDaemonShm(f *testing.F) {
	for _, m := range []fwdproto.Msg{
		{Op: fwdproto.OpWriteShm, ID: 3, Handle: 1, Offset: 10, ShmOff: 0, Length: 4096},
		{Op: fwdproto.OpReadShm, ID: 4, Handle: 1, Offset: 0, ShmOff: 128<<10 - 10, Length: 10},
		{Op: fwdproto.OpReadShm, ID: 5, Handle: 1, Offset: 0, ShmOff: 128 << 10, Length: 1},
		{Op: fwdproto.OpWriteShm, ID: 6, Handle: 1, Offset: 1 << 40, ShmOff: 1<<64 - 1, Length: 2},
		{Op: fwdproto.OpShm, ID: 7, Length: 1 << 20},
	} {
		f.Add(fwdproto.Append(nil, &m))
	}
	// One daemon for the whole run.
	d := startDaemon(f, fwdtest.Posix(f, f.TempDir()), fwd.Options{MaxFrame: 1 << 20,
		Listen: []string{"unix:" + filepath.Join(f.TempDir(), "s")}})
	addr := d.Addr()
	f.Fuzz(func(t *testing.T, data []byte) {
		ru := dialRawUnix(t, addr)
		fd, _ := memfd(t, 128<<10, true)
		if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpShm, Length: 128 << 10}, fd); m.Code != fwdproto.CodeOK {
			t.Fatalf("shm: %+v", m)
		}
		if m := ru.do(&fwdproto.Msg{Op: fwdproto.OpOpen, Flags: fwdproto.OpenCreate, Path: "fz"}, -1); m.Code != fwdproto.CodeOK {
			t.Fatalf("open: %+v", m)
		}
		mid := len(data) / 2
		ru.uc.Write(data[:mid])
		ru.uc.Write(data[mid:])
		ru.uc.CloseWrite()
		if _, err := io.Copy(io.Discard, ru.uc); err != nil {
			t.Fatalf("daemon did not close the connection after the client's EOF: %v", err)
		}
		c, err := client.Dial(addr)
		if err != nil {
			t.Fatalf("daemon stopped accepting: %v", err)
		}
		defer c.Close()
		if _, err := c.Stat("."); err != nil {
			t.Fatalf("daemon stopped serving: %v", err)
		}
	})
}
