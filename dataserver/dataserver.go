// Package dataserver is the model of one PFS data server that the simulator
// (virtual time) and the emulated PFS (wall-clock time) share: a queue of
// accesses from I/O nodes served one at a time, in arrival order or in
// C-LOOK order of disk address; a page cache with read-ahead for reads,
// whose misses merge with the adjacent misses of queued reads; the device
// (package disk); the server's CPU time per access; and the cost of
// interleaving I/O nodes, the contention TWINS exists to remove: an access
// whose I/O node differs from the previous access's pays SwitchCost (and
// TokenCost on top when it is the same file).
//
// It is a pure state machine: the caller passes the time, owns the events
// and the real I/O, and asks how long each access takes:
//
//	s.Arrive(a)                      // an access reaches the server
//	a, d, ok := s.Start(now)         // the server takes the next access; it ends at now+d
//	...                              // (virtual time: an event at now+d; wall clock: do the I/O, sleep until then)
//	s.Done()                         // the access finished; Start the next one
package dataserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/internal/ring"
	"github.com/adaptio/adaptio/rw"
)

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("dataserver: invalid configuration")

// Config holds the model's parameters. Zero fields take the defaults
// below (WithDefaults); docs/simulator.md gives their sources.
type Config struct {
	// Overhead is the server's CPU time per access before the device
	// (default 30 µs; negative: none).
	Overhead time.Duration
	// SwitchCost is the extra time of an access whose I/O node differs
	// from the previous access's (default DefaultSwitchCost; negative:
	// none).
	SwitchCost time.Duration
	// TokenCost is the extra time of such an access to the same file as
	// the previous access (a lock token moving between clients, as in
	// GPFS; default 0).
	TokenCost time.Duration
	// Contention is the extra time per access for each I/O node beyond
	// the first with accesses queued or in service here (default 0: none).
	Contention time.Duration
	// ReadAheadBytes is the page cache's chunk: a read that misses reads
	// whole aligned chunks (default 128 KiB; negative: no page cache, reads
	// go to the device). Writes go through to the device and invalidate
	// cached chunks.
	ReadAheadBytes int64
	// ReadMerge is the most chunks one device read covers when a miss is
	// merged with the adjacent missing chunks that queued reads demand
	// (default 8; 1 or negative: no merging).
	ReadMerge int
	// CacheCopyBytesPerSec is the rate of page-cache hits (default 4e9).
	CacheCopyBytesPerSec float64
	// Elevator serves queued accesses in C-LOOK order of disk address
	// instead of arrival order.
	Elevator bool
	// TimeScale multiplies every service time the model gives (default 1:
	// as modelled; 3: a server three times slower in every respect).
	TimeScale float64
}

