package fwd

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/locks"
)

// Errors of the lock operations, answered as CodeLocked and
// CodeInterrupted.
var (
	errLocked      = errors.New("fwd: a conflicting lock is held")
	errInterrupted = errors.New("fwd: lock wait cancelled")
	errSessionGone = errors.New("fwd: the session ended while waiting for a lock")
)

// lockPoll is how often a wait the table would grant but the backend
// refuses (another forwarder holds the range) is tried again.
const lockPoll = 10 * time.Millisecond

// lockMgr is the shell around the daemon's lock table: it names sessions,
// parks waiting requests, mirrors the table onto a backend that can lock
// (backend.Locker) and polls the backend for waits it refused. The zero
// value is ready.
type lockMgr struct {
	mu       sync.Mutex
	t        *locks.Table
	sessions map[*conn]uint64
	nextSess uint64
	nextWait uint64
	waits    map[uint64]*lockWait
	paths    map[locks.Key]string // each key's file, as last named (for the backend)
	polling  bool
}

type lockWait struct {
	key  locks.Key
	done chan error // buffered: the grant or the reason the wait ended
}

func (lm *lockMgr) init() {
	if lm.t == nil {
		lm.t = locks.NewTable()
		lm.sessions = map[*conn]uint64{}
		lm.waits = map[uint64]*lockWait{}
		lm.paths = map[locks.Key]string{}
	}
}

func (lm *lockMgr) session(c *conn) uint64 {
	s, ok := lm.sessions[c]
	if !ok {
		lm.nextSess++
		s = lm.nextSess
		lm.sessions[c] = s
	}
	return s
}

// lockOp serves lock, getlk and fallocate; ok is false for other
// operations.
func (c *conn) lockOp(m *fwdproto.Msg) (resp *fwdproto.Msg, err error, ok bool) {
	if m.Op != fwdproto.OpLock && m.Op != fwdproto.OpGetlk && m.Op != fwdproto.OpFallocate {
		return nil, nil, false
	}
	p, open := c.handlePath(m.Handle)
	if !open {
		return nil, &fwdproto.Error{Code: fwdproto.CodeBadHandle, Msg: fmt.Sprintf("handle %d is not open", m.Handle)}, true
	}
	if m.Op == fwdproto.OpFallocate {
		return &fwdproto.Msg{}, c.d.allocate(p, m), true
	}
	d := c.d
	a := m.Lock
	kind := locks.POSIX
	if a.Kind == fwdproto.LockFlock {
		kind, a.Start, a.End = locks.Flock, 0, locks.EOF
	}
	k := locks.Key{File: m.Handle, Kind: kind}
	lm := &d.locks
	lm.mu.Lock()
	lm.init()
	o := locks.Owner{Session: lm.session(c), ID: a.Owner}
	lm.paths[k] = p
	if a.Type == fwdproto.LockCancel {
		lm.cancelLocked(k, o)
		lm.mu.Unlock()
		return &fwdproto.Msg{}, nil, true
	}
	l := locks.Lock{Owner: o, Type: locks.Type(a.Type), Start: a.Start, End: a.End, PID: a.PID}
	if err := locks.Check(l); err != nil {
		lm.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", backend.ErrBadArgument, err), true
	}
	if m.Op == fwdproto.OpGetlk {
		h, held := lm.t.Test(k, l)
		lm.mu.Unlock()
		out := &fwdproto.Msg{}
		if held {
			out.Lock = fwdproto.LockArgs{Type: uint8(h.Type), PID: h.PID, Start: h.Start, End: h.End}
		}
		return out, nil, true
	}
	err = lm.setLocked(d, k, l)
	if err == nil {
		lm.grantLocked(d, k)
		lm.mu.Unlock()
		return &fwdproto.Msg{}, nil, true
	}
	if !a.Wait || !errors.Is(err, errLocked) {
		lm.mu.Unlock()
		return nil, err, true
	}
	lm.nextWait++
	id := lm.nextWait
	w := &lockWait{key: k, done: make(chan error, 1)}
	lm.waits[id] = w
	lm.t.Wait(k, id, l)
	if errors.Is(err, backend.ErrLocked) {
		lm.pollLocked(d)
	}
	lm.mu.Unlock()
	if err := <-w.done; err != nil {
		return nil, err, true
	}
	return &fwdproto.Msg{}, nil, true
}

// setLocked sets l in the table and on the backend, or changes nothing:
// errLocked (wrapping backend.ErrLocked when the backend refused).
func (lm *lockMgr) setLocked(d *Daemon, k locks.Key, l locks.Lock) error {
	before := lm.t.Locks(k)
	if c, ok := lm.t.Set(k, l); !ok {
		return fmt.Errorf("%w: %s lock of [%d, %d] by process %d", errLocked, c.Type, c.Start, c.End, c.PID)
	}
	if err := lm.mirrorLocked(d, k, l.Start, l.End); err != nil {
		lm.t.Restore(k, before)
		_ = lm.mirrorLocked(d, k, l.Start, l.End)
		if errors.Is(err, backend.ErrLocked) {
			return fmt.Errorf("%w: %w", errLocked, err)
		}
		return err
	}
	return nil
}

