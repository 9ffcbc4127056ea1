package fusemount_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

// fioBandwidth runs one fio job in dir and returns its bandwidth in MiB/s.
func fioBandwidth(b *testing.B, fio, dir, rw, bs string) float64 {
	b.Helper()
	args := []string{"--name=bw", "--directory=" + dir, "--rw=" + rw, "--bs=" + bs, "--size=64m",
		"--numjobs=4", "--ioengine=psync", "--group_reporting", "--output-format=json"}
	out, err := exec.Command(fio, args...).Output()
	if err != nil {
		b.Fatalf("fio %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var res struct {
		Jobs []struct {
			Read  struct{ BW float64 } `json:"read"`  // KiB/s
			Write struct{ BW float64 } `json:"write"` // KiB/s
		} `json:"jobs"`
	}
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:] // fio may print notes before the JSON
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) == 0 {
		b.Fatalf("fio output: %v\n%s", err, out)
	}
	if strings.Contains(rw, "read") {
		return res.Jobs[0].Read.BW / 1024
	}
	return res.Jobs[0].Write.BW / 1024
}

// BenchmarkFioMountVsDirect runs the same fio jobs (4 jobs of 64 MiB, psync,
// over files laid out beforehand) through the FUSE mount of a forwarder and
// directly on the backend's directory (tmpfs when available), and reports
// both bandwidths and their ratio, for FIFO and for TWINS (1 ms window, 4
// data servers: a request waits for its server's window). It also runs them
// through go-fuse's loopback file system mounted with the same options over
// a directory beside them: FUSE's own cost, the ceiling of the mount's
// ratio (loopback/direct), and the share of it the forwarder keeps
// (mount/loopback).
func BenchmarkFioMountVsDirect(b *testing.B) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		b.Skip("fio not installed")
	}
	for _, bs := range []string{"1m", "32k"} {
		for _, scheduler := range []string{"fifo", "twins"} {
			for _, rw := range []string{"write", "read"} {
				b.Run("bs="+bs+"/sched="+scheduler+"/rw="+rw, func(b *testing.B) {
					mnt, root := mountedWith(b, fwdtest.MemDir(b), fwd.Options{Scheduler: scheduler})
					direct := filepath.Join(root, "direct")
					viaMount := filepath.Join(mnt, "fwd")
					viaLoopback := filepath.Join(loopbackMount(b, root), "loopback")
					for _, d := range []string{direct, viaMount, viaLoopback} {
						if err := os.MkdirAll(d, 0o755); err != nil {
							b.Fatal(err)
						}
						// Lay the files out first: a write run then
						// overwrites, as IOR's repetitions do, instead
						// of timing the file system's page allocation
						// (in a virtual machine, first-touch memory
						// costs vary from run to run).
						fioBandwidth(b, fio, d, "write", "1m")
					}
					var sumDirect, sumMount, sumLoopback float64
					for i := 0; i < b.N; i++ {
						sumDirect += fioBandwidth(b, fio, direct, rw, bs)
						sumMount += fioBandwidth(b, fio, viaMount, rw, bs)
						sumLoopback += fioBandwidth(b, fio, viaLoopback, rw, bs)
					}
					b.ReportMetric(sumDirect/float64(b.N), "direct-MiB/s")
					b.ReportMetric(sumMount/float64(b.N), "mount-MiB/s")
					b.ReportMetric(sumMount/sumDirect, "mount/direct")
					b.ReportMetric(sumLoopback/sumDirect, "loopback/direct")
					b.ReportMetric(sumMount/sumLoopback, "mount/loopback")
				})
			}
		}
	}
}

// loopbackMount mounts go-fuse's loopback file system of dir, with the
// adaptio mount's options (1 MiB requests, 1 s entry and attribute caches,
// no splice, direct I/O) and without passthrough, and returns the mount
// point.
func loopbackMount(b *testing.B, dir string) string {
	b.Helper()
	lr, err := gofs.NewLoopbackRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	root := &servedLoopback{lr.(*gofs.LoopbackNode)}
	mnt := b.TempDir()
	to, neg := time.Second, time.Duration(0)
	srv, err := gofs.Mount(mnt, root, &gofs.Options{
		EntryTimeout: &to, AttrTimeout: &to, NegativeTimeout: &neg,
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "loopback", Name: "loopback",
			MaxWrite: 1 << 20, DisableXAttrs: true, DisableSplice: true},
	})
	if err != nil {
		b.Fatalf("loopback mount: %v", err)
	}
	b.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			b.Errorf("loopback unmount: %v", err)
		}
	})
	return mnt
}

// servedLoopback is go-fuse's loopback node with its files opened as the
// adaptio mount opens them, for direct I/O (every read and write reaches the
// server as issued, no page cache), and without a passthrough descriptor:
// with one (go-fuse's loopback files offer it, and Linux 6.9 and later take
// it) the kernel moves the data itself and the server never sees a read or
// write, which measures no FUSE cost.
type servedLoopback struct{ *gofs.LoopbackNode }

func (n *servedLoopback) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &servedLoopback{ops.(*gofs.LoopbackNode)}
}

func (n *servedLoopback) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return served(fh), fuseFlags | fuse.FOPEN_DIRECT_IO, errno
}

func (n *servedLoopback) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, served(fh), fuseFlags | fuse.FOPEN_DIRECT_IO, errno
}

// loopbackFile is what fio's jobs use of a loopback file.
type loopbackFile interface {
	gofs.FileReader
	gofs.FileWriter
	gofs.FileFlusher
	gofs.FileReleaser
	gofs.FileFsyncer
	gofs.FileGetattrer
	gofs.FileSetattrer
	gofs.FileAllocater
}

var _ loopbackFile = (*gofs.LoopbackFile)(nil)

// servedFile has loopbackFile's methods and no others (no PassthroughFd).
type servedFile struct{ loopbackFile }

func served(fh gofs.FileHandle) gofs.FileHandle {
	if f, ok := fh.(loopbackFile); ok {
		return servedFile{f}
	}
	return fh
}
