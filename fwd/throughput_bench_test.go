package fwd_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/cpustat"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/sched"
)

// fill writes a pattern of seed over b.
func fill(b []byte, seed int64) {
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mover moves one request of its client's buffer at off.
type mover func(off int64) error

// runClients has each of len(clients) clients move perClient bytes of its
// own file in req-byte requests, all at once, and returns the makespan.
func runClients(b *testing.B, clients []mover, req, perClient int) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for _, move := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := 0; off < perClient; off += req {
				if err := move(int64(off)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkForwarderVsDirect measures, in the same run, 16 clients doing
// pwrite/pread on their own files directly and the same through the
// forwarder (one connection each), on a POSIX backend on tmpfs (64 KiB
// stripes over 4 data servers, PVFS's default, no disk model). Transports:
// net=unix is a Unix socket with the shared-memory data path and its rings
// (the client's default), net=unixshm the region without rings (a frame
// each way per request), net=unixsock the socket carrying the data,
// net=tcp TCP loopback. It reports both bandwidths, their ratio
// fwd/direct, the CPU time per GiB of each, and the share of the machine's
// CPU time the hypervisor stole meanwhile (steal-%).
func BenchmarkForwarderVsDirect(b *testing.B) {
	for _, req := range []int{1 << 20, 32 << 10} {
		for _, scheduler := range []string{"fifo", "twins"} {
			for _, transport := range []string{"unix", "unixshm", "unixsock", "tcp"} {
				for _, op := range []string{"write", "read"} {
					name := fmt.Sprintf("req=%dKiB/sched=%s/net=%s/op=%s", req>>10, scheduler, transport, op)
					b.Run(name, func(b *testing.B) { forwarderVsDirect(b, req, 64<<10, scheduler, transport, op) })
				}
			}
		}
	}
}

// BenchmarkForwarderVsDirectStripe1MiB is the 1 MiB case with 1 MiB stripes
// (Lustre's default stripe size): a request is one piece instead of
// sixteen, which shows what the per-piece work costs.
func BenchmarkForwarderVsDirectStripe1MiB(b *testing.B) {
	for _, op := range []string{"write", "read"} {
		b.Run("op="+op, func(b *testing.B) { forwarderVsDirect(b, 1<<20, 1<<20, "fifo", "unix", op) })
	}
}

func forwarderVsDirect(b *testing.B, req int, stripe int64, scheduler, transport, op string) {
	const clients = 16
	// Enough requests per client (64 of 1 MiB, 512 of 32 KiB) that the
	// makespan measures the steady state, not the clients' start and the
	// last stragglers.
	perClient := 64 << 20
	if req < 1<<20 {
		perClient = 16 << 20
	}
	root := fwdtest.MemDir(b)
	be, err := posix.New(root, layout.Layout{StripeSize: stripe, StripeCount: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	listen := "127.0.0.1:0"
	if transport != "tcp" {
		listen = "unix:" + filepath.Join(b.TempDir(), "fwd.sock")
	}
	d := startDaemon(b, be, fwd.Options{Listen: []string{listen}, Scheduler: scheduler, Sched: sched.Config{Window: time.Millisecond}})
	write := op == "write"
	direct := make([]mover, clients)
	forwarded := make([]mover, clients)
	for i := 0; i < clients; i++ {
		name := fmt.Sprintf("f%02d", i)
		osf, err := os.OpenFile(filepath.Join(root, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer osf.Close()
		if _, err := osf.WriteAt(make([]byte, perClient), 0); err != nil {
			b.Fatal(err)
		}
		c, err := client.DialOptions(d.Addr(), client.Options{NoShm: transport == "unixsock", NoRing: transport == "unixshm"})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		f, err := c.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		// Each side moves data from and to a buffer of its own, allocated
		// once: the direct client's in its heap, the forwarded client's
		// from the client library (in the shared region on net=unix).
		dbuf := make([]byte, req)
		fbuf, err := c.AllocBuffer(req)
		if err != nil {
			b.Fatal(err)
		}
		defer fbuf.Free()
		if (transport == "unix" || transport == "unixshm") && !fbuf.Shared() {
			b.Fatal("buffer not in the shared region")
		}
		// Both buffers hold data, as an application's would. Never
		// written, the direct client's heap buffer reads as the kernel's
		// one zero page (always in cache) and the region's pages are only
		// made when the daemon first copies from them: with 1 MiB writes
		// that was worth about 5% to the direct side and 10 to 25% to the
		// forwarded one, both artifacts.
		fill(dbuf, int64(i))
		fill(fbuf.Bytes(), int64(i))
		if write {
			direct[i] = func(off int64) error { _, err := osf.WriteAt(dbuf, off); return err }
			forwarded[i] = func(off int64) error { _, err := f.WriteBuffer(fbuf, off); return err }
		} else {
			direct[i] = func(off int64) error { _, err := osf.ReadAt(dbuf, off); return err }
			forwarded[i] = func(off int64) error { _, err := f.ReadBuffer(fbuf, off); return err }
		}
	}
	var tDirect, tFwd, cDirect, cFwd time.Duration
	ratios := make([]float64, 0, b.N)
	stat0, statErr := cpustat.Read()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		d := runClients(b, direct, req, perClient)
		c1 := cpuTime()
		f := runClients(b, forwarded, req, perClient)
		cDirect, cFwd = cDirect+c1-c0, cFwd+cpuTime()-c1
		tDirect, tFwd = tDirect+d, tFwd+f
		ratios = append(ratios, d.Seconds()/f.Seconds())
	}
	b.StopTimer()
	if stat1, err := cpustat.Read(); err == nil && statErr == nil {
		// The share of the machine's CPU time the hypervisor gave to
		// other guests: with 5% and more, the ratios measure the host's
		// noise as much as the forwarder (fwdbench.NoisySteal).
		if steal, ok := stat1.StolenSince(stat0); ok {
			b.ReportMetric(100*steal, "steal-%")
		}
	}
	total := float64(b.N) * clients * float64(perClient) / (1 << 20)
	b.ReportMetric(total/tDirect.Seconds(), "direct-MiB/s")
	b.ReportMetric(total/tFwd.Seconds(), "fwd-MiB/s")
	b.ReportMetric(tDirect.Seconds()/tFwd.Seconds(), "fwd/direct")
	// The median of the pairs' ratios: a pass the machine slowed down (it
	// is shared; a pass at half speed happens) moves it less than the
	// ratio of the totals.
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "fwd/direct-median")
	// CPU time per GiB (clients and daemon are in this process): robust
	// to other load on the machine.
	b.ReportMetric(cDirect.Seconds()/(total/1024), "direct-cpu-s/GiB")
	b.ReportMetric(cFwd.Seconds()/(total/1024), "fwd-cpu-s/GiB")
}