// mirrorLocked sets the table's coverage of [start, end] on the backend
// file, if the backend locks.
func (lm *lockMgr) mirrorLocked(d *Daemon, k locks.Key, start, end int64) error {
	lk, ok := d.be.(backend.Locker)
	if !ok {
		return nil
	}
	flock := k.Kind == locks.Flock
	if len(lm.t.Locks(k)) == 0 {
		lk.Unlock(k.File, flock)
		return nil
	}
	for _, s := range lm.t.Coverage(k, start, end) {
		if err := lk.Lock(d.ctx, lm.paths[k], k.File, flock, uint8(s.Type), s.Start, s.End); err != nil {
			return err
		}
	}
	return nil
}

// grantLocked grants, in arrival order, the waits on k that now can be.
func (lm *lockMgr) grantLocked(d *Daemon, k locks.Key) {
	for _, w := range lm.t.Grantable(k) {
		err := lm.setLocked(d, k, w.Lock)
		if errors.Is(err, errLocked) {
			if errors.Is(err, backend.ErrLocked) {
				lm.pollLocked(d)
			}
			continue
		}
		lm.t.Remove(w.ID)
		lm.waits[w.ID].done <- err
		delete(lm.waits, w.ID)
	}
}

// pollLocked arranges for the waits to be tried again after lockPoll.
func (lm *lockMgr) pollLocked(d *Daemon) {
	if lm.polling {
		return
	}
	lm.polling = true
	time.AfterFunc(lockPoll, func() {
		lm.mu.Lock()
		defer lm.mu.Unlock()
		lm.polling = false
		keys := map[locks.Key]bool{}
		for _, w := range lm.waits {
			keys[w.key] = true
		}
		for k := range keys { // each key's waits in their own order
			lm.grantLocked(d, k)
		}
	})
}

// cancelLocked ends owner's wait on k, if any: it is answered EINTR.
func (lm *lockMgr) cancelLocked(k locks.Key, o locks.Owner) {
	for _, w := range lm.t.Waiting(o.Session) {
		if w.Key == k && w.Lock.Owner == o {
			lm.t.Remove(w.ID)
			lm.waits[w.ID].done <- errInterrupted
			delete(lm.waits, w.ID)
		}
	}
}

// closed drops the locks c's owners hold on handle h, which c no longer
// has open.
func (lm *lockMgr) closed(c *conn, h uint64) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	s, ok := lm.sessions[c]
	if !ok {
		return
	}
	for _, kind := range []locks.Kind{locks.POSIX, locks.Flock} {
		k := locks.Key{File: h, Kind: kind}
		if lm.t.ReleaseFile(k, s) {
			_ = lm.mirrorLocked(c.d, k, 0, locks.EOF)
			lm.grantLocked(c.d, k)
		}
	}
}

// dropSession releases every lock of c and ends its waits: its
// connection is gone.
func (lm *lockMgr) dropSession(c *conn) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	s, ok := lm.sessions[c]
	if !ok {
		return
	}
	delete(lm.sessions, c)
	changed, dropped := lm.t.ReleaseSession(s)
	for _, w := range dropped {
		lm.waits[w.ID].done <- errSessionGone
		delete(lm.waits, w.ID)
	}
	for _, k := range changed {
		_ = lm.mirrorLocked(c.d, k, 0, locks.EOF)
		lm.grantLocked(c.d, k)
	}
}

// allocate reserves [Offset, Offset+Length) of the file at p: fallocate
// on a backend that can, else the size extended with truncate (the bytes
// read as zeros, but no space is reserved).
func (d *Daemon) allocate(p string, m *fwdproto.Msg) error {
	switch {
	case m.Mode != 0:
		return fmt.Errorf("%w: fallocate mode %#x (only mode 0 is supported)", backend.ErrUnsupported, m.Mode)
	case m.Offset < 0 || m.Length <= 0 || m.Offset > 1<<62 || m.Length > 1<<62:
		return fmt.Errorf("%w: fallocate of %d bytes at %d", backend.ErrBadArgument, m.Length, m.Offset)
	}
	ctx := d.ctx
	if a, ok := d.be.(backend.Allocator); ok {
		return a.Allocate(ctx, p, m.Offset, m.Length)
	}
	fi, err := d.be.Stat(ctx, p)
	if err != nil {
		return err
	}
	if end := m.Offset + m.Length; end > fi.Size {
		return d.be.Truncate(ctx, p, end)
	}
	return nil
}
