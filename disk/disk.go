package disk

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// Device is a storage device in virtual (or wall-clock) time.
type Device interface {
	// Service returns how long the device takes to serve one access that
	// starts at time now (device idle), and updates head/cache state.
	// now must not go backwards between calls; the caller must not start the
	// next access before now+returned duration. rng may be nil (no jitter).
	Service(now time.Duration, op rw.Op, addr, length int64, rng *rand.Rand) time.Duration
}

// Kinds of device.
const (
	KindHDD  = "hdd"
	KindSSD  = "ssd"
	KindNone = "none"
	// KindArray is a disk array behind a non-volatile write log: small
	// writes are acknowledged from the log, larger ones pay the array's
	// read-modify-write (IBM ESS-like; used for the MareNostrum 4 setting).
	KindArray = "array"
)

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("disk: invalid configuration")

// Config configures a device. DefaultConfig returns sourced values; see
// docs/simulator.md for where each comes from. Fields that do not apply to
// Kind are ignored.
type Config struct {
	Kind string // "hdd", "ssd" or "none"

	CapacityBytes int64 // addressable bytes; addresses wrap modulo this

	// Hard disk.
	RPM                  float64       // spindle speed (revolutions per minute)
	TrackToTrackSeek     time.Duration // seek to an adjacent track
	AverageSeek          time.Duration // mean read seek over uniformly random pairs of addresses
	WriteSettle          time.Duration // extra settle time of a write after a seek
	SeekJitter           float64       // relative uniform jitter of seek times, in [0, 1) (needs rng)
	OuterRateBytesPerSec float64       // sustained media rate at address 0 (outer zone)
	InnerRateBytesPerSec float64       // sustained media rate at the last address (inner zone)
	CommandOverhead      time.Duration // controller time per command, hidden when a command is already queued (back-to-back)
	InterfaceBytesPerSec float64       // rate of cache hits over the host interface
	CacheSegments        int           // read cache segments (streams the disk can prefetch for), >= 1
	SegmentBytes         int64         // data kept per segment
	MaxPrefetchBytes     int64         // read-ahead beyond the last byte read, done while the disk is idle
	StreamGapBytes       int64         // a read at most this far beyond the prefetch frontier continues the stream (no reposition)
	LookBehind           bool          // on a read miss, keep the sectors read while waiting for the target to rotate under the head

	// Array: writes up to SmallWriteBytes cost SmallWriteLatency +
	// length / SmallWriteBytesPerSec, larger ones (and reads)
	// LargeLatency + length / LargeBytesPerSec.
	SmallWriteBytes       int64
	SmallWriteLatency     time.Duration
	SmallWriteBytesPerSec float64
	LargeLatency          time.Duration
	LargeBytesPerSec      float64

	// SSD.
	ReadLatency          time.Duration // per read
	WriteLatency         time.Duration // per write (program), including flash translation
	ReadRateBytesPerSec  float64
	WriteRateBytesPerSec float64
}