// Defaults.
const (
	DefaultOverhead             = 30 * time.Microsecond
	DefaultSwitchCost           = 300 * time.Microsecond
	DefaultReadAheadBytes       = 128 << 10
	DefaultReadMerge            = 8
	DefaultCacheCopyBytesPerSec = 4e9
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Overhead == 0 {
		c.Overhead = DefaultOverhead
	}
	if c.SwitchCost == 0 {
		c.SwitchCost = DefaultSwitchCost
	}
	if c.ReadAheadBytes == 0 {
		c.ReadAheadBytes = DefaultReadAheadBytes
	}
	if c.ReadMerge == 0 {
		c.ReadMerge = DefaultReadMerge
	}
	if c.CacheCopyBytesPerSec == 0 {
		c.CacheCopyBytesPerSec = DefaultCacheCopyBytesPerSec
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	return c
}

// Validate checks c after defaults.
func (c Config) Validate() error {
	switch {
	case c.TokenCost < 0:
		return fmt.Errorf("%w: negative token cost", ErrBadConfig)
	case !(c.CacheCopyBytesPerSec > 0):
		return fmt.Errorf("%w: cache copy rate %v, want > 0", ErrBadConfig, c.CacheCopyBytesPerSec)
	case !(c.TimeScale > 0) || c.TimeScale > 1000:
		return fmt.Errorf("%w: time scale %v, want in (0, 1000]", ErrBadConfig, c.TimeScale)
	}
	return nil
}

// Access is one request a data server serves.
type Access struct {
	Node   int    // I/O node that sent it (negative: unknown, one node)
	File   uint64 // file handle (disk placement and page-cache key)
	Op     rw.Op  // Read or Write
	Offset int64  // in the server's local (object) bytes of the file
	Length int64
	Tag    int64 // the caller's, returned unchanged
}

// Stats describe a server since New.
type Stats struct {
	Accesses uint64        // accesses served
	Switches uint64        // accesses from another I/O node than the previous one
	Busy     time.Duration // modelled service time
	// PageHits and PageMisses count page-cache chunks found in and read
	// into the cache.
	PageHits, PageMisses uint64
	Disk                 disk.Stats
}

// Plus returns s and t added field by field (several servers together).
func (s Stats) Plus(t Stats) Stats {
	return Stats{Accesses: s.Accesses + t.Accesses, Switches: s.Switches + t.Switches, Busy: s.Busy + t.Busy,
		PageHits: s.PageHits + t.PageHits, PageMisses: s.PageMisses + t.PageMisses, Disk: s.Disk.Plus(t.Disk)}
}

// Div returns s with every counter divided by n (a mean over n runs; n 0
// or 1: s).
func (s Stats) Div(n uint64) Stats {
	if n <= 1 {
		return s
	}
	return Stats{Accesses: s.Accesses / n, Switches: s.Switches / n, Busy: s.Busy / time.Duration(n),
		PageHits: s.PageHits / n, PageMisses: s.PageMisses / n, Disk: s.Disk.Div(n)}
}

// Minus returns s less t field by field (the counters since t was taken).
func (s Stats) Minus(t Stats) Stats {
	return Stats{Accesses: s.Accesses - t.Accesses, Switches: s.Switches - t.Switches, Busy: s.Busy - t.Busy,
		PageHits: s.PageHits - t.PageHits, PageMisses: s.PageMisses - t.PageMisses, Disk: s.Disk.Minus(t.Disk)}
}

// Server is one data server's model. Not safe for concurrent use.
type Server struct {
	cfg   Config
	dev   disk.Device // nil: free
	place disk.Placement
	rng   *rand.Rand

	queue    ring.Ring[Access]
	busy     bool
	cur      Access
	headAddr int64
	perNode  map[int]int32 // accesses queued or in service per I/O node
	last     int           // I/O node of the previous access (lastSet)
	lastSet  bool
	lastFile uint64
	cache    map[uint64]struct{} // chunks: file<<40 | chunk index
	queued   map[uint64]int32    // queued reads demanding each chunk
	st       Stats
}

// New returns an idle server with an empty cache. dev may be nil (no
// device time); rng drives the device's jitter (nil: none).
func New(cfg Config, dev disk.Device, place disk.Placement, rng *rand.Rand) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, dev: dev, place: place, rng: rng, perNode: map[int]int32{},
		cache: map[uint64]struct{}{}, queued: map[uint64]int32{}}, nil
}

// Config returns the configuration in force (with defaults).
func (s *Server) Config() Config { return s.cfg }

// Len is the number of accesses queued (not counting the one in service).
func (s *Server) Len() int { return s.queue.Len() }

// Busy reports whether an access is in service.
func (s *Server) Busy() bool { return s.busy }

// Head returns the access Start would take next in arrival order (the
// queue's head), without taking it.
func (s *Server) Head() (Access, bool) {
	if s.queue.Len() == 0 {
		return Access{}, false
	}
	return *s.queue.Peek(), true
}

// Arrive queues an access.
func (s *Server) Arrive(a Access) {
	s.queue.Push(a)
	s.demand(a, 1)
	s.perNode[a.Node]++
}

// Start takes the next access (the server must be idle and the queue not
// empty; ok is false otherwise) at time now and returns it with its
// service time.
func (s *Server) Start(now time.Duration) (a Access, service time.Duration, ok bool) {
	if s.busy || s.queue.Len() == 0 {
		return Access{}, 0, false
	}
	if s.cfg.Elevator && s.queue.Len() > 1 {
		// C-LOOK: the queued access at or after the head's address with
		// the lowest address, else the lowest address (arrival order on
		// ties).
		best, bestKey := 0, uint64(0)
		for i := range s.queue.Len() {
			q := s.queue.At(i)
			k := uint64(s.place.Addr(q.File, q.Offset))
			if k < uint64(s.headAddr) {
				k += 1 << 63
			}
			if i == 0 || k < bestKey {
				best, bestKey = i, k
			}
		}
		a = s.queue.Remove(best)
	} else {
		a = s.queue.Pop()
	}
	s.busy, s.cur = true, a
	s.demand(a, -1)
	d := s.access(now, a)
	s.headAddr = s.place.Addr(a.File, a.Offset+a.Length)
	d += max(0, s.cfg.Overhead) + time.Duration(len(s.perNode)-1)*max(0, s.cfg.Contention)
	s.st.Accesses++
	if !s.lastSet || a.Node != s.last {
		if s.lastSet {
			s.st.Switches++
			d += max(0, s.cfg.SwitchCost)
			if a.File == s.lastFile {
				d += s.cfg.TokenCost
			}
		}
		s.last, s.lastSet = a.Node, true
	}
	s.lastFile = a.File
	if s.cfg.TimeScale != 1 {
		d = time.Duration(float64(d) * s.cfg.TimeScale)
	}
	s.st.Busy += d
	return a, d, true
}

