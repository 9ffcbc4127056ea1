package sched

import (
	"errors"
	"strconv"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// Request is one request to a PFS data server, as the I/O node's scheduler
// sees it. Offsets and lengths are in bytes; Arrival is the scheduler's clock
// (nanoseconds since an arbitrary origin: virtual time in the simulator,
// time since start in the daemon).
type Request struct {
	ID      uint64        // unique among queued and in-flight requests
	Queue   int           // data server the request targets, 0 <= Queue < Config.Servers
	File    uint64        // file handle
	Offset  int64         // byte offset in the file
	Length  int64         // bytes, > 0
	Op      rw.Op         // Read or Write
	Arrival time.Duration // when the request reached the scheduler
	App     uint32        // application / client id (for fairness and statistics)
}

// End returns Offset+Length.
func (r Request) End() int64 { return r.Offset + r.Length }

// Batch is what a scheduler hands out to be dispatched to one data server:
// one request, or several contiguous requests to the same file with the same
// operation aggregated into one access covering [Offset, Offset+Length).
//
// Requests is owned by the scheduler: it stays valid until Complete is called
// with the batch's ID, after which the scheduler may reuse it. A caller that
// needs the requests longer copies them.
type Batch struct {
	ID       uint64 // unique among in-flight batches; pass it to Complete
	Queue    int
	File     uint64
	Op       rw.Op
	Offset   int64
	Length   int64
	Requests []Request
}

// Scheduler is a request scheduler: a pure, deterministic state machine. It
// never sleeps, starts goroutines or reads the wall clock; the caller passes
// the current time to every method, and time must not go backwards.
// A Scheduler is not safe for concurrent use; the shell serialises calls.
type Scheduler interface {
	// Name is the registry name of the algorithm ("twins", "fifo", ...).
	Name() string
	// Add queues r at time now (a zero r.Arrival is set to now). It returns
	// an error (and queues nothing) for a request that is invalid:
	// non-positive length, negative offset, queue out of range, unknown
	// operation, id already queued or in flight.
	Add(now time.Duration, r Request) error
	// Next returns the next dispatchable batch at time now. If none is
	// dispatchable it returns ok=false and the earliest time worth asking
	// again (zero: nothing until the next Add or Complete).
	Next(now time.Duration) (b Batch, ok bool, retryAt time.Duration)
	// Complete reports that the batch with the given id finished at time now,
	// having moved bytes in took. It returns ErrUnknownBatch for an id that is
	// not in flight.
	Complete(now time.Duration, batchID uint64, bytes int64, took time.Duration) error
	// Len is the number of queued (not yet dispatched) requests.
	Len() int
	// InFlight is the number of dispatched batches not yet completed.
	InFlight() int
}

// Errors returned by schedulers. Wrapped errors carry details; test with errors.Is.
var (
	ErrBadLength    = errors.New("sched: request length must be positive")
	ErrBadOffset    = errors.New("sched: request offset must not be negative")
	ErrBadQueue     = errors.New("sched: queue id out of range")
	ErrDuplicateID  = errors.New("sched: duplicate request id")
	ErrUnknownBatch = errors.New("sched: completion for unknown batch")
	ErrUnknownAlgo  = errors.New("sched: unknown algorithm")
	ErrBadConfig    = errors.New("sched: invalid configuration")
)

// Windows are the seven TWINS time windows of the papers (Bez et al., FGCS 2020, V-A),
// the arms of the Council's bandits.
var Windows = []time.Duration{
	125 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	1 * time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond,
}

// WindowLabel formats a window the way the papers do: microseconds below a
// millisecond ("125µs"), milliseconds from one up ("1ms", "8ms", "1.5ms").
// It is the one label of a window in text, figures and reports.
func WindowLabel(w time.Duration) string {
	if w >= time.Millisecond {
		return strconv.FormatFloat(float64(w)/float64(time.Millisecond), 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(float64(w)/float64(time.Microsecond), 'f', -1, 64) + "µs"
}