// DefaultConfig returns the default parameters of a kind of device.
//
// "hdd" is a 600 GB 10,000 rpm SAS disk of the class of the Seagate
// Enterprise Performance 10K v8 (ST600MM0088) used by the papers' PVFS
// servers (Bez et al., FGCS 2020, V-A): 6 ms per revolution (3 ms average rotational
// latency), about 3.6 ms average read seek, about 0.4 ms extra for writes,
// 0.3 ms track to track, sustained 200 MB/s on outer tracks falling to
// 120 MB/s on inner tracks, 12 Gb/s SAS interface, 128 MB cache split in
// segments with read-ahead. "ssd" is a SATA/SAS data-centre SSD (about 90 µs
// read and 30 µs write latency, 500/450 MB/s). "none" costs nothing.
func DefaultConfig(kind string) (Config, error) {
	switch kind {
	case KindHDD:
		return Config{
			Kind:                 KindHDD,
			CapacityBytes:        600e9,
			RPM:                  10000,
			TrackToTrackSeek:     300 * time.Microsecond,
			AverageSeek:          3600 * time.Microsecond,
			WriteSettle:          400 * time.Microsecond,
			SeekJitter:           0.1,
			OuterRateBytesPerSec: 200e6,
			InnerRateBytesPerSec: 120e6,
			CommandOverhead:      100 * time.Microsecond,
			InterfaceBytesPerSec: 1.2e9,
			CacheSegments:        16,
			SegmentBytes:         2 << 20,
			MaxPrefetchBytes:     512 << 10,
			StreamGapBytes:       256 << 10,
			LookBehind:           true,
		}, nil
	case KindSSD:
		return Config{
			Kind:                 KindSSD,
			CapacityBytes:        960e9,
			CommandOverhead:      10 * time.Microsecond,
			ReadLatency:          90 * time.Microsecond,
			WriteLatency:         30 * time.Microsecond,
			ReadRateBytesPerSec:  500e6,
			WriteRateBytesPerSec: 450e6,
		}, nil
	case KindNone:
		return Config{Kind: KindNone, CapacityBytes: 1 << 62}, nil
	case KindArray:
		return Config{
			Kind:                  KindArray,
			CapacityBytes:         1 << 50,
			SmallWriteBytes:       256 << 10,
			SmallWriteLatency:     3 * time.Millisecond,
			SmallWriteBytesPerSec: 170e6,
			LargeLatency:          65 * time.Millisecond,
			LargeBytesPerSec:      100e6,
		}, nil
	}
	return Config{}, fmt.Errorf("%w: unknown kind %q (want hdd, ssd, array or none)", ErrBadConfig, kind)
}

// Validate checks c.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	if c.CapacityBytes <= 0 {
		return bad("CapacityBytes = %d, want > 0", c.CapacityBytes)
	}
	switch c.Kind {
	case KindNone:
		return nil
	case KindArray:
		if c.SmallWriteBytes < 0 || c.SmallWriteLatency < 0 || c.LargeLatency < 0 ||
			!(c.SmallWriteBytesPerSec > 0) || !(c.LargeBytesPerSec > 0) {
			return bad("array: negative size or latency, or rate not > 0")
		}
		return nil
	case KindSSD:
		switch {
		case c.ReadLatency < 0 || c.WriteLatency < 0 || c.CommandOverhead < 0:
			return bad("negative SSD latency")
		case !(c.ReadRateBytesPerSec > 0) || !(c.WriteRateBytesPerSec > 0):
			return bad("SSD rates must be > 0 bytes/s")
		}
		return nil
	case KindHDD:
		switch {
		case !(c.RPM > 0):
			return bad("RPM = %v, want > 0", c.RPM)
		case c.TrackToTrackSeek < 0 || c.AverageSeek < c.TrackToTrackSeek:
			return bad("want 0 <= TrackToTrackSeek (%v) <= AverageSeek (%v)", c.TrackToTrackSeek, c.AverageSeek)
		case c.WriteSettle < 0 || c.CommandOverhead < 0:
			return bad("negative WriteSettle or CommandOverhead")
		case c.SeekJitter < 0 || c.SeekJitter >= 1:
			return bad("SeekJitter = %v, want [0, 1)", c.SeekJitter)
		case !(c.OuterRateBytesPerSec > 0) || !(c.InnerRateBytesPerSec > 0):
			return bad("media rates must be > 0 bytes/s")
		case !(c.InterfaceBytesPerSec > 0):
			return bad("InterfaceBytesPerSec must be > 0")
		case c.CacheSegments < 1:
			return bad("CacheSegments = %d, want >= 1", c.CacheSegments)
		case c.SegmentBytes <= 0 || c.MaxPrefetchBytes < 0 || c.StreamGapBytes < 0:
			return bad("SegmentBytes must be > 0, MaxPrefetchBytes and StreamGapBytes >= 0")
		}
		return nil
	}
	return bad("unknown kind %q (want hdd, ssd or none)", c.Kind)
}

// New returns a device in its initial state (head at address 0, empty cache).
func New(cfg Config) (Device, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Kind {
	case KindNone:
		return None{}, nil
	case KindSSD:
		return &SSD{cfg: cfg, last: -1}, nil
	case KindArray:
		return Array{cfg: cfg}, nil
	}
	return newHDD(cfg), nil
}

