package fwdproto

// LockArgs is a file lock on the wire (operations lock and getlk,
// version 4).
type LockArgs struct {
	Kind  uint8  // LockPOSIX or LockFlock
	Type  uint8  // LockUnlock, LockRead, LockWrite; lock requests also LockCancel
	Wait  bool   // lock: wait until granted (F_SETLKW) instead of answering CodeLocked
	PID   uint32 // the process setting the lock (getlk response: the holder's)
	Owner uint64 // the client's lock owner: a process (POSIX) or an open file (flock)
	Start int64  // first byte
	End   int64  // last byte, inclusive; LockEOF: to the end of the file
}

// Lock kinds and types on the wire.
const (
	LockPOSIX uint8 = 1
	LockFlock uint8 = 2

	LockUnlock uint8 = 0
	LockRead   uint8 = 1
	LockWrite  uint8 = 2
	// LockCancel, in a lock request, ends the wait of the owner's waiting
	// request on the handle: that request is answered CodeInterrupted.
	LockCancel uint8 = 3

	// LockEOF is End for a lock to the end of the file (2^63-1).
	LockEOF int64 = 1<<63 - 1
)

// OpVersion is the protocol version that introduced op: the version its
// frames carry.
func OpVersion(op Op) uint8 {
	if op >= OpJob {
		return 5
	}
	if op >= OpLock {
		return 4
	}
	return 3
}

// appendV4 encodes the payloads of version 4's operations.
func appendV4(e *enc, m *Msg) {
	if m.Response {
		if m.Op == OpGetlk {
			e.u8(m.Lock.Type)
			e.u32(m.Lock.PID)
			e.u64(uint64(m.Lock.Start))
			e.u64(uint64(m.Lock.End))
		}
		return
	}
	switch m.Op {
	case OpLock, OpGetlk:
		e.u64(m.Handle)
		e.u64(m.Lock.Owner)
		e.u8(m.Lock.Kind)
		e.u8(m.Lock.Type)
		if m.Lock.Wait {
			e.u8(1)
		} else {
			e.u8(0)
		}
		e.u32(m.Lock.PID)
		e.u64(uint64(m.Lock.Start))
		e.u64(uint64(m.Lock.End))
	case OpFallocate:
		e.u64(m.Handle)
		e.u32(m.Mode)
		e.u64(uint64(m.Offset))
		e.u64(uint64(m.Length))
	default:
		appendV5(e, m)
	}
}

// decodeV4 decodes the payloads of version 4's operations; enumerations
// out of range are malformed.
func decodeV4(d *dec, m *Msg) {
	if m.Response {
		if m.Op == OpGetlk {
			m.Lock.Type = d.u8()
			m.Lock.PID = d.u32()
			m.Lock.Start = d.i64()
			m.Lock.End = d.i64()
			if m.Lock.Type > LockWrite {
				d.err = true
			}
		}
		return
	}
	switch m.Op {
	case OpLock, OpGetlk:
		m.Handle = d.u64()
		m.Lock.Owner = d.u64()
		m.Lock.Kind = d.u8()
		m.Lock.Type = d.u8()
		w := d.u8()
		m.Lock.Wait = w == 1
		m.Lock.PID = d.u32()
		m.Lock.Start = d.i64()
		m.Lock.End = d.i64()
		if (m.Lock.Kind != LockPOSIX && m.Lock.Kind != LockFlock) || m.Lock.Type > LockCancel || w > 1 ||
			(m.Op == OpGetlk && (m.Lock.Type == LockCancel || w != 0)) {
			d.err = true
		}
	case OpFallocate:
		m.Handle = d.u64()
		m.Mode = d.u32()
		m.Offset = d.i64()
		m.Length = d.i64()
	default:
		decodeV5(d, m)
	}
}
