package pfs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/backendtest"
	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/pfs/pfsclient"
	"github.com/adaptio/adaptio/pfs/pfsproto"
	"github.com/adaptio/adaptio/rw"
)

func startCluster(t *testing.T, opts pfs.ClusterOptions) (*pfs.Cluster, *pfsclient.Client) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Disk == "" {
		opts.Disk = "none"
	}
	c, err := pfs.NewCluster(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if !c.Ready(5 * time.Second) {
		t.Fatal("cluster not ready")
	}
	b, err := c.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return c, b
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Harness {
		dir := t.TempDir()
		c, b := startCluster(t, pfs.ClusterOptions{Dir: dir})
		return backendtest.Harness{
			Backend: b,
			Symlink: func(name, target string) error {
				for i := range len(c.Addrs()) {
					if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("server-%d", i), name)); err != nil {
						return err
					}
				}
				return nil
			},
		}
	})
}

func TestServerRestartRecovery(t *testing.T) {
	ctx := context.Background()
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 3})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3*65536)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := backendtest.WriteAll(ctx, b, "f", data, 0); err != nil {
		t.Fatal(err)
	}

	// Files start on different servers (layout.Layout.FirstServer).
	s0, s1, s2 := backendtest.ServerOf(t, b, "f", 0), backendtest.ServerOf(t, b, "f", 65536), backendtest.ServerOf(t, b, "f", 2*65536)
	c.Server(s1).Shutdown()
	_, err := b.WriteAt(ctx, "f", s1, data[:100], 65536)
	if !errors.Is(err, backend.ErrServerDown) || !strings.Contains(err.Error(), fmt.Sprint("server ", s1)) {
		t.Fatalf("write to a stopped server: got %v, want ErrServerDown naming server %d", err, s1)
	}
	if _, err := b.ReadAt(ctx, "f", s0, make([]byte, 100), 0); err != nil {
		t.Fatalf("read from a live server while another is down: %v", err)
	}
	if _, err := b.Stat(ctx, "f"); !errors.Is(err, backend.ErrServerDown) {
		t.Fatalf("stat with a server down: got %v, want ErrServerDown", err)
	}

	if err := c.Restart(s1); err != nil {
		t.Fatal(err)
	}
	// The restarted server listens when Restart returns: the next request
	// reconnects by itself.
	if _, err := b.WriteAt(ctx, "f", s1, data[65536:65536+100], 65536); err != nil {
		t.Fatalf("write after restart: %v", err)
	}
	// A server restarted behind a live connection: the stale connection's
	// failure is absorbed by one retry on a fresh one.
	if err := c.Restart(s2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAt(ctx, "f", s2, make([]byte, 100), 2*65536); err != nil {
		t.Fatalf("read through a stale connection: %v", err)
	}
	got, err := backendtest.ReadAll(ctx, b, "f", 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Fatal("data changed across the restart")
	}
}

func TestPendingRequestsFailWhenServerDies(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	dev := &blockingDevice{gate: gate, entered: make(chan struct{}, 16)}
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 2, Device: func(i int) disk.Device {
		if i == 1 {
			return dev
		}
		return constDevice(0)
	}})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	off := int64(0) // a byte on server 1, whose device blocks
	if backendtest.ServerOf(t, b, "f", 0) != 1 {
		off = 65536
	}
	errc := make(chan error, 1)
	go func() {
		_, err := b.WriteAt(ctx, "f", 1, []byte("x"), off)
		errc <- err
	}()
	<-dev.entered // the write is in the server
	done := make(chan struct{})
	go func() { c.Server(1).Shutdown(); close(done) }()
	// Shutdown closes the connection first; the client fails the request.
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("pending request not failed")
	}
	close(gate)
	<-done
	if !errors.Is(err, backend.ErrServerDown) {
		t.Fatalf("pending write on a dying server: got %v, want ErrServerDown", err)
	}
}

