package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// Err is the error of the shared-memory transport: every refusal of a
// region or of rings, on either side, wraps it.
var Err = errors.New("fwd: shared memory")

// Submission and completion rings in the shared region (docs/protocol.md,
// "Rings"). Over the shared-memory transport alone every request still
// costs a socket round trip: a sendmsg and a recvmsg on each side, and a
// wake-up of the peer's thread for each. With rings the client writes a
// read-shm or write-shm as a 64-byte entry into a submission ring, the
// daemon's ring poller picks it up, and the daemon posts a 16-byte
// completion into a completion ring that one goroutine of the client
// process polls for all its connections. Each side keeps polling while
// entries come (yielding the processor between sweeps) and for a few
// sweeps after, then sleeps and says so in the shared control block; the
// other side then sends one wake-up frame (OpWake) on the socket. Busy,
// neither side makes a system call per request; idle, both sleep in the
// kernel as before.
//
// Control block (offsets in bytes from the ring's start; each counter on
// its own cache line, host byte order, 32-bit counters that wrap):
//
//	  0 sq_tail  written by the client: entries submitted
//	 64 sq_head  written by the daemon: entries taken
//	128 cq_tail  written by the daemon: completions posted
//	192 cq_head  written by the client: completions taken
//	256 idle     written by the daemon: 1 while its poller sleeps
//	320 waiters  written by the client: non-zero while its reaper sleeps (callers wait on it)
//	512 submission entries (entries x 64 bytes), then completion entries (entries x 16 bytes)
//
// Every value the daemon reads from the region is checked: a counter out
// of range or a malformed entry ends the connection, as a malformed frame does.

// Offsets of the control block's counters (Rings.Counter).
const (
	OffSQTail  = 0
	OffSQHead  = 64
	OffCQTail  = 128
	OffCQHead  = 192
	OffIdle    = 256
	OffWaiters = 320
)

const (
	ringHeader = 512

	// SQESize and CQESize are the sizes of a submission and a completion
	// entry in bytes.
	SQESize = 64
	CQESize = 16

	// MinRingEntries and MaxRingEntries bound the entries of each ring.
	MinRingEntries = 8
	MaxRingEntries = 4096

	// DefaultPolls is how many sweeps finding nothing a poller (the
	// daemon's ring poller, a client process's completion reaper) makes,
	// yielding the processor between them, before it sleeps.
	DefaultPolls = 50
)

// DefaultSpin is how long a poller keeps sweeping, once its empty sweeps
// (DefaultPolls) have run out, before it sleeps: on an idle machine 50
// sweeps pass in a few microseconds, less than a synchronous client takes
// to send its next request, and every request then paid a wake-up frame
// each way (measured through the FUSE mount on 2 cores, one fio job of
// 32 KiB reads: 253 us median latency sleeping at once, 31 us polling).
// As Linux's busy polling of sockets, it trades CPU time for latency while
// requests come, and none once they stop. (With 16 busy clients in one
// process on 2 cores, 200 us took CPU from the workers: 50 us.)
const DefaultSpin = 50 * time.Microsecond

// RingBytes is the size of rings of n entries, control block included.
func RingBytes(n int) int { return ringHeader + n*(SQESize+CQESize) }

// ValidRingEntries reports whether n is a power of two within
// [MinRingEntries, MaxRingEntries].
func ValidRingEntries(n int64) bool {
	return n >= MinRingEntries && n <= MaxRingEntries && n&(n-1) == 0
}

// Rings is a view of the control block and entries in a mapped region.
type Rings struct {
	mem  []byte // exactly RingBytes(entries), 64-byte aligned
	n    uint32 // entries (power of two)
	mask uint32
}

// NewRings views mem (at least RingBytes(n) bytes, 64-byte aligned) as
// rings of n entries each.
func NewRings(mem []byte, n int) Rings {
	return Rings{mem: mem[:RingBytes(n):RingBytes(n)], n: uint32(n), mask: uint32(n - 1)}
}

// Entries is the number of entries of each ring.
func (r Rings) Entries() uint32 { return r.n }

// Counter returns the shared 32-bit counter at off (one of the Off constants).
func (r Rings) Counter(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&r.mem[off]))
}

// SQE returns submission entry i (modulo the ring's size).
func (r Rings) SQE(i uint32) []byte {
	o := ringHeader + int(i&r.mask)*SQESize
	return r.mem[o : o+SQESize]
}

