package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("sim: invalid configuration")

// Config describes one simulated experiment. Zero fields take the defaults
// listed (the papers' platform, Bez et al., FGCS 2020, V-A and Bez et al., SBAC-PAD 2019, III-A); New fills
// them and validates.
type Config struct {
	// Patterns run back to back; each starts when every process of the
	// previous one has finished (a barrier), on the same files (file i of
	// every pattern is the same file), so a write can be read back.
	Patterns []workload.Pattern
	// Traces, instead of Patterns, replay recorded workloads back to back,
	// with the same barrier: each process issues its requests in order, one
	// at a time, each after its think time (workload.Request). A file keeps
	// its name's identity from trace to trace. Patterns or Traces, not both.
	Traces []workload.Trace
	// Jobs, instead of Patterns and Traces, run several applications at
	// once on the same I/O nodes, each with its own patterns, files and
	// barriers (jobs.go); requests carry their job's name to the QoS gate.
	Jobs []Job
	// JobsFor, with Jobs, makes every job repeat its patterns until this
	// virtual time, and counts each job's bytes up to it: shares of a node
	// kept busy (0: each job runs its patterns once).
	JobsFor time.Duration
	// QoS, if set, puts the daemon's QoS gate (package qos: TBF-style
	// rules, deficit round robin between jobs under saturation) in front
	// of every I/O node's scheduler.
	QoS *QoS

	IONodes     int   // I/O nodes (default 1)
	ClientNodes int   // client (compute) nodes (default 32); processes are spread evenly over them in blocks, nodes over I/O nodes in blocks
	Servers     int   // PFS data servers (default 4)
	StripeBytes int64 // PFS stripe size (default 64 KiB, PVFS's)

	Scheduler string        // I/O node scheduler from the sched registry (default "twins")
	Window    time.Duration // TWINS window (default 1 ms)
	// Threads bounds the accesses an I/O node has in flight to the data
	// servers (dispatch slots). IOFSL's 4 to 16 worker threads issue PVFS
	// operations asynchronously, so the bound in practice is the clients'
	// outstanding requests: default 512, the largest process count of the grid.
	Threads int
	// Aggregate is the most requests a dispatcher thread merges into one
	// access: it keeps taking batches from the scheduler while they continue
	// the same file contiguously on the same server (default 16, IOFSL's;
	// 1: no aggregation).
	Aggregate int
	// DispatchDelay is how long an I/O node with free dispatcher threads
	// takes to dispatch after a request arrives (0, the default: at once).
	// A real daemon's worker wakes some time after it is signalled, on a
	// shared host up to hundreds of microseconds, and finds the requests
	// that arrived meanwhile queued: with a delay they are queued here too,
	// so FIFO merges them and a node's burst reaches a data server as a
	// run. A completion dispatches at once (a busy worker takes the next
	// access without waking). A calibration of the host the real stack
	// runs on, for comparisons with it (adaptio demo --rank).
	DispatchDelay time.Duration

	Disk      disk.Config     // data server device (default: disk.DefaultConfig("hdd"))
	Placement *disk.Placement // file placement on the data servers' disks (nil: disk.DefaultPlacement)

	NetBytesPerSec float64       // every link's bandwidth (default 1.25e9: 10 Gb/s Ethernet)
	NetLatency     time.Duration // one-way latency of a message (default 30 µs)
	HeaderBytes    int64         // size of a message without data (default 512 bytes)
	ServerOverhead time.Duration // data server CPU time per access before the disk (default 30 µs)
	// ReadAheadBytes is the data servers' page-cache read-ahead: reads go
	// through the page cache, and a read that misses it reads whole aligned
	// chunks of this size from the disk (default 128 KiB, Linux's
	// read_ahead_kb; negative: reads go to the disk directly). Writes bypass
	// the cache (O_DIRECT, as in the papers) and invalidate cached chunks.
	ReadAheadBytes int64
	// ReadMerge is the most page-cache chunks one disk read covers when
	// the block layer merges a miss with the adjacent missing chunks that
	// reads queued at the same server demand (front and back merges of
	// queued requests, up to max_sectors_kb; default 8 chunks, 1 MiB;
	// negative or 1: no merging). Only demanded chunks are merged: nothing
	// is read that no queued access asked for.
	ReadMerge int
	// Elevator makes each data server serve its queued accesses in C-LOOK
	// order of disk address (the Linux block layer's sorting) instead of
	// arrival order. Not with FileConcurrency.
	Elevator bool
	// CacheCopyBytesPerSec is the rate at which a data server serves page-cache hits (default 4e9).
	CacheCopyBytesPerSec float64
	// Contention is the extra data server time per access for each I/O node
	// beyond the first with requests at that server (queued or in service):
	// an alternative to SwitchCost for interleaved connections and flows
	// (zero or negative: none, the default).
	Contention time.Duration
	// SwitchCost is the extra data server time of an access whose batch
	// comes from another I/O node than the previous access's: the switch
	// between the flows and the disk streams of different nodes (default
	// DefaultSwitchCost, calibrated in docs/simulator.md; negative: none).
	SwitchCost time.Duration
	// TokenCost is the extra data server time of an access to the same file
	// as the previous access from another I/O node: a lock token moving
	// between clients, as in GPFS (default 0: none, as in PVFS, which has no
	// locks).
	TokenCost time.Duration
	// FileConcurrency is the most accesses to one file served at once
	// across all data servers (0: no limit, as in PVFS). A GPFS-like file
	// system limits concurrent direct writes to a shared file (byte-range
	// tokens, block allocation).
	FileConcurrency int
	// AlignedWindows makes TWINS windows slots of the virtual clock
	// (sched.Config.Aligned) instead of the reference's drifting windows.
	AlignedWindows bool
	// ServerTimeScale multiplies every data server's service time
	// (dataserver.Config.TimeScale; default 1).
	ServerTimeScale float64
	StartJitter     time.Duration // each process starts each pattern after a uniform delay in [0, StartJitter) (default 100 µs)

	Interval time.Duration // observation interval (default 1 s, the Announcer's)
	Seed     uint64        // seed of every random stream
	MaxTime  time.Duration // stop a run that has not finished by this virtual time (default 24 h)
}