type blockingDevice struct {
	gate    chan struct{}
	entered chan struct{}
}

func (d *blockingDevice) Service(time.Duration, rw.Op, int64, int64, *rand.Rand) time.Duration {
	d.entered <- struct{}{}
	<-d.gate
	return 0
}

type constDevice time.Duration

func (d constDevice) Service(time.Duration, rw.Op, int64, int64, *rand.Rand) time.Duration {
	return time.Duration(d)
}

// fakeClock advances only when slept on.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recordingDevice wraps a model and checks each access starts with the
// device idle: at or after the end of the previous one.
type recordingDevice struct {
	inner      disk.Device
	mu         sync.Mutex
	freeAt     time.Duration
	total      time.Duration
	n          int
	overlap    int
	backToBack int
	addrs      []int64 // in the order served
}

func (d *recordingDevice) Service(now time.Duration, op rw.Op, addr, length int64, rng *rand.Rand) time.Duration {
	svc := d.inner.Service(now, op, addr, length, rng)
	d.mu.Lock()
	defer d.mu.Unlock()
	if now < d.freeAt {
		d.overlap++
	}
	if d.n > 0 && now == d.freeAt {
		d.backToBack++
	}
	d.freeAt = now + svc
	d.total += svc
	d.n++
	d.addrs = append(d.addrs, addr)
	return svc
}

// recordingHDD is the hard-disk model behind a recordingDevice.
func recordingHDD(t *testing.T) *recordingDevice {
	t.Helper()
	cfg, err := disk.DefaultConfig("hdd")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := disk.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &recordingDevice{inner: inner}
}

// deviceOnly is the data-server model reduced to its device: no CPU time,
// no switch cost, no page cache.
var deviceOnly = dataserver.Config{Overhead: -1, SwitchCost: -1, ReadAheadBytes: -1}

