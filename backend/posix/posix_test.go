package posix_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/backendtest"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
)

func newBackend(t *testing.T, dir string, l layout.Layout) *posix.Backend {
	t.Helper()
	b, err := posix.New(dir, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Harness {
		dir := t.TempDir()
		return backendtest.Harness{
			Backend: newBackend(t, dir, layout.Default(4)),
			Symlink: func(name, target string) error { return os.Symlink(target, filepath.Join(dir, name)) },
		}
	})
}

func TestPerDirectoryLayout(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir, layout.Default(4))
	ctx := context.Background()
	for _, d := range []string{"wide", "narrow", "narrow/deeper"} {
		if err := b.Mkdir(ctx, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetLayout("narrow", layout.Layout{StripeSize: 1 << 20, StripeCount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wide", layout.File), []byte("# two servers\nstripe_size = 32K\nstripe_count=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		off, n     int64
		wantPieces int
		wantSrvs   int
	}{
		{"top.dat", 0, 1 << 20, 16, 4},        // default 64 KiB x 4
		{"narrow/deeper/f", 0, 4 << 20, 1, 1}, // inherited: one server, merged
		{"wide/f", 0, 256 << 10, 8, 2},        // 32 KiB x 2
		{"wide/f", 16 << 10, 32 << 10, 2, 2},  // straddles a stripe
		{"narrow/f", (1 << 20) - 1, 2, 1, 1},  // count 1 never splits
	}
	for _, tt := range tests {
		pieces, err := b.Split(nil, tt.path, tt.off, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		srvs := map[int]bool{}
		for _, p := range pieces {
			srvs[p.Server] = true
		}
		if len(pieces) != tt.wantPieces || len(srvs) != tt.wantSrvs {
			t.Errorf("Split(%s, %d, %d): got %d pieces on %d servers, want %d on %d", tt.path, tt.off, tt.n, len(pieces), len(srvs), tt.wantPieces, tt.wantSrvs)
		}
	}
	ents, err := b.ReadDir(ctx, "wide")
	if err != nil || len(ents) != 0 {
		t.Errorf("ReadDir(wide): got %v, %v; want no entries (layout file hidden)", ents, err)
	}
	if err := b.SetLayout("wide", layout.Layout{StripeSize: 1, StripeCount: 5}); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("SetLayout with 5 of 4 servers: got %v, want ErrBadArgument", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wide", layout.File), []byte("stripe_size = -3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b2 := newBackend(t, dir, layout.Default(4))
	if _, err := b2.Split(nil, "wide/f", 0, 10); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("Split under a bad layout file: got %v, want ErrBadArgument", err)
	}
}

// ReadDir lists symbolic links as links, one leaving the root too (it is
// neither followed nor read: Readlink refuses it).
func TestReadDirListsLinks(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir, layout.Default(2))
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("in", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	ents, err := b.ReadDir(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if want := []string{"alias", "in", "out"}; !slices.Equal(names, want) {
		t.Errorf("ReadDir: got %v, want %v", names, want)
	}
	if _, err := b.Readlink(context.Background(), "out"); !errors.Is(err, backend.ErrPath) {
		t.Errorf("Readlink of the link leaving the root: got %v, want ErrPath", err)
	}
}

// A span crosses data servers in one call and lands where the per-server
// pieces read it back; paths leaving the root and negative offsets are
// refused as for pieces.
func TestSpan(t *testing.T) {
	dir := t.TempDir()
	b := newBackend(t, dir, layout.Layout{StripeSize: 4096, StripeCount: 4})
	ctx := context.Background()
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 5*4096+100)
	for i := range data {
		data[i] = byte(i * 13)
	}
	const off = 4096 + 7
	if n, err := b.WriteSpan(ctx, "f", data, off); err != nil || n != len(data) {
		t.Fatalf("WriteSpan = %d, %v", n, err)
	}
	pieces, err := b.Split(nil, "f", off, int64(len(data)))
	if err != nil || len(pieces) < 5 {
		t.Fatalf("Split: %d pieces, %v", len(pieces), err)
	}
	got := make([]byte, 0, len(data))
	for _, p := range pieces {
		buf := make([]byte, p.Length)
		if n, err := b.ReadAt(ctx, "f", p.Server, buf, p.Offset); err != nil || n != len(buf) {
			t.Fatalf("ReadAt piece %+v = %d, %v", p, n, err)
		}
		got = append(got, buf...)
	}
	if !slices.Equal(got, data) {
		t.Fatal("pieces read back differ from the span written")
	}
	back := make([]byte, len(data)+50)
	if n, err := b.ReadSpan(ctx, "f", back, off); err != nil || n != len(data) || !slices.Equal(back[:n], data) {
		t.Fatalf("ReadSpan past the end = %d, %v; want %d bytes, no error", n, err, len(data))
	}
	if _, err := b.WriteSpan(ctx, "../escape", data, 0); !errors.Is(err, backend.ErrPath) {
		t.Errorf("WriteSpan outside the root: %v, want ErrPath", err)
	}
	if _, err := b.ReadSpan(ctx, "f", back, -1); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("ReadSpan at -1: %v, want ErrBadArgument", err)
	}
}

// A directory on tmpfs is local; the statfs types of network and parallel
// file systems and FUSE mounts are not.
func TestLocal(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("no /dev/shm (tmpfs) on this machine")
	}
	dir, err := os.MkdirTemp("/dev/shm", "adaptio-local-")
	if err != nil {
		t.Skipf("cannot create a directory on /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if b := newBackend(t, dir, layout.Layout{}); !b.Local() {
		t.Error("a directory on tmpfs: Local() = false")
	}
	for fsType, want := range map[int64]bool{
		0x01021994: true,  // tmpfs
		0xef53:     true,  // ext4
		0x58465342: true,  // XFS
		0x0bd00bd0: false, // Lustre
		0x47504653: false, // GPFS
		0x19830326: false, // BeeGFS
		0x6969:     false, // NFS
		0x65735546: false, // FUSE
		0:          false,
	} {
		if got := posix.LocalFS(fsType); got != want {
			t.Errorf("LocalFS(%#x) = %v, want %v", fsType, got, want)
		}
	}
}