// Defaults.
const (
	DefaultClientNodes    = 32
	DefaultServers        = 4
	DefaultStripeBytes    = 64 << 10
	DefaultScheduler      = "twins"
	DefaultThreads        = 512
	DefaultAggregate      = 16
	DefaultNetBytesPerSec = 1.25e9
	DefaultNetLatency     = 30 * time.Microsecond
	DefaultHeaderBytes    = 512
	DefaultServerOverhead = dataserver.DefaultOverhead
	DefaultStartJitter    = 100 * time.Microsecond
	DefaultSwitchCost     = dataserver.DefaultSwitchCost
	DefaultInterval       = time.Second

	DefaultReadAheadBytes       = dataserver.DefaultReadAheadBytes
	DefaultReadMerge            = dataserver.DefaultReadMerge
	DefaultCacheCopyBytesPerSec = dataserver.DefaultCacheCopyBytesPerSec
	DefaultMaxTime              = 24 * time.Hour
)

// DataServer is the data-server model's configuration (package
// dataserver, shared with the emulated PFS) that c describes.
func (c Config) DataServer() dataserver.Config {
	return dataserver.Config{Overhead: c.ServerOverhead, SwitchCost: c.SwitchCost, TokenCost: c.TokenCost,
		Contention: c.Contention, ReadAheadBytes: c.ReadAheadBytes, ReadMerge: c.ReadMerge,
		CacheCopyBytesPerSec: c.CacheCopyBytesPerSec, Elevator: c.Elevator, TimeScale: c.ServerTimeScale}
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.IONodes == 0 {
		c.IONodes = 1
	}
	if c.ClientNodes == 0 {
		c.ClientNodes = DefaultClientNodes
	}
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.StripeBytes == 0 {
		c.StripeBytes = DefaultStripeBytes
	}
	if c.Scheduler == "" {
		c.Scheduler = DefaultScheduler
	}
	if c.Window == 0 {
		c.Window = sched.DefaultWindow
	}
	if c.Aggregate == 0 {
		c.Aggregate = DefaultAggregate
	}
	if c.Threads == 0 {
		c.Threads = DefaultThreads
	}
	if c.Disk.Kind == "" {
		c.Disk, _ = disk.DefaultConfig(disk.KindHDD)
	}
	if c.NetBytesPerSec == 0 {
		c.NetBytesPerSec = DefaultNetBytesPerSec
	}
	if c.NetLatency == 0 {
		c.NetLatency = DefaultNetLatency
	}
	if c.HeaderBytes == 0 {
		c.HeaderBytes = DefaultHeaderBytes
	}
	if c.StartJitter == 0 {
		c.StartJitter = DefaultStartJitter
	}
	// The data server's parameters take the data-server model's defaults.
	ds := c.DataServer().WithDefaults()
	c.ServerOverhead, c.SwitchCost, c.ReadAheadBytes = ds.Overhead, ds.SwitchCost, ds.ReadAheadBytes
	c.ReadMerge, c.CacheCopyBytesPerSec, c.ServerTimeScale = ds.ReadMerge, ds.CacheCopyBytesPerSec, ds.TimeScale
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.MaxTime == 0 {
		c.MaxTime = DefaultMaxTime
	}
	return c
}

