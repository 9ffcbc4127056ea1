package posix_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
)

// BenchmarkReadAt compares the backend's ReadAt (layout check, confined
// handle cache, pread) with pread on an open *os.File, 32 KiB pieces from 16
// goroutines: the backend's own overhead.
func BenchmarkReadAt(b *testing.B) {
	const piece, size = 32 << 10, 16 << 20
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, size), 0o644); err != nil {
		b.Fatal(err)
	}
	be, err := posix.New(dir, layout.Default(4))
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	f, err := os.Open(filepath.Join(dir, "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	run := func(b *testing.B, read func(p []byte, off int64) error) {
		var next atomic.Int64
		b.SetBytes(piece)
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			p := make([]byte, piece)
			for pb.Next() {
				off := (next.Add(1) * piece) % size
				if err := read(p, off); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("direct", func(b *testing.B) {
		run(b, func(p []byte, off int64) error { _, err := f.ReadAt(p, off); return err })
	})
	b.Run("backend", func(b *testing.B) {
		ctx := context.Background()
		run(b, func(p []byte, off int64) error {
			_, err := be.ReadAt(ctx, "f", int(off/(64<<10)%4), p, off)
			return err
		})
	})
}
