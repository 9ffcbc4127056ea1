package fwd

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd/wire"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/sched"
)

// startInternal starts a daemon on a Unix socket for the package's own
// tests (fwd/fwdtest imports fwd, so they cannot use it); opts.Backend
// defaults to a POSIX backend with 64 KiB stripes over 4 data servers.
func startInternal(t *testing.T, opts Options) *Daemon {
	t.Helper()
	if opts.Backend == nil {
		be, err := posix.New(t.TempDir(), backend.Layout{StripeSize: 64 << 10, StripeCount: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		opts.Backend = be
	}
	opts.Listen = []string{"unix:" + filepath.Join(t.TempDir(), "s")}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Shutdown)
	return d
}

// startRingDaemon starts a FIFO daemon whose ring poller makes polls empty sweeps.
func startRingDaemon(t *testing.T, polls int) *Daemon {
	return startInternal(t, Options{RingPolls: polls, Scheduler: "fifo"})
}

// pattern is the content of byte off of writer w.
func pattern(w int, off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int64(w)*31 + (off+int64(i))*7)
	}
	return b
}

// writeReadBack has several goroutines write and read back their own
// ranges of one file through c, with copies (WriteAt/ReadAt) and without
// (Buffers), and checks every byte.
func writeReadBack(t *testing.T, c *Client) {
	t.Helper()
	f, err := c.Create("data")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const writers, size, rounds = 6, 96 << 10, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf, err := c.AllocBuffer(size)
			if err != nil {
				errs <- err
				return
			}
			defer buf.Free()
			for r := 0; r < rounds; r++ {
				off := int64(w*rounds+r) * size
				want := pattern(w, off, size)
				if r%2 == 0 {
					if _, err := f.WriteAt(want, off); err != nil {
						errs <- err
						return
					}
				} else {
					copy(buf.Bytes(), want)
					if _, err := f.WriteBuffer(buf, off); err != nil {
						errs <- err
						return
					}
					clear(buf.Bytes())
				}
				got := make([]byte, size)
				if r%2 == 0 {
					_, err = f.ReadBuffer(buf, off)
					copy(got, buf.Bytes())
				} else {
					_, err = f.ReadAt(got, off)
				}
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, want) {
					errs <- fmt.Errorf("writer %d round %d: read back differs", w, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Reads and writes go through the rings (no frame per request) and land
// exactly, whether the daemon's poller and the client's reaper poll or
// sleep at once (every request then takes the doorbell and wake paths).
func TestRingDataPath(t *testing.T) {
	for _, tt := range []struct {
		name         string
		daemon, reap int
	}{
		{"polling", DefaultRingPolls, DefaultRingPolls},
		{"both sleep at once", -1, -1},
		{"daemon sleeps, client polls", -1, DefaultRingPolls},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := procReaper.setPolls(tt.reap)
			defer procReaper.setPolls(old)
			d := startRingDaemon(t, tt.daemon)
			c, err := DialOptions(d.Addr(), ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.conn.ring.Load() == nil {
				t.Fatal("no rings on a unix connection")
			}
			frames, ring := testutil.ToFloat64(d.m.viaFrame), testutil.ToFloat64(d.m.viaRing)
			writeReadBack(t, c)
			// Opening and closing the file are frames; the 96 reads and
			// writes go through the rings.
			if n := testutil.ToFloat64(d.m.viaFrame) - frames; n > 2 {
				t.Errorf("%v request frames besides open and close", n)
			}
			if n := testutil.ToFloat64(d.m.viaRing) - ring; n != 96 {
				t.Errorf("%v requests through the rings, want 96", n)
			}
		})
	}
}

// Without rings (NoRing) the shared region still carries the data.
func TestNoRing(t *testing.T) {
	d := startRingDaemon(t, DefaultRingPolls)
	c, err := DialOptions(d.Addr(), ClientOptions{NoRing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.conn.ring.Load() != nil || !c.SharedMemory() {
		t.Fatalf("NoRing: rings %v, shared memory %v; want none, yes", c.conn.ring.Load() != nil, c.SharedMemory())
	}
	writeReadBack(t, c)
}

// A ring request is refused with a clear error, and the connection goes on.
func TestRingSetupRefused(t *testing.T) {
	d := startRingDaemon(t, DefaultRingPolls)
	c, err := DialOptions(d.Addr(), ClientOptions{NoRing: true, ShmSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := c.conn
	for _, tt := range []struct {
		name string
		off  uint64
		n    int64
		want string
	}{
		{"entries not a power of two", 0, 100, "ring entries"},
		{"too few entries", 0, 4, "ring entries"},
		{"too many entries", 0, 8192, "ring entries"},
		{"misaligned", 8, 256, "multiple of 64"},
		{"outside the region", 1 << 20, 256, "outside the shared region"},
		{"overflowing offset", 1<<64 - 64, 256, "outside the shared region"},
	} {
		_, err := cc.send(&wire.Msg{Op: wire.OpRing, ShmOff: tt.off, Length: tt.n}, nil, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadArgument || !bytes.Contains([]byte(we.Msg), []byte(tt.want)) {
			t.Errorf("%s: %v; want bad argument mentioning %q", tt.name, err, tt.want)
		}
	}
	// Counters not at zero.
	mem := cc.shm.mem[:ringBytes(256)]
	newRings(mem, 256).counter(ringOffSQTail).Store(3)
	if _, err := cc.send(&wire.Msg{Op: wire.OpRing, ShmOff: 0, Length: 256}, nil, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("start at zero")) {
		t.Errorf("rings with a non-zero counter: %v", err)
	}
	clear(mem)
	f, err := c.Create("still-works")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("yes"), 0); err != nil {
		t.Fatalf("connection after refused rings: %v", err)
	}
}

// A malformed submission (an operation other than read-shm/write-shm, a
// negative length, a tail far past the head) closes that connection with
// an error; the daemon goes on serving the others.
func TestRingMalformedSubmission(t *testing.T) {
	d := startRingDaemon(t, -1)
	good, err := DialOptions(d.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	for _, tt := range []struct {
		name  string
		spoil func(r *clientRing)
	}{
		{"operation", func(r *clientRing) {
			putSQE(r.r.sqe(r.sqTail), &wire.Msg{Op: wire.OpOpen, ID: 1})
			r.r.counter(ringOffSQTail).Store(r.sqTail + 1)
		}},
		{"negative length", func(r *clientRing) {
			putSQE(r.r.sqe(r.sqTail), &wire.Msg{Op: wire.OpWriteShm, ID: 1, Length: -5})
			r.r.counter(ringOffSQTail).Store(r.sqTail + 1)
		}},
		{"tail past head", func(r *clientRing) {
			r.r.counter(ringOffSQTail).Store(r.sqTail + 100000)
		}},
		{"completion head ahead of tail", func(r *clientRing) {
			r.r.counter(ringOffCQHead).Store(77)
			putSQE(r.r.sqe(r.sqTail), &wire.Msg{Op: wire.OpWriteShm, ID: 1, Length: 1})
			r.r.counter(ringOffSQTail).Store(r.sqTail + 1)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad, err := DialOptions(d.Addr(), ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			cc := bad.conn
			r := cc.ring.Load()
			if r == nil {
				t.Fatal("no rings")
			}
			cc.wmu.Lock()
			tt.spoil(r)
			_, _ = cc.nc.Write(wakeFrame)
			cc.wmu.Unlock()
			poll.Until(t, "the daemon to close a connection with a malformed ring", 5*time.Second, func() bool { return cc.broken() != nil })
			f, err := good.Create("other-" + tt.name)
			if err == nil {
				_, err = f.WriteAt([]byte("fine"), 0)
			}
			if err != nil {
				t.Fatalf("another client after a malformed ring: %v", err)
			}
		})
	}
}

func TestSQERoundTrip(t *testing.T) {
	in := wire.Msg{Op: wire.OpReadShm, ID: 1<<64 - 1, Handle: 9, Offset: 1 << 40, Length: 32 << 10, Process: 7, ShmOff: 1 << 20}
	var b [sqeSize]byte
	putSQE(b[:], &in)
	var out wire.Msg
	if err := decodeSQE(b[:], &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("decodeSQE(putSQE(%+v)) = %+v, %v", in, out, err)
	}
}

// The submission decoder never panics, accepts only read-shm and
// write-shm with non-negative offset and length, and what it accepts
// encodes back to the same fields.
func FuzzDecodeSQE(f *testing.F) {
	var b [sqeSize]byte
	putSQE(b[:], &wire.Msg{Op: wire.OpWriteShm, ID: 3, Handle: 1, Offset: 4096, Length: 100, ShmOff: 65536})
	f.Add(b[:])
	f.Add(make([]byte, sqeSize))
	f.Add([]byte{13})
	f.Fuzz(func(t *testing.T, p []byte) {
		var m wire.Msg
		if err := decodeSQE(p, &m); err != nil {
			return
		}
		if (m.Op != wire.OpReadShm && m.Op != wire.OpWriteShm) || m.Offset < 0 || m.Length < 0 {
			t.Fatalf("accepted %+v", m)
		}
		var again [sqeSize]byte
		putSQE(again[:], &m)
		var m2 wire.Msg
		if err := decodeSQE(again[:], &m2); err != nil || !reflect.DeepEqual(m2, m) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", m, m2, err)
		}
	})
}

// A client that stops taking its completions fills its completion ring:
// the daemon then takes no more of its submissions (it never writes past
// the client's head) and goes on serving others; once the client takes
// them, the rest complete.
func TestRingClientThatDoesNotReap(t *testing.T) {
	d := startRingDaemon(t, DefaultRingPolls)
	other, err := DialOptions(d.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	of, err := other.Create("other")
	if err != nil {
		t.Fatal(err)
	}
	slow, err := DialOptions(d.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	f, err := slow.Create("slow")
	if err != nil {
		t.Fatal(err)
	}
	cc := slow.conn
	r := cc.ring.Load()
	n := int(r.r.n)
	// Submit n+10 one-byte writes by hand, as a client that never reaps;
	// the submission ring holds n, so the last 10 go in once the daemon
	// has taken the first ones.
	submit := func(from, to int) {
		cc.wmu.Lock()
		defer cc.wmu.Unlock()
		for i := from; i < to; i++ {
			putSQE(r.r.sqe(r.sqTail), &wire.Msg{Op: wire.OpWriteShm, ID: 1<<40 + uint64(i), Handle: f.Handle(), Offset: int64(i), Length: 1, ShmOff: uint64(r.off)})
			r.sqTail++
			r.r.counter(ringOffSQTail).Store(r.sqTail)
		}
		_, _ = cc.nc.Write(wakeFrame)
	}
	submit(0, n)
	poll.Until(t, "the daemon to complete a full ring", 5*time.Second, func() bool { return r.r.counter(ringOffCQTail).Load() == uint32(n) })
	submit(n, n+10)
	// Another client's round trip proves the poller has swept since.
	for i := 0; i < 3; i++ {
		if _, err := of.WriteAt([]byte("x"), int64(i)); err != nil {
			t.Fatalf("another client while a ring is full: %v", err)
		}
	}
	if got := r.r.counter(ringOffCQTail).Load(); got != uint32(n) {
		t.Fatalf("completion tail %d with the client's head at 0: the daemon wrote past a full ring of %d", got, n)
	}
	// The client takes its completions; the last 10 follow.
	r.r.counter(ringOffCQHead).Store(uint32(n))
	cc.wmu.Lock()
	_, _ = cc.nc.Write(wakeFrame)
	cc.wmu.Unlock()
	poll.Until(t, "the rest to complete once the ring has room", 5*time.Second, func() bool { return r.r.counter(ringOffCQTail).Load() == uint32(n+10) })
}

// The spinner keeps a poller sweeping for polls empty sweeps and then
// until spin has passed; negative polls never spin.
func TestSpinner(t *testing.T) {
	var s spinner
	for i := 0; i < 10; i++ {
		if !s.more(10, -1) {
			t.Fatalf("sweep %d of 10: stopped early", i+1)
		}
	}
	if s.more(10, -1) {
		t.Fatal("spin off: kept sweeping after the polls ran out")
	}
	s.reset()
	if s.more(-1, time.Hour) {
		t.Fatal("negative polls: swept at all")
	}

	const spin = 20 * time.Millisecond
	s.reset()
	start := time.Now()
	for i := 0; i < 3; i++ {
		if !s.more(3, spin) {
			t.Fatalf("sweep %d of 3: stopped early", i+1)
		}
	}
	for sweeps := 0; ; sweeps++ {
		if !s.more(3, spin) {
			if since := time.Since(start); since < spin {
				t.Fatalf("stopped after %v, before the %v spin", since, spin)
			}
			break
		}
		if sweeps > 1e9 {
			t.Fatal("never stopped")
		}
	}
	s.reset()
	if !s.more(0, spin) {
		t.Fatal("reset: the spin did not start again")
	}
}

// createFile dials d with default options and creates file "f"; both are
// closed when the test ends.
func createFile(t *testing.T, d *Daemon) (*Client, *File) {
	t.Helper()
	c, err := DialOptions(d.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f, err := c.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return c, f
}

// While requests wait in the scheduler (here for their TWINS window) the
// poller does not spin for new ones, which would wait as well: it sleeps
// after its sweeps however long the spin.
func TestRingPollerSleepsWhileRequestsQueue(t *testing.T) {
	const window = 400 * time.Millisecond
	d := startInternal(t, Options{RingPolls: 1, RingSpin: time.Hour, Scheduler: "twins", Sched: sched.Config{Window: window}})
	c, f := createFile(t, d)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		// 128 KiB is in data server 2's stripe: it waits for the third
		// window, while the first (data server 0's) runs.
		_, err := f.WriteAt(make([]byte, 4096), 128<<10)
		done <- err
	}()
	r := c.conn.ring.Load()
	poll.Until(t, "the poller to sleep with a request queued", window/2, func() bool {
		return r.r.counter(ringOffIdle).Load() == 1 && d.rings.queued.Load() > 0
	})
	if since := time.Since(start); since >= window {
		t.Fatalf("checked after %v, not within the first window", since)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A client whose requests follow each other with gaps longer than the
// poller's sweeps but shorter than its spin rings no doorbell: the poller
// is still polling when each request comes. Without a spin every request
// after a gap rings one.
func TestRingSpinSparesDoorbells(t *testing.T) {
	const requests = 20
	const gap = 2 * time.Millisecond
	for _, tt := range []struct {
		name      string
		spin      time.Duration
		doorbells func(n float64) bool
		want      string
	}{
		{"spin longer than the gaps", time.Second, func(n float64) bool { return n <= 2 }, "at most 2"},
		{"no spin", -1, func(n float64) bool { return n >= requests/2 }, fmt.Sprintf("at least %d", requests/2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := startInternal(t, Options{RingPolls: 1, RingSpin: tt.spin, Scheduler: "fifo"})
			_, f := createFile(t, d)
			buf := make([]byte, 4096)
			if _, err := f.WriteAt(buf, 0); err != nil { // the first request wakes the poller
				t.Fatal(err)
			}
			before := testutil.ToFloat64(d.m.doorbells)
			for i := 0; i < requests; i++ {
				time.Sleep(gap)
				if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
					t.Fatal(err)
				}
			}
			if n := testutil.ToFloat64(d.m.doorbells) - before; !tt.doorbells(n) {
				t.Errorf("%v doorbells for %d requests %v apart, want %s", n, requests, gap, tt.want)
			}
		})
	}
}
