package posix

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
)

var (
	_ backend.Locker    = (*Backend)(nil)
	_ backend.Allocator = (*Backend)(nil)
)

// heldKey is one holder's descriptor of a file: a forwarder's handle and
// the kind of lock (OFD record locks and flock(2) locks on separate open
// file descriptions, so that they stay apart as on a local file system).
type heldKey struct {
	b     *Backend
	key   uint64
	flock bool
}

// held maps each holder to the descriptor its locks are on.
var held = struct {
	sync.Mutex
	m map[heldKey]*os.File
}{m: map[heldKey]*os.File{}}

// Lock sets typ on [start, end] of path for holder key: open file
// description (OFD) locks, F_OFD_SETLK, on a descriptor of the holder's
// own, so that two forwarders over one file system (or any other program
// taking OFD or POSIX locks there) exclude each other; with flock, flock(2)
// on another descriptor. It never waits: a conflict is backend.ErrLocked.
func (b *Backend) Lock(ctx context.Context, path string, key uint64, flock bool, typ uint8, start, end int64) error {
	hk := heldKey{b: b, key: key, flock: flock}
	held.Lock()
	defer held.Unlock()
	f := held.m[hk]
	if f == nil {
		if typ == backend.LockUnlock {
			return nil
		}
		var err error
		if f, err = b.fs.OpenLockFile(path); err != nil {
			return err
		}
		held.m[hk] = f
	}
	fd := int(f.Fd())
	var err error
	if flock {
		how := unix.LOCK_UN
		switch typ {
		case backend.LockRead:
			how = unix.LOCK_SH | unix.LOCK_NB
		case backend.LockWrite:
			how = unix.LOCK_EX | unix.LOCK_NB
		}
		err = unix.Flock(fd, how)
	} else {
		lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: start}
		switch typ {
		case backend.LockRead:
			lk.Type = unix.F_RDLCK
		case backend.LockWrite:
			lk.Type = unix.F_WRLCK
		}
		if end != math.MaxInt64 {
			lk.Len = end - start + 1
		}
		err = unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES), errors.Is(err, unix.EWOULDBLOCK):
		return fmt.Errorf("%w: %s [%d, %d]", backend.ErrLocked, path, start, end)
	}
	return &os.PathError{Op: "lock", Path: path, Err: err}
}

// Unlock closes holder key's descriptor, which drops its locks.
func (b *Backend) Unlock(key uint64, flock bool) {
	hk := heldKey{b: b, key: key, flock: flock}
	held.Lock()
	defer held.Unlock()
	if f := held.m[hk]; f != nil {
		f.Close()
		delete(held.m, hk)
	}
}

// Allocate reserves [off, off+n) of path with fallocate(2) mode 0.
func (b *Backend) Allocate(ctx context.Context, path string, off, n int64) error {
	return b.fs.Allocate(path, off, n)
}
