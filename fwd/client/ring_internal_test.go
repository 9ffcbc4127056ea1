package client

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/fwd/internal/shm"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/layout"
)

// startRingDaemon starts a FIFO daemon on a Unix socket over a POSIX
// backend with 64 KiB stripes over 4 data servers, whose ring poller makes
// polls empty sweeps; its metrics go to reg (nil: a private registry).
func startRingDaemon(t *testing.T, polls int, reg prometheus.Registerer) *fwd.Daemon {
	t.Helper()
	be := fwdtest.PosixLayout(t, t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	return fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{"unix:" + filepath.Join(t.TempDir(), "s")},
		RingPolls: polls, Scheduler: "fifo", Registerer: reg})
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
				want := fwdtest.Content(uint64(w), off, size)
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
		{"polling", fwd.DefaultRingPolls, DefaultRingPolls},
		{"both sleep at once", -1, -1},
		{"daemon sleeps, client polls", -1, DefaultRingPolls},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := procReaper.setPolls(tt.reap)
			defer procReaper.setPolls(old)
			reg := prometheus.NewRegistry()
			d := startRingDaemon(t, tt.daemon, reg)
			c, err := DialOptions(d.Addr(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.conn.ring.Load() == nil {
				t.Fatal("no rings on a unix connection")
			}
			received := func(path string) float64 {
				return fwdtest.Metric(t, reg, "adaptio_fwd_requests_received_total", "path", path)
			}
			frames, ring := received("frame"), received("ring")
			writeReadBack(t, c)
			// Opening and closing the file are frames; the 96 reads and
			// writes go through the rings.
			if n := received("frame") - frames; n > 2 {
				t.Errorf("%v request frames besides open and close", n)
			}
			if n := received("ring") - ring; n != 96 {
				t.Errorf("%v requests through the rings, want 96", n)
			}
		})
	}
}

// Without rings (NoRing) the shared region still carries the data.
func TestNoRing(t *testing.T) {
	d := startRingDaemon(t, fwd.DefaultRingPolls, nil)
	c, err := DialOptions(d.Addr(), Options{NoRing: true})
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
	d := startRingDaemon(t, fwd.DefaultRingPolls, nil)
	c, err := DialOptions(d.Addr(), Options{NoRing: true, ShmSize: 1 << 20})
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
		_, err := cc.send(&fwdproto.Msg{Op: fwdproto.OpRing, ShmOff: tt.off, Length: tt.n}, nil, nil)
		var we *fwdproto.Error
		if !errors.As(err, &we) || we.Code != fwdproto.CodeBadArgument || !bytes.Contains([]byte(we.Msg), []byte(tt.want)) {
			t.Errorf("%s: %v; want bad argument mentioning %q", tt.name, err, tt.want)
		}
	}
	// Counters not at zero.
	mem := cc.shm.mem[:shm.RingBytes(256)]
	shm.NewRings(mem, 256).Counter(shm.OffSQTail).Store(3)
	if _, err := cc.send(&fwdproto.Msg{Op: fwdproto.OpRing, ShmOff: 0, Length: 256}, nil, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("start at zero")) {
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
	d := startRingDaemon(t, -1, nil)
	good, err := DialOptions(d.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	for _, tt := range []struct {
		name  string
		spoil func(r *clientRing)
	}{
		{"operation", func(r *clientRing) {
			shm.PutSQE(r.r.SQE(r.sqTail), &fwdproto.Msg{Op: fwdproto.OpOpen, ID: 1})
			r.r.Counter(shm.OffSQTail).Store(r.sqTail + 1)
		}},
		{"negative length", func(r *clientRing) {
			shm.PutSQE(r.r.SQE(r.sqTail), &fwdproto.Msg{Op: fwdproto.OpWriteShm, ID: 1, Length: -5})
			r.r.Counter(shm.OffSQTail).Store(r.sqTail + 1)
		}},
		{"tail past head", func(r *clientRing) {
			r.r.Counter(shm.OffSQTail).Store(r.sqTail + 100000)
		}},
		{"completion head ahead of tail", func(r *clientRing) {
			r.r.Counter(shm.OffCQHead).Store(77)
			shm.PutSQE(r.r.SQE(r.sqTail), &fwdproto.Msg{Op: fwdproto.OpWriteShm, ID: 1, Length: 1})
			r.r.Counter(shm.OffSQTail).Store(r.sqTail + 1)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad, err := DialOptions(d.Addr(), Options{})
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
			_, _ = cc.nc.Write(shm.WakeFrame)
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

// A client that stops taking its completions fills its completion ring:
// the daemon then takes no more of its submissions (it never writes past
// the client's head) and goes on serving others; once the client takes
// them, the rest complete.
func TestRingClientThatDoesNotReap(t *testing.T) {
	d := startRingDaemon(t, fwd.DefaultRingPolls, nil)
	other, err := DialOptions(d.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	of, err := other.Create("other")
	if err != nil {
		t.Fatal(err)
	}
	slow, err := DialOptions(d.Addr(), Options{})
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
	n := int(r.r.Entries())
	// Submit n+10 one-byte writes by hand, as a client that never reaps;
	// the submission ring holds n, so the last 10 go in once the daemon
	// has taken the first ones.
	submit := func(from, to int) {
		cc.wmu.Lock()
		defer cc.wmu.Unlock()
		for i := from; i < to; i++ {
			shm.PutSQE(r.r.SQE(r.sqTail), &fwdproto.Msg{Op: fwdproto.OpWriteShm, ID: 1<<40 + uint64(i), Handle: f.Handle(), Offset: int64(i), Length: 1, ShmOff: uint64(r.off)})
			r.sqTail++
			r.r.Counter(shm.OffSQTail).Store(r.sqTail)
		}
		_, _ = cc.nc.Write(shm.WakeFrame)
	}
	submit(0, n)
	poll.Until(t, "the daemon to complete a full ring", 5*time.Second, func() bool { return r.r.Counter(shm.OffCQTail).Load() == uint32(n) })
	submit(n, n+10)
	// Another client's round trip proves the poller has swept since.
	for i := 0; i < 3; i++ {
		if _, err := of.WriteAt([]byte("x"), int64(i)); err != nil {
			t.Fatalf("another client while a ring is full: %v", err)
		}
	}
	if got := r.r.Counter(shm.OffCQTail).Load(); got != uint32(n) {
		t.Fatalf("completion tail %d with the client's head at 0: the daemon wrote past a full ring of %d", got, n)
	}
	// The client takes its completions; the last 10 follow.
	r.r.Counter(shm.OffCQHead).Store(uint32(n))
	cc.wmu.Lock()
	_, _ = cc.nc.Write(shm.WakeFrame)
	cc.wmu.Unlock()
	poll.Until(t, "the rest to complete once the ring has room", 5*time.Second, func() bool { return r.r.Counter(shm.OffCQTail).Load() == uint32(n+10) })
}
