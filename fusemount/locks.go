package fusemount

import (
	"context"
	"math"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// Locks through the mount: the kernel forwards fcntl record locks and
// flock (go-fuse's Getlk, Setlk, Setlkw; flock arrives as Setlk with
// FUSE_LK_FLOCK) and the mount hands them to the forwarder, which holds
// them for all its clients (fwd/locks). Without Options.LocalLocks.

var (
	_ interface {
		Getlk(context.Context, uint64, *fuse.FileLock, uint32, *fuse.FileLock) syscall.Errno
		Setlk(context.Context, uint64, *fuse.FileLock, uint32) syscall.Errno
		Setlkw(context.Context, uint64, *fuse.FileLock, uint32) syscall.Errno
		Allocate(context.Context, uint64, uint64, uint32) syscall.Errno
	} = (*handle)(nil)
)

// lockOwners are the POSIX lock owners (processes) that took locks on a
// file through this mount: a close by one of them (FUSE flush, which
// carries the owner) releases its locks on the file, as close(2) does.
type lockOwners struct {
	mu sync.Mutex
	m  map[uint64]bool
}

func (lo *lockOwners) add(o uint64) {
	lo.mu.Lock()
	if lo.m == nil {
		lo.m = map[uint64]bool{}
	}
	lo.m[o] = true
	lo.mu.Unlock()
}

func (lo *lockOwners) take(o uint64) bool {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	had := lo.m[o]
	delete(lo.m, o)
	return had
}

// flushOwners maps the cancel channel of a FUSE flush in progress to the
// lock owner the kernel sent with it (go-fuse's Flush passes no owner;
// rawFS puts it here and handle.Flush finds it by its context).
var flushOwners sync.Map

// rawFS passes each flush's lock owner to handle.Flush.
type rawFS struct{ fuse.RawFileSystem }

func (r rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	ch := make(chan struct{})
	flushOwners.Store((<-chan struct{})(ch), in.LockOwner)
	defer flushOwners.Delete((<-chan struct{})(ch))
	return r.RawFileSystem.Flush(ch, in)
}

// flushOwner is the lock owner of the flush whose context ctx is.
func flushOwner(ctx context.Context) (uint64, bool) {
	fc, ok := ctx.(*fuse.Context)
	if !ok {
		return 0, false
	}
	o, ok := flushOwners.Load(fc.Cancel)
	if !ok {
		return 0, false
	}
	return o.(uint64), true
}

// wireLock turns the kernel's lock into the protocol's.
func wireLock(owner uint64, lk *fuse.FileLock, flags uint32) fwdproto.LockArgs {
	a := fwdproto.LockArgs{Kind: fwdproto.LockPOSIX, Owner: owner, PID: lk.Pid, Start: int64(min(lk.Start, math.MaxInt64)), End: fwdproto.LockEOF}
	if flags&fuse.FUSE_LK_FLOCK != 0 {
		a.Kind, a.Start = fwdproto.LockFlock, 0
	} else if lk.End < math.MaxInt64 {
		a.End = int64(lk.End)
	}
	switch lk.Typ {
	case syscall.F_RDLCK:
		a.Type = fwdproto.LockRead
	case syscall.F_WRLCK:
		a.Type = fwdproto.LockWrite
	default:
		a.Type = fwdproto.LockUnlock
	}
	return a
}

func (h *handle) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	got, err := h.f.GetLock(wireLock(owner, lk, flags))
	if err != nil {
		return errno(err)
	}
	*out = fuse.FileLock{Typ: syscall.F_UNLCK}
	if got.Type != fwdproto.LockUnlock {
		out.Typ = syscall.F_RDLCK
		if got.Type == fwdproto.LockWrite {
			out.Typ = syscall.F_WRLCK
		}
		out.Start, out.End, out.Pid = uint64(got.Start), uint64(got.End), got.PID
	}
	return 0
}

func (h *handle) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.setlk(ctx, owner, lk, flags, false)
}

func (h *handle) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.setlk(ctx, owner, lk, flags, true)
}

func (h *handle) setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, wait bool) syscall.Errno {
	a := wireLock(owner, lk, flags)
	a.Wait = wait && a.Type != fwdproto.LockUnlock
	if a.Type == fwdproto.LockUnlock {
		// What was written under the lock reaches the forwarder before
		// another client can take it.
		if err := h.n.wb.drain(h.n); err != nil {
			return errno(err)
		}
	} else if a.Kind == fwdproto.LockFlock {
		h.flockOwner.Store(owner)
	} else {
		h.n.owners.add(owner)
	}
	err := h.f.Lock(ctx, a)
	if err == nil && a.Type != fwdproto.LockUnlock {
		h.n.locked() // cached pages may predate another node's writes under the lock (cache.go)
	}
	return errno(err)
}

// unlockOnFlush releases the POSIX locks of the closing process on the
// file (close(2) of any of its descriptors of the file does).
func (h *handle) unlockOnFlush(ctx context.Context) {
	o, ok := flushOwner(ctx)
	if !ok || !h.n.owners.take(o) {
		return
	}
	_ = h.f.Lock(context.Background(), fwdproto.LockArgs{Kind: fwdproto.LockPOSIX, Type: fwdproto.LockUnlock, Owner: o, Start: 0, End: fwdproto.LockEOF})
}

// unlockOnRelease releases the flock lock taken through this open file
// (its last descriptor is closed).
func (h *handle) unlockOnRelease() {
	if o := h.flockOwner.Load(); o != 0 {
		_ = h.f.Lock(context.Background(), fwdproto.LockArgs{Kind: fwdproto.LockFlock, Type: fwdproto.LockUnlock, Owner: o, Start: 0, End: fwdproto.LockEOF})
	}
}

// Allocate is fallocate(2) and posix_fallocate(3) of mode 0, through to
// the backend; other modes (punching holes, zeroing, keeping the size)
// are EOPNOTSUPP.
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if mode != 0 {
		return syscall.EOPNOTSUPP
	}
	if off > math.MaxInt64 || size > math.MaxInt64 || off+size > math.MaxInt64 {
		return syscall.EFBIG
	}
	if err := h.n.wb.drain(h.n); err != nil {
		return errno(err)
	}
	err := h.f.Allocate(int64(off), int64(size))
	h.n.dropPrefetched(int64(off), -1) // the file may have grown past its last block
	return errno(err)
}