// None is a device that costs nothing.
type None struct{}

var _ Device = None{}

// Service implements Device: zero.
func (None) Service(time.Duration, rw.Op, int64, int64, *rand.Rand) time.Duration { return 0 }

// SSD serves each access in a fixed latency plus its transfer; the command
// overhead is hidden for back-to-back commands.
type SSD struct {
	cfg  Config
	last time.Duration // end of the last access (-1: none)
}

var _ Device = (*SSD)(nil)

// Service implements Device.
func (s *SSD) Service(now time.Duration, op rw.Op, _ int64, length int64, _ *rand.Rand) time.Duration {
	if length <= 0 {
		return 0
	}
	var d time.Duration
	if now != s.last {
		d = s.cfg.CommandOverhead
	}
	if op == rw.Write {
		d += s.cfg.WriteLatency + rateDur(length, s.cfg.WriteRateBytesPerSec)
	} else {
		d += s.cfg.ReadLatency + rateDur(length, s.cfg.ReadRateBytesPerSec)
	}
	s.last = now + d
	return d
}

func rateDur(bytes int64, rate float64) time.Duration {
	return time.Duration(float64(bytes) / rate * 1e9)
}

// Array is a disk array behind a write log (see KindArray); it keeps no state.
type Array struct{ cfg Config }

var _ Device = Array{}

// Service implements Device.
func (a Array) Service(_ time.Duration, op rw.Op, _ int64, length int64, _ *rand.Rand) time.Duration {
	if length <= 0 {
		return 0
	}
	if op == rw.Write && length <= a.cfg.SmallWriteBytes {
		return a.cfg.SmallWriteLatency + rateDur(length, a.cfg.SmallWriteBytesPerSec)
	}
	return a.cfg.LargeLatency + rateDur(length, a.cfg.LargeBytesPerSec)
}

// segment is a read-cache segment holding [lo, hi).
type segment struct {
	lo, hi int64
	used   uint64 // LRU stamp; 0 = free
}

// HDD is the hard-disk model (see the package documentation).
type HDD struct {
	cfg      Config
	period   float64 // ns per revolution
	seekK    float64 // ns per sqrt(fraction of capacity)
	head     int64   // address under the head at lastDone
	lastDone time.Duration
	started  bool
	segs     []segment
	active   int   // segment being prefetched into (-1: none)
	prefAt   int64 // ns: time the active segment's hi was last set
	prefCap  int64 // address where the active prefetch stops
	stamp    uint64
	stats    Stats
}

// Stats counts how a device served its accesses.
type Stats struct {
	CacheHits  uint64 // reads served from the read cache
	Streamed   uint64 // reads that continued the read-ahead stream (no repositioning)
	ReadMisses uint64 // reads that repositioned the head
	Writes     uint64
}

// Minus returns s less t, field by field (counters since t was taken).
func (s Stats) Minus(t Stats) Stats {
	return Stats{CacheHits: s.CacheHits - t.CacheHits, Streamed: s.Streamed - t.Streamed,
		ReadMisses: s.ReadMisses - t.ReadMisses, Writes: s.Writes - t.Writes}
}

// Div returns s with every counter divided by n (a mean over n runs; n 0
// or 1: s).
func (s Stats) Div(n uint64) Stats {
	if n <= 1 {
		return s
	}
	return Stats{CacheHits: s.CacheHits / n, Streamed: s.Streamed / n, ReadMisses: s.ReadMisses / n, Writes: s.Writes / n}
}

// Plus returns s and t added field by field.
func (s Stats) Plus(t Stats) Stats {
	return Stats{CacheHits: s.CacheHits + t.CacheHits, Streamed: s.Streamed + t.Streamed,
		ReadMisses: s.ReadMisses + t.ReadMisses, Writes: s.Writes + t.Writes}
}

// StatsOf returns d's statistics (zero for devices that keep none).
func StatsOf(d Device) Stats {
	if h, ok := d.(*HDD); ok {
		return h.stats
	}
	return Stats{}
}

