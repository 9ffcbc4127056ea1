package pfs_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/backendtest"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/pfs"
)

// BenchmarkBackend measures backend throughput without disk delays: 16
// goroutines each writing (then reading) whole requests through Split,
// over a 64 MiB file, for the POSIX backend (pwrite/pread on a local
// directory) and the emulated PFS (4 data servers on loopback TCP).
func BenchmarkBackend(b *testing.B) {
	const fileSize = 64 << 20
	backends := []struct {
		name string
		open func(b *testing.B) backend.Backend
	}{
		{"posix", func(b *testing.B) backend.Backend {
			be, err := posix.New(b.TempDir(), layout.Default(4))
			if err != nil {
				b.Fatal(err)
			}
			return be
		}},
		{"pfs", func(b *testing.B) backend.Backend {
			c, err := pfs.NewCluster(pfs.ClusterOptions{Servers: 4, Dir: b.TempDir(), Disk: "none"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Shutdown)
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			be, err := c.Backend()
			if err != nil {
				b.Fatal(err)
			}
			return be
		}},
	}
	for _, bk := range backends {
		for _, size := range []int{1 << 20, 32 << 10} {
			for _, op := range []string{"write", "read"} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", bk.name, op, size>>10), func(b *testing.B) {
					ctx := context.Background()
					be := bk.open(b)
					defer be.Close()
					if err := be.Create(ctx, "bench.dat", 0o644); err != nil {
						b.Fatal(err)
					}
					if err := be.Truncate(ctx, "bench.dat", fileSize); err != nil {
						b.Fatal(err)
					}
					var next atomic.Int64
					b.SetBytes(int64(size))
					b.SetParallelism(8) // 16 goroutines on 2 cores
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						buf := make([]byte, size)
						for pb.Next() {
							off := (next.Add(1) - 1) * int64(size) % fileSize
							var err error
							if op == "write" {
								err = backendtest.WriteAll(ctx, be, "bench.dat", buf, off)
							} else {
								_, err = readInto(ctx, be, buf, off)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
			}
		}
	}
}

func readInto(ctx context.Context, be backend.Backend, buf []byte, off int64) (int, error) {
	var pieces [32]layout.Piece
	ps, err := be.Split(pieces[:0], "bench.dat", off, int64(len(buf)))
	if err != nil {
		return 0, err
	}
	total := 0
	for _, p := range ps {
		n, err := be.ReadAt(ctx, "bench.dat", p.Server, buf[p.Offset-off:][:p.Length], p.Offset)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// BenchmarkHDDContention shows the modelled disks acting in wall-clock
// time: one data server with the HDD model, 64 KiB writes from 1 stream
// (sequential on the disk) and from 8 streams to 8 files at once (the
// device serves them interleaved, seeking between file regions).
func BenchmarkHDDContention(b *testing.B) {
	for _, streams := range []int{1, 8} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			ctx := context.Background()
			c, err := pfs.NewCluster(pfs.ClusterOptions{Servers: 1, Dir: b.TempDir(), Disk: "hdd"})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Shutdown()
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			be, err := c.Backend()
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			for f := range streams {
				if err := be.Create(ctx, fmt.Sprint("f", f), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			const piece = 64 << 10
			b.SetBytes(piece)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for f := range streams {
				wg.Go(func() {
					buf := make([]byte, piece)
					for k := int64(0); ; k++ {
						if next.Add(1) > int64(b.N) {
							return
						}
						if _, err := be.WriteAt(ctx, fmt.Sprint("f", f), 0, buf, k*piece); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			st := c.Stats()[0]
			b.ReportMetric(float64(st.Busy.Microseconds())/float64(b.N), "model-us/op")
		})
	}
}