func TestDiskDelayApplied(t *testing.T) {
	tests := []struct {
		kind     string
		min, max time.Duration // per-access modelled time, 32 KiB random
	}{
		{"hdd", 2 * time.Millisecond, 20 * time.Millisecond},
		{"ssd", 20 * time.Microsecond, 500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := disk.DefaultConfig(tt.kind)
			if err != nil {
				t.Fatal(err)
			}
			clock := &fakeClock{now: time.Unix(1000, 0)}
			devs := make([]*recordingDevice, 2)
			c, b := startCluster(t, pfs.ClusterOptions{Servers: 2, Clock: clock, Model: deviceOnly, Device: func(i int) disk.Device {
				inner, err := disk.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				devs[i] = &recordingDevice{inner: inner}
				return devs[i]
			}})
			start := clock.Now()
			const files, writers = 4, 8
			for f := range files {
				if err := b.Create(ctx, fmt.Sprint("f", f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			first := make([]int, files) // files start on different servers
			for f := range files {
				first[f] = backendtest.ServerOf(t, b, fmt.Sprint("f", f), 0)
			}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					buf := make([]byte, 32<<10)
					for k := range 4 {
						// On server 0 or 1 by the writer's parity.
						off := int64(k*writers+w+first[w%files]) * 65536
						if err := backendtest.WriteAll(ctx, b, fmt.Sprint("f", w%files), buf, off); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			var busy time.Duration
			for i, d := range devs {
				st := c.Server(i).Stats()
				if st.Busy != d.total {
					t.Errorf("server %d: Busy %v, want the model's total %v", i, st.Busy, d.total)
				}
				if d.overlap != 0 {
					t.Errorf("server %d: %d accesses started while the device was busy", i, d.overlap)
				}
				if d.n == 0 || d.total < time.Duration(d.n)*tt.min || d.total > time.Duration(d.n)*tt.max {
					t.Errorf("server %d: %d accesses took %v of modelled time, want between %v and %v each", i, d.n, d.total, tt.min, tt.max)
				}
				busy = max(busy, d.total)
			}
			// The fake clock advances only by the delays: the servers slept
			// at least as long as their busiest device was modelled busy.
			if slept := clock.Now().Sub(start); slept < busy {
				t.Errorf("clock advanced %v, less than the busiest device's %v", slept, busy)
			}
		})
	}
}

// TestQueuedAccessesBackToBack: with the clock standing still but for the
// delays, every access after the first arrives while the device is busy, so
// in device time it starts exactly when the previous one ends.
func TestQueuedAccessesBackToBack(t *testing.T) {
	ctx := context.Background()
	dev := recordingHDD(t)
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 1, Clock: clock, Model: deviceOnly, Device: func(int) disk.Device { return dev }})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for k := range 5 {
				if _, err := b.WriteAt(ctx, "f", 0, make([]byte, 4096), int64(k*6+w)*4096); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if dev.n != 30 || dev.backToBack != dev.n-1 || dev.overlap != 0 {
		t.Errorf("%d accesses, %d back to back, %d overlapping; want 30, 29, 0", dev.n, dev.backToBack, dev.overlap)
	}
	if got := c.Server(0).Stats().Busy; clock.Now().Sub(time.Unix(1000, 0)) != got {
		t.Errorf("clock advanced %v, want exactly the modelled busy time %v", clock.Now().Sub(time.Unix(1000, 0)), got)
	}
}

// TestAccessesQueuedInWireOrder: requests pipelined on one connection
// reach the model's queue in the order they were sent, as at a real
// server's device queue, whichever of their goroutines runs first; so the
// device serves them in that order.
func TestAccessesQueuedInWireOrder(t *testing.T) {
	ctx := context.Background()
	dev := recordingHDD(t)
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 1, Model: deviceOnly, Device: func(int) disk.Device { return dev }})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const n = 64
	var frames []byte
	for i := range n + 1 {
		r := pfsproto.Request{ID: uint64(i + 1), Op: pfsproto.OpWrite, Path: "f", A: int64(i) * 4096, Data: make([]byte, 4096)}
		if i == 0 {
			r = pfsproto.Request{ID: 1, Op: pfsproto.OpHello, A: 0}
		}
		if frames, err = pfsproto.AppendRequest(frames, &r); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, r.Data...)
	}
	before := len(dev.addrs)
	if _, err := nc.Write(frames); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	rd := pfsproto.NewReader(nc, 0)
	for i := range n + 1 {
		if _, err := rd.Next(nil); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	dev.mu.Lock()
	got := dev.addrs[before:]
	dev.mu.Unlock()
	if len(got) != n {
		t.Fatalf("device served %d accesses, want %d", len(got), n)
	}
	for i := 1; i < n; i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("access %d served at address %d after %d: not in the order sent", i, got[i], got[i-1])
		}
	}
}

func TestMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	ctx := context.Background()
	c, b := startCluster(t, pfs.ClusterOptions{Servers: 1})
	for _, junk := range [][]byte{
		{0xff, 0xff, 0xff, 0xff},                         // oversized
		{0, 0, 0, 3, 1, 2, 3},                            // too short for a request
		append([]byte{0, 0, 0, 27}, make([]byte, 27)...), // op 0
	} {
		nc, err := net.Dial("tcp", c.Addrs()[0])
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(junk)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := nc.Read(make([]byte, 1)); err == nil {
			t.Errorf("junk %x: server answered %d bytes instead of closing", junk, n)
		}
		nc.Close()
	}
	if err := b.Create(ctx, "ok", 0o644); err != nil {
		t.Fatalf("server stopped serving others: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	_, b := startCluster(t, pfs.ClusterOptions{Servers: 2, Registerer: reg})
	if err := b.Create(ctx, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := backendtest.WriteAll(ctx, b, "f", make([]byte, 65536+10), 0); err != nil {
		t.Fatal(err)
	}
	// "f" starts on server 1 of 2 (layout.Layout.FirstServer).
	if s := backendtest.ServerOf(t, b, "f", 0); s != 1 {
		t.Fatalf("f starts on server %d", s)
	}
	want := `
# HELP adaptio_pfs_written_bytes_total Bytes written to the emulated PFS data server.
# TYPE adaptio_pfs_written_bytes_total counter
adaptio_pfs_written_bytes_total{server="0"} 10
adaptio_pfs_written_bytes_total{server="1"} 65536
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "adaptio_pfs_written_bytes_total"); err != nil {
		t.Error(err)
	}
}

func TestClientValidation(t *testing.T) {
	ctx := context.Background()
	_, b := startCluster(t, pfs.ClusterOptions{Servers: 2})
	if _, err := b.ReadAt(ctx, "f", 0, make([]byte, pfsproto.MaxData+1), 0); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("oversized read: got %v, want ErrBadArgument", err)
	}
	if _, err := pfsclient.NewBackend(nil, 0); !errors.Is(err, pfsclient.ErrBadOptions) {
		t.Errorf("no servers: got %v, want ErrBadOptions", err)
	}
	b.Close()
	if _, err := b.Stat(ctx, "f"); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}

func TestCanceledRead(t *testing.T) {
	gate := make(chan struct{})
	dev := &blockingDevice{gate: gate, entered: make(chan struct{}, 16)}
	_, b := startCluster(t, pfs.ClusterOptions{Servers: 1, Device: func(int) disk.Device { return dev }})
	if err := b.Create(context.Background(), "f", 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.ReadAt(ctx, "f", 0, make([]byte, 10), 0)
		errc <- err
	}()
	<-dev.entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled read: got %v, want context.Canceled", err)
	}
	close(gate)
	// The late response is discarded and the connection stays usable.
	if _, err := b.Stat(context.Background(), "f"); err != nil {
		t.Errorf("after a canceled read: %v", err)
	}
}

// The data servers apply the simulator's model of interleaving I/O nodes:
// each access from another I/O node than the previous one pays the switch
// cost, and the wall (here fake) clock follows.
func TestSwitchCostBetweenIONodes(t *testing.T) {
	ctx := context.Background()
	const cost = time.Millisecond
	for _, tt := range []struct {
		name  string
		nodes []int // I/O node of each write, in order
		want  time.Duration
	}{
		{"one node", []int{0, 0, 0, 0}, 0},
		{"alternating nodes", []int{0, 1, 0, 1}, 3 * cost},
		{"two runs", []int{0, 0, 1, 1}, cost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1000, 0)}
			c, b := startCluster(t, pfs.ClusterOptions{Servers: 1, Clock: clock,
				Model:  dataserver.Config{Overhead: -1, SwitchCost: cost, ReadAheadBytes: -1},
				Device: func(int) disk.Device { return disk.None{} }})
			if err := b.Create(ctx, "f", 0o644); err != nil {
				t.Fatal(err)
			}
			nodes := map[int]*pfsclient.Client{}
			for _, n := range tt.nodes {
				if nodes[n] == nil {
					nb, err := c.NodeBackend(n)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { nb.Close() })
					nodes[n] = nb
				}
			}
			start := clock.Now()
			for k, n := range tt.nodes {
				if _, err := nodes[n].WriteAt(ctx, "f", 0, make([]byte, 4096), int64(k)*4096); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Server(0).Stats().Busy; got != tt.want {
				t.Errorf("modelled busy time %v, want %v", got, tt.want)
			}
			if got := clock.Now().Sub(start); got != tt.want {
				t.Errorf("clock advanced %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHelloRefusesABadNode(t *testing.T) {
	c, _ := startCluster(t, pfs.ClusterOptions{Servers: 1})
	if _, err := pfsclient.NewClient(pfsclient.ClientOptions{Addrs: c.Addrs(), Node: -1}); !errors.Is(err, pfsclient.ErrBadOptions) {
		t.Errorf("client for I/O node -1: %v, want ErrBadOptions", err)
	}
}
