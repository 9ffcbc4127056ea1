package fwd_test

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/sched"
)

func startCluster(t *testing.T) *pfs.Cluster { return startClusterOf(t, "none") }

// startClusterOf starts 4 data servers with the device model disk.
func startClusterOf(t *testing.T, disk string) *pfs.Cluster {
	t.Helper()
	return startClusterWith(t, pfs.ClusterOptions{Servers: 4, Disk: disk})
}

// startClusterWith starts data servers with o (Dir: a temporary one).
func startClusterWith(t *testing.T, o pfs.ClusterOptions) *pfs.Cluster {
	t.Helper()
	o.Dir = t.TempDir()
	c, err := pfs.NewCluster(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	if !c.Ready(5 * time.Second) {
		t.Fatal("pfs cluster not ready")
	}
	return c
}

// With the emulated PFS: requests are exact, a dead data server fails the
// requests that touch it with a clear error while the others are served,
// and the daemon recovers when the server is back.
func TestPFSDeadServerAndRecovery(t *testing.T) {
	cl := startCluster(t)
	be, err := cl.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	d := startDaemon(t, be, fwd.Options{Workers: 8})
	c := dial(t, d.Addr())
	f, err := c.Create("data")
	if err != nil {
		t.Fatal(err)
	}
	const stripe = 64 << 10
	whole := fwdtest.Content(11, 0, 8*stripe)
	if _, err := f.WriteAt(whole, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(whole))
	if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, whole) {
		t.Fatalf("read back %d bytes, %v (equal %v)", n, err, bytes.Equal(got, whole))
	}

	// Stripe 1 lives on the server after the file's first: stop it, and
	// its requests fail clearly.
	pieces, err := be.Split(nil, "data", stripe, 1)
	if err != nil {
		t.Fatal(err)
	}
	dead := pieces[0].Server
	cl.Server(dead).Shutdown()
	_, err = f.WriteAt(fwdtest.Content(12, stripe, 100), stripe)
	var we *fwdproto.Error
	if !errors.As(err, &we) || we.Code != fwdproto.CodeServerDown {
		t.Fatalf("write to a dead data server: got %v, want CodeServerDown", err)
	}
	t.Logf("write to a dead data server: %v", err)
	if _, err := f.ReadAt(make([]byte, 2*stripe), 0); !errors.As(err, &we) || we.Code != fwdproto.CodeServerDown {
		t.Fatalf("read spanning a dead data server: got %v, want CodeServerDown", err)
	}
	// Stripes on the other servers are still served.
	if _, err := f.WriteAt(fwdtest.Content(11, 2*stripe, stripe), 2*stripe); err != nil {
		t.Fatalf("write to a live data server while another is down: %v", err)
	}
	if n, err := f.ReadAt(got[:stripe], 0); err != nil || n != stripe || !bytes.Equal(got[:stripe], whole[:stripe]) {
		t.Fatalf("read from a live data server: %d, %v", n, err)
	}

	if err := cl.Restart(dead); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := f.WriteAt(fwdtest.Content(11, stripe, stripe), stripe)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not recover after the data server came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, whole) {
		t.Fatalf("after recovery: read %d bytes, %v (equal %v)", n, err, bytes.Equal(got, whole))
	}
}