// Validate checks a Config after defaults.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	if len(c.Jobs) > 0 {
		if err := c.validateJobs(); err != nil {
			return err
		}
	} else if len(c.Patterns) == 0 && len(c.Traces) == 0 {
		return bad("no pattern, trace or job")
	}
	if len(c.Patterns) > 0 && len(c.Traces) > 0 {
		return bad("both patterns and traces: one kind of workload per run")
	}
	for i, t := range c.Traces {
		if t == nil || t.Processes() < 1 || t.Processes() > math.MaxInt32 {
			return bad("trace %d: no process, or more than %d", i, math.MaxInt32)
		}
	}
	for i, p := range c.Patterns {
		if err := p.Validate(); err != nil {
			return bad("pattern %d: %v", i, err)
		}
	}
	switch {
	case c.IONodes < 1:
		return bad("IONodes = %d, want >= 1", c.IONodes)
	case c.ClientNodes < 1:
		return bad("ClientNodes = %d, want >= 1", c.ClientNodes)
	case c.Servers < 1 || c.Servers > 255:
		return bad("Servers = %d, want 1..255", c.Servers)
	case c.StripeBytes <= 0:
		return bad("StripeBytes = %d, want > 0", c.StripeBytes)
	case c.Window <= 0:
		return bad("Window = %v, want > 0", c.Window)
	case c.FileConcurrency < 0:
		return bad("FileConcurrency = %d, want >= 0", c.FileConcurrency)
	case c.Aggregate < 1:
		return bad("Aggregate = %d, want >= 1", c.Aggregate)
	case c.Threads < 1:
		return bad("Threads = %d, want >= 1", c.Threads)
	case !(c.CacheCopyBytesPerSec > 0):
		return bad("CacheCopyBytesPerSec = %v, want > 0", c.CacheCopyBytesPerSec)
	case !(c.NetBytesPerSec > 0):
		return bad("NetBytesPerSec = %v, want > 0", c.NetBytesPerSec)
	case c.NetLatency < 0 || c.TokenCost < 0 || c.ServerOverhead < 0 || c.StartJitter < 0 || c.HeaderBytes < 0 || c.DispatchDelay < 0:
		return bad("negative latency, overhead, jitter or header size")
	case c.Interval <= 0:
		return bad("Interval = %v, want > 0", c.Interval)
	case c.MaxTime <= 0:
		return bad("MaxTime = %v, want > 0", c.MaxTime)
	}
	if err := c.DataServer().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if err := c.Disk.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return nil
}
