package rootfs_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

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