// CQE returns completion entry i (modulo the ring's size).
func (r Rings) CQE(i uint32) []byte {
	o := ringHeader + int(r.n)*SQESize + int(i&r.mask)*CQESize
	return r.mem[o : o+CQESize]
}

// Submission entry layout (64 bytes): u8 op (read-shm or write-shm), 3
// bytes zero, u32 process, u64 id, u64 handle, i64 offset, i64 length,
// u64 shm_off, 16 bytes zero.

// PutSQE encodes a read-shm or write-shm request into b.
func PutSQE(b []byte, m *fwdproto.Msg) {
	ne := binary.NativeEndian
	clear(b)
	b[0] = byte(m.Op)
	ne.PutUint32(b[4:], m.Process)
	ne.PutUint64(b[8:], m.ID)
	ne.PutUint64(b[16:], m.Handle)
	ne.PutUint64(b[24:], uint64(m.Offset))
	ne.PutUint64(b[32:], uint64(m.Length))
	ne.PutUint64(b[40:], m.ShmOff)
}

// DecodeSQE decodes a submission entry; the daemon copies the entry out of
// the region first, so the client cannot change it while it is checked.
func DecodeSQE(b []byte, m *fwdproto.Msg) error {
	if len(b) != SQESize {
		return fmt.Errorf("%w: submission entry of %d bytes", fwdproto.ErrMalformed, len(b))
	}
	ne := binary.NativeEndian
	*m = fwdproto.Msg{Op: fwdproto.Op(b[0]), Process: ne.Uint32(b[4:]), ID: ne.Uint64(b[8:]), Handle: ne.Uint64(b[16:]),
		Offset: int64(ne.Uint64(b[24:])), Length: int64(ne.Uint64(b[32:])), ShmOff: ne.Uint64(b[40:])}
	if m.Op != fwdproto.OpReadShm && m.Op != fwdproto.OpWriteShm {
		return fmt.Errorf("%w: submission entry with operation %s (read-shm or write-shm only)", fwdproto.ErrMalformed, m.Op)
	}
	if m.Offset < 0 || m.Length < 0 {
		return fmt.Errorf("%w: submission entry with negative offset or length", fwdproto.ErrMalformed)
	}
	return nil
}

// Completion entry layout (16 bytes): u64 id, i64 bytes moved. Only
// successes complete through the ring; an error response is a frame on the
// socket (it carries a message).

// PutCQE encodes the completion of request id, which moved n bytes, into b.
func PutCQE(b []byte, id uint64, n int64) {
	binary.NativeEndian.PutUint64(b[0:], id)
	binary.NativeEndian.PutUint64(b[8:], uint64(n))
}

// DecodeCQE decodes a completion entry.
func DecodeCQE(b []byte) (id uint64, n int64) {
	return binary.NativeEndian.Uint64(b[0:]), int64(binary.NativeEndian.Uint64(b[8:]))
}

// WakeFrame (a client's doorbell: the daemon's poller sleeps) and
// WakeRespFrame (the daemon's wake: a client's callers sleep) are the
// encoded OpWake frames. Neither may be modified.
var (
	WakeFrame     = fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpWake})
	WakeRespFrame = fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpWake, Response: true})
)

// Spinner counts a poller's sweeps that found nothing since its last work
// and decides when it may sleep: after polls of them, and then spin of
// time. The clock is read once when the sweeps run out and then every 8
// sweeps, not on every sweep (nor at each entry: a busy poller goes from
// entry to entry without reading it). The zero Spinner is ready; it is
// used by one goroutine.
type Spinner struct {
	empty int
	since time.Time // when the polls ran out (zero: not yet)
}

// Reset starts counting again (the poller found work).
func (s *Spinner) Reset() { s.empty, s.since = 0, time.Time{} }

// More records one empty sweep and reports whether to keep sweeping
// (never with negative polls: sleep at once).
func (s *Spinner) More(polls int, spin time.Duration) bool {
	s.empty++
	if polls < 0 {
		return false
	}
	if s.empty <= polls {
		return true
	}
	if spin <= 0 {
		return false
	}
	if s.since.IsZero() {
		s.since = time.Now()
		return true
	}
	return s.empty&7 != 0 || time.Since(s.since) < spin
}
