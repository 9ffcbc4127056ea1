package rootfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{"", ".", false},
		{"/", ".", false},
		{"a/b", "a/b", false},
		{"a//./b/", "a/b", false},
		{"/etc/passwd", "", true},
		{"a/../b", "", true},
		{"..", "", true},
		{`a\b`, "", true},
		{"a\x00b", "", true},
	}
	for _, tt := range tests {
		got, err := rootfs.Clean(tt.in)
		if tt.bad != errors.Is(err, backend.ErrPath) || got != tt.want {
			t.Errorf("Clean(%q): got %q, %v; want %q, refused %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

// TestEvictionUnderConcurrency uses many more files than cached handles:
// evicted handles close only once no operation uses them.
func TestEvictionUnderConcurrency(t *testing.T) {
	fsys, err := rootfs.Open(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	const files, workers, rounds = 7, 6, 50
	for f := range files {
		if err := fsys.Create(fmt.Sprint("f", f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			buf := []byte{byte(w)}
			for r := range rounds {
				name := fmt.Sprint("f", (w+r)%files)
				if _, err := fsys.WriteAt(name, buf, int64(w)); err != nil {
					t.Error(err)
					return
				}
				got := make([]byte, 1)
				if _, err := fsys.ReadAt(name, got, int64(w)); err != nil || got[0] != byte(w) {
					t.Errorf("%s byte %d: got %v, %v; want %d", name, w, got, err, w)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := fsys.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.ReadAt("f0", make([]byte, 1), 0); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}

func BenchmarkClean(b *testing.B) {
	for b.Loop() {
		if _, err := rootfs.Clean("run/42/out.dat"); err != nil {
			b.Fatal(err)
		}
	}
}

// Describing a symbolic link neither follows nor reads it: a link's atime
// set before its mtime (which relatime would update on a read) reads back
// as set, however often the link is described or listed.
func TestStatLeavesLinkAtime(t *testing.T) {
	fsys, err := rootfs.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if err := fsys.Create("f", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	at, mt := time.Unix(1960000000, 0), time.Unix(1970000000, 0)
	if err := fsys.Setattr("l", backend.Attr{Atime: &at, Mtime: &mt}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		fi, err := fsys.Stat("l")
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode&fs.ModeSymlink == 0 || !fi.Atime.Equal(at) || !fi.ModTime.Equal(mt) {
			t.Fatalf("Stat %d: mode %v, atime %v, mtime %v; want a link with atime %v, mtime %v", i, fi.Mode, fi.Atime, fi.ModTime, at, mt)
		}
		if _, err := fsys.ReadDir("."); err != nil {
			t.Fatal(err)
		}
	}
}

// A link made on the backend directly that leaves the root is described
// (lstat) and listed, but Readlink refuses it as following it is refused;
// links inside the root, dangling or not, read.
func TestLinkLeavingRoot(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	fsys, err := rootfs.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for name, target := range map[string]string{"out": outside, "up": "../x", "in": "f", "dangling": "none"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.Create("f", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, target string
		refused      bool
	}{
		{"out", "", true},
		{"up", "", true},
		{"in", "f", false},
		{"dangling", "none", false},
	} {
		if fi, err := fsys.Stat(tt.name); err != nil || fi.Mode&fs.ModeSymlink == 0 {
			t.Errorf("Stat(%s): %v, %v; want a link", tt.name, fi.Mode, err)
		}
		got, err := fsys.Readlink(tt.name)
		if tt.refused != errors.Is(err, backend.ErrPath) || got != tt.target {
			t.Errorf("Readlink(%s): got %q, %v; want %q, refused %v", tt.name, got, err, tt.target, tt.refused)
		}
	}
	if _, err := fsys.Stat("out/x"); !errors.Is(err, backend.ErrPath) {
		t.Errorf("Stat through a link leaving the root: got %v, want ErrPath", err)
	}
	ents, err := fsys.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 5 {
		t.Errorf("ReadDir: %d entries, want the 4 links and f", len(ents))
	}
}