var _ Device = (*HDD)(nil)

func newHDD(cfg Config) *HDD {
	h := &HDD{cfg: cfg, active: -1, segs: make([]segment, cfg.CacheSegments)}
	h.period = 60e9 / cfg.RPM
	// Mean of sqrt(|U1-U2|) over uniform U1, U2 is 8/15: scale the curve so
	// that the mean random seek is AverageSeek.
	h.seekK = float64(cfg.AverageSeek-cfg.TrackToTrackSeek) / (8.0 / 15.0)
	return h
}

// rate is the media rate at addr in bytes per ns.
func (h *HDD) rate(addr int64) float64 {
	f := float64(addr) / float64(h.cfg.CapacityBytes)
	return (h.cfg.OuterRateBytesPerSec - (h.cfg.OuterRateBytesPerSec-h.cfg.InnerRateBytesPerSec)*f) / 1e9
}

// angle is the angular position of addr in revolutions, in [0, 1).
func (h *HDD) angle(addr int64) float64 {
	track := h.rate(addr) * h.period
	a := float64(addr) / track
	return a - math.Floor(a)
}

// rotWait is the time from t until addr passes under the head.
func (h *HDD) rotWait(t float64, addr int64) float64 {
	ha := t / h.period
	ha -= math.Floor(ha)
	w := h.angle(addr) - ha
	w -= math.Floor(w)
	w *= h.period
	if w > h.period-1e3 { // within 1 µs of a full turn: floating-point noise, it is right there
		w = 0
	}
	return w
}

// seek is the time to move from address a to b.
func (h *HDD) seek(a, b int64, op rw.Op, rng *rand.Rand) float64 {
	d := b - a
	if d < 0 {
		d = -d
	}
	if float64(d) < h.rate(b)*h.period { // same track
		return 0
	}
	s := float64(h.cfg.TrackToTrackSeek) + h.seekK*math.Sqrt(float64(d)/float64(h.cfg.CapacityBytes))
	if h.cfg.SeekJitter > 0 && rng != nil {
		s *= 1 + h.cfg.SeekJitter*(2*rng.Float64()-1)
	}
	if op == rw.Write {
		s += float64(h.cfg.WriteSettle)
	}
	return s
}

// frontier is the end of the active segment's data at time t.
func (h *HDD) frontier(t int64) int64 {
	s := &h.segs[h.active]
	f := s.hi
	if t > h.prefAt {
		f += int64(float64(t-h.prefAt) * h.rate(s.hi))
	}
	return min(f, max(h.prefCap, s.hi))
}

// stopPrefetch freezes the active segment at time t and returns the head's address.
func (h *HDD) stopPrefetch(t int64) int64 {
	if h.active < 0 {
		return h.head
	}
	s := &h.segs[h.active]
	s.hi = h.frontier(t)
	if s.hi-s.lo > h.cfg.SegmentBytes {
		s.lo = s.hi - h.cfg.SegmentBytes
	}
	h.active = -1
	return s.hi
}