func TestPFSConcurrentWriters(t *testing.T) {
	cl := startCluster(t)
	be, err := cl.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	d := startDaemon(t, be, fwd.Options{})
	addr := d.Addr()
	c := dial(t, addr)
	// 6 writers of distinct ranges of one file; then every byte is checked
	// through a second daemon on the same PFS (another I/O node).
	var done = make(chan error, 6)
	f0, err := c.Create("shared")
	if err != nil {
		t.Fatal(err)
	}
	const region = 200 << 10
	for w := 0; w < 6; w++ {
		go func() {
			cw, err := client.Dial(addr)
			if err != nil {
				done <- err
				return
			}
			defer cw.Close()
			fw, err := cw.Open("shared")
			if err != nil {
				done <- err
				return
			}
			for off := int64(0); off < region; off += 40 << 10 {
				base := int64(w)*region + off
				if _, err := fw.WriteAt(fwdtest.Content(5, base, 40<<10), base); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < 6; w++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	f0.Close()
	be2, err := cl.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be2.Close() })
	d2 := startDaemon(t, be2, fwd.Options{Sched: sched.Config{Node: 1, Nodes: 2}})
	f2, err := dial(t, d2.Addr()).Open("shared")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6*region)
	if n, err := f2.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, fwdtest.Content(5, 0, len(got))) {
		t.Fatalf("read through another I/O node: %d bytes, %v; equal %v", n, err, bytes.Equal(got, fwdtest.Content(5, 0, len(got))))
	}
}

// The default number of workers is 16 on a backend across the network
// (the emulated PFS) and, on a local file system, 4 per CPU when that is
// fewer.
func TestDefaultWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cl := startCluster(t)
	remote, err := cl.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Close() })
	local, err := posix.New(t.TempDir(), layout.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	if !local.Local() {
		t.Skip("the test's temporary directory is not on a local file system")
	}
	for _, tc := range []struct {
		cpus int
		be   backend.Backend
		want int
	}{
		{1, local, 4},
		{2, local, 8},
		{8, local, 16},
		{1, remote, 16},
		{2, remote, 16},
	} {
		runtime.GOMAXPROCS(tc.cpus)
		d, err := fwd.New(fwd.Options{Backend: tc.be})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Workers(); got != tc.want {
			t.Errorf("%d CPUs, %T: %d workers, want %d", tc.cpus, tc.be, got, tc.want)
		}
		if d, _ := fwd.New(fwd.Options{Backend: tc.be, Workers: 3}); d.Workers() != 3 {
			t.Errorf("%d CPUs, %T: Workers 3 became %d", tc.cpus, tc.be, d.Workers())
		}
	}
}

// On the emulated PFS (per-server objects) the daemon schedules pieces by
// server-local offset and merges the batches released one after another
// that continue each other on one server, as the simulator does. A 1 MiB
// write over 64 KiB stripes and 4 servers is 16 pieces, 4 per server,
// contiguous in each server's object: TWINS releases one server's pieces
// in a row, which merge into one access per server (a window ending in
// between splits one); FIFO releases them in file order, one server after
// another, so nothing continues and each piece is an access. The bytes
// read back either way.
func TestPFSMergesContiguousBatchesPerServer(t *testing.T) {
	for _, tt := range []struct {
		scheduler string
		min, max  int64 // accesses at the data servers
	}{
		{"twins", 4, 8},
		{"fifo", 16, 16},
	} {
		t.Run(tt.scheduler, func(t *testing.T) {
			cl := startCluster(t)
			be, err := cl.Backend()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { be.Close() })
			d := startDaemon(t, be, fwd.Options{Workers: 1, Scheduler: tt.scheduler})
			c := dial(t, d.Addr())
			f, err := c.Create("big")
			if err != nil {
				t.Fatal(err)
			}
			before := serverRequests(cl)
			want := fwdtest.Content(5, 0, 1<<20)
			if n, err := f.WriteAt(want, 0); err != nil || n != len(want) {
				t.Fatalf("WriteAt = %d, %v", n, err)
			}
			if got := serverRequests(cl) - before; got < tt.min || got > tt.max {
				t.Errorf("%d accesses at the data servers for a 1 MiB write, want %d to %d", got, tt.min, tt.max)
			}
			got := make([]byte, len(want))
			if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !bytes.Equal(got, want) {
				t.Fatalf("ReadAt = %d, %v, equal %v", n, err, bytes.Equal(got, want))
			}
		})
	}
}

func serverRequests(cl *pfs.Cluster) int64 {
	var n int64
	for _, st := range cl.Stats() {
		n += st.Requests
	}
	return n
}