// Done ends the access in service and returns it.
func (s *Server) Done() Access {
	a := s.cur
	if !s.busy {
		return a
	}
	s.busy, s.cur = false, Access{}
	if s.perNode[a.Node]--; s.perNode[a.Node] <= 0 {
		delete(s.perNode, a.Node)
	}
	return a
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	st := s.st
	if s.dev != nil {
		st.Disk = disk.StatsOf(s.dev)
	}
	return st
}

func (s *Server) device(now time.Duration, op rw.Op, addr, length int64) time.Duration {
	if s.dev == nil {
		return 0
	}
	return s.dev.Service(now, op, addr, length, s.rng)
}

// access is the page-cache and device time of a.
func (s *Server) access(now time.Duration, a Access) time.Duration {
	ra := s.cfg.ReadAheadBytes
	if ra <= 0 || a.Length <= 0 {
		return s.device(now, a.Op, s.place.Addr(a.File, a.Offset), a.Length)
	}
	first, last := a.Offset/ra, (a.Offset+a.Length-1)/ra
	key := a.File << 40
	if a.Op == rw.Write {
		for c := first; c <= last; c++ {
			delete(s.cache, key|uint64(c))
		}
		return s.device(now, a.Op, s.place.Addr(a.File, a.Offset), a.Length)
	}
	d := time.Duration(float64(a.Length) / s.cfg.CacheCopyBytesPerSec * 1e9)
	for c := first; c <= last; {
		if s.cached(key | uint64(c)) {
			s.st.PageHits++
			c++
			continue
		}
		// Read the run of missing chunks in one device access, merged with
		// the adjacent missing chunks that queued reads demand (the block
		// layer's front and back merges), up to ReadMerge chunks.
		b, e := c, c
		for e+1 <= last && !s.cached(key|uint64(e+1)) {
			e++
		}
		for lim := int64(s.cfg.ReadMerge); e-b+1 < lim; {
			switch {
			case s.queued[key|uint64(e+1)] > 0 && !s.cached(key|uint64(e+1)):
				e++
			case b > 0 && s.queued[key|uint64(b-1)] > 0 && !s.cached(key|uint64(b-1)):
				b--
			default:
				lim = 0
			}
		}
		for x := b; x <= e; x++ {
			s.cache[key|uint64(x)] = struct{}{}
		}
		s.st.PageMisses++
		d += s.device(now+d, rw.Read, s.place.Addr(a.File, b*ra), (e-b+1)*ra)
		c = e + 1
	}
	return d
}

func (s *Server) cached(chunk uint64) bool {
	_, ok := s.cache[chunk]
	return ok
}

// demand adds delta to the count of queued reads demanding each page-cache
// chunk of a (queued-read merging).
func (s *Server) demand(a Access, delta int32) {
	ra := s.cfg.ReadAheadBytes
	if ra <= 0 || s.cfg.ReadMerge <= 1 || a.Op != rw.Read || a.Length <= 0 {
		return
	}
	key := a.File << 40
	for c := a.Offset / ra; c <= (a.Offset+a.Length-1)/ra; c++ {
		k := key | uint64(c)
		if n := s.queued[k] + delta; n > 0 {
			s.queued[k] = n
		} else {
			delete(s.queued, k)
		}
	}
}

// Cached calls f for every chunk in the page cache: the file and the
// chunk's index (offset / ReadAheadBytes), in no particular order.
func (s *Server) Cached(f func(file uint64, chunk int64)) {
	for k := range s.cache {
		f(k>>40, int64(k&(1<<40-1)))
	}
}