// Service implements Device.
func (h *HDD) Service(now time.Duration, op rw.Op, addr, length int64, rng *rand.Rand) time.Duration {
	if length <= 0 {
		return 0
	}
	capb := h.cfg.CapacityBytes
	addr %= capb
	if addr < 0 {
		addr += capb
	}
	if addr+length > capb {
		addr = capb - length
		if addr < 0 {
			addr = 0
		}
	}
	t := int64(now)
	start := float64(t)
	if !h.started || now != h.lastDone {
		start += float64(h.cfg.CommandOverhead)
	}
	h.started = true
	h.stamp++
	end := addr + length
	var done float64
	if op == rw.Read {
		// Cache hit: in a segment (the active one up to its frontier).
		for i := range h.segs {
			s := &h.segs[i]
			if s.used == 0 {
				continue
			}
			hi := s.hi
			if i == h.active {
				hi = h.frontier(t)
			}
			if addr >= s.lo && end <= hi {
				s.used = h.stamp
				h.stats.CacheHits++
				done = start + float64(length)/h.cfg.InterfaceBytesPerSec*1e9
				return h.finish(now, done, -1)
			}
		}
		// Stream continuation: the read starts inside or just beyond the active prefetch.
		if h.active >= 0 {
			s := &h.segs[h.active]
			f := h.frontier(t)
			if addr >= s.lo && addr <= f+h.cfg.StreamGapBytes {
				done = max(start, float64(t)+float64(end-f)/h.rate(f))
				s.hi, s.used = end, h.stamp
				if s.hi-s.lo > h.cfg.SegmentBytes {
					s.lo = s.hi - h.cfg.SegmentBytes
				}
				h.prefAt = int64(done)
				h.prefCap = end + h.cfg.MaxPrefetchBytes
				h.head = end
				h.stats.Streamed++
				return h.finish(now, done, h.active)
			}
		}
		from := h.stopPrefetch(t)
		h.stats.ReadMisses++
		t1 := start + h.seek(from, addr, op, rng)
		w := h.rotWait(t1, addr)
		done = t1 + w + float64(length)/h.rate(addr)
		// New segment, least recently used replaced. While waiting for the
		// target sector the head passes the sectors before it, which the
		// disk keeps (read look-behind).
		v := 0
		for i := range h.segs {
			if h.segs[i].used < h.segs[v].used {
				v = i
			}
		}
		lo := addr
		if h.cfg.LookBehind {
			lo = max(0, addr-min(int64(w*h.rate(addr)), h.cfg.SegmentBytes/2))
		}
		h.segs[v] = segment{lo: lo, hi: end, used: h.stamp}
		h.active = v
		h.prefAt = int64(done)
		h.prefCap = end + h.cfg.MaxPrefetchBytes
		h.head = end
		return h.finish(now, done, v)
	}
	// Write through: drop overlapping cached data, then write to the platter.
	from := h.stopPrefetch(t)
	h.stats.Writes++
	for i := range h.segs {
		s := &h.segs[i]
		if s.used != 0 && addr < s.hi && end > s.lo {
			*s = segment{}
		}
	}
	t1 := start + h.seek(from, addr, op, rng)
	done = t1 + h.rotWait(t1, addr) + float64(length)/h.rate(addr)
	h.head = end
	return h.finish(now, done, -1)
}

func (h *HDD) finish(now time.Duration, done float64, active int) time.Duration {
	d := time.Duration(math.Ceil(done)) - now
	if d < 1 {
		d = 1
	}
	h.lastDone = now + d
	if active >= 0 {
		h.active = active
	}
	return d
}

// Placement maps a file's bytes on one data server to disk addresses: file
// handle f's share starts in region f mod Regions, regions StrideBytes apart
// from BaseBytes, so different files lie in different disk regions (as a
// local file system allocates files of one directory near each other).
type Placement struct {
	BaseBytes     int64 // address of region 0
	StrideBytes   int64 // distance between the regions of consecutive file handles
	Regions       int64 // regions before wrapping (>= 1)
	CapacityBytes int64 // addresses wrap modulo this
}

// DefaultPlacement uses regions 64 MiB apart starting at 1 GB, over the whole capacity.
func DefaultPlacement(capacityBytes int64) Placement {
	const stride = 64 << 20
	const base = 1e9
	r := (capacityBytes - base) / stride
	if r < 1 {
		return Placement{StrideBytes: stride, Regions: 1, CapacityBytes: max(capacityBytes, 1)}
	}
	return Placement{BaseBytes: base, StrideBytes: stride, Regions: r, CapacityBytes: capacityBytes}
}

// Addr returns the disk address of byte local of file's share on this server.
func (p Placement) Addr(file uint64, local int64) int64 {
	regions := p.Regions
	if regions < 1 {
		regions = 1
	}
	a := p.BaseBytes + int64(file%uint64(regions))*p.StrideBytes + local
	if p.CapacityBytes > 0 {
		a %= p.CapacityBytes
		if a < 0 {
			a += p.CapacityBytes
		}
	}
	return a
}
