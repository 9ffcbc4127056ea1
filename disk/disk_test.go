package disk

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
)

func mustHDD(t *testing.T) Device {
	t.Helper()
	cfg, err := DefaultConfig(KindHDD)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// run serves n accesses produced by next, each starting gap after the
// previous one ends, and returns the mean service time.
func run(d Device, n int, gap time.Duration, next func(i int) (rw.Op, int64, int64)) time.Duration {
	rng := rand.New(rand.NewPCG(1, 2))
	var now, total time.Duration
	for i := range n {
		op, addr, l := next(i)
		took := d.Service(now, op, addr, l, rng)
		total += took
		now += took + gap
	}
	return total / time.Duration(n)
}

func TestHDDServiceTimes(t *testing.T) {
	const k32 = 32 << 10
	rnd := rand.New(rand.NewPCG(7, 7))
	randomAddrs := make([]int64, 2000)
	for i := range randomAddrs {
		randomAddrs[i] = rnd.Int64N(590e9)
	}
	tests := []struct {
		name     string
		gap      time.Duration
		next     func(i int) (rw.Op, int64, int64)
		lo, hi   time.Duration
		describe string
	}{
		{"sequential reads back to back", 0,
			func(i int) (rw.Op, int64, int64) { return rw.Read, int64(i) * k32, k32 },
			100 * time.Microsecond, 250 * time.Microsecond, "about 32 KiB at 200 MB/s (164 µs)"},
		{"sequential reads with idle gaps hit the read-ahead", time.Millisecond,
			func(i int) (rw.Op, int64, int64) { return rw.Read, int64(i) * k32, k32 },
			100 * time.Microsecond, 200 * time.Microsecond, "overhead + interface transfer"},
		{"random reads", 0,
			func(i int) (rw.Op, int64, int64) { return rw.Read, randomAddrs[i], k32 },
			6 * time.Millisecond, 8 * time.Millisecond, "average seek 3.6 ms + 3 ms rotation + transfer"},
		{"sequential writes back to back stream", 0,
			func(i int) (rw.Op, int64, int64) { return rw.Write, int64(i) * k32, k32 },
			100 * time.Microsecond, 250 * time.Microsecond, "media rate"},
		{"sequential writes with gaps lose a revolution", 200 * time.Microsecond,
			func(i int) (rw.Op, int64, int64) { return rw.Write, int64(i) * k32, k32 },
			5500 * time.Microsecond, 6500 * time.Microsecond, "6 ms revolution"},
		{"random writes", 0,
			func(i int) (rw.Op, int64, int64) { return rw.Write, randomAddrs[i], k32 },
			6500 * time.Microsecond, 8500 * time.Microsecond, "write seek + rotation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(mustHDD(t), 2000, tt.gap, tt.next)
			if got < tt.lo || got > tt.hi {
				t.Errorf("mean service %v, want in [%v, %v] (%s)", got, tt.lo, tt.hi, tt.describe)
			}
		})
	}
}

func TestHDDInterleavedStreamsUseSegments(t *testing.T) {
	// Four sequential streams in far apart regions, read round robin with
	// idle gaps: after the first round each read is a read-ahead hit.
	const k32 = 32 << 10
	next := func(i int) (rw.Op, int64, int64) {
		s := int64(i % 4)
		return rw.Read, s*10e9 + int64(i/4)*k32, k32
	}
	if got := run(mustHDD(t), 400, 2*time.Millisecond, next); got > time.Millisecond {
		t.Errorf("mean service %v with 4 streams and 16 segments, want < 1ms (cache hits)", got)
	}
	// 64 streams thrash 16 segments.
	next64 := func(i int) (rw.Op, int64, int64) {
		s := int64(i % 64)
		return rw.Read, s*1e9 + int64(i/64)*k32, k32
	}
	if got := run(mustHDD(t), 2000, 0, next64); got < 2*time.Millisecond {
		t.Errorf("mean service %v with 64 streams and 16 segments, want >= 2ms (misses)", got)
	}
}

func TestHDDDeterministic(t *testing.T) {
	next := func(i int) (rw.Op, int64, int64) {
		op := rw.Read
		if i%3 == 0 {
			op = rw.Write
		}
		return op, int64(i*7919%1000) * 1 << 20, 64 << 10
	}
	a := run(mustHDD(t), 500, 100*time.Microsecond, next)
	b := run(mustHDD(t), 500, 100*time.Microsecond, next)
	if a != b {
		t.Errorf("two runs differ: %v vs %v", a, b)
	}
}

func TestSSDAndNone(t *testing.T) {
	cfg, _ := DefaultConfig(KindSSD)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Service(0, rw.Read, 0, 450e3, nil)
	want := cfg.CommandOverhead + cfg.ReadLatency + time.Millisecond*900/1000
	if got != want {
		t.Errorf("SSD read of 450 kB: got %v, want %v", got, want)
	}
	n, _ := New(Config{Kind: KindNone, CapacityBytes: 1})
	if got := n.Service(0, rw.Write, 5, 1<<20, nil); got != 0 {
		t.Errorf("none: got %v, want 0", got)
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := DefaultConfig("tape"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("unknown kind: got %v, want ErrBadConfig", err)
	}
	for _, k := range []string{KindHDD, KindSSD, KindArray, KindNone} {
		c, err := DefaultConfig(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s default invalid: %v", k, err)
		}
	}
	c, _ := DefaultConfig(KindHDD)
	c.CacheSegments = 0
	if _, err := New(c); !errors.Is(err, ErrBadConfig) {
		t.Errorf("0 segments: got %v, want ErrBadConfig", err)
	}
}

func TestPlacement(t *testing.T) {
	p := DefaultPlacement(600e9)
	if a, b := p.Addr(1, 0), p.Addr(2, 0); b-a != p.StrideBytes {
		t.Errorf("files 1 and 2 start %d bytes apart, want %d", b-a, p.StrideBytes)
	}
	if got := p.Addr(3, 4096) - p.Addr(3, 0); got != 4096 {
		t.Errorf("offset within a file moved the address by %d, want 4096", got)
	}
	for f := uint64(0); f < 10000; f += 97 {
		if a := p.Addr(f, 1<<30); a < 0 || a >= p.CapacityBytes {
			t.Fatalf("address %d out of [0, %d)", a, p.CapacityBytes)
		}
	}
}

func TestArraySmallAndLargeWrites(t *testing.T) {
	cfg, err := DefaultConfig(KindArray)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		op     rw.Op
		length int64
		want   time.Duration
	}{
		{rw.Write, 256 << 10, cfg.SmallWriteLatency + rateDur(256<<10, cfg.SmallWriteBytesPerSec)},
		{rw.Write, 256<<10 + 1, cfg.LargeLatency + rateDur(256<<10+1, cfg.LargeBytesPerSec)},
		{rw.Read, 4096, cfg.LargeLatency + rateDur(4096, cfg.LargeBytesPerSec)},
		{rw.Write, 0, 0},
	}
	for _, tt := range tests {
		if got := d.Service(0, tt.op, 0, tt.length, nil); got != tt.want {
			t.Errorf("%v of %d bytes: got %v, want %v", tt.op, tt.length, got, tt.want)
		}
	}
	cfg.LargeBytesPerSec = 0
	if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
		t.Errorf("zero rate: got %v, want ErrBadConfig", err)
	}
}
