package client

import (
	"context"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// cancelEvery is how often Lock repeats the cancellation of a wait until
// its answer arrives (the cancel may reach the daemon before the wait).
const cancelEvery = 20 * time.Millisecond

// Lock sets, changes or releases a lock on the file, held by the daemon
// for all its clients (docs/protocol.md, operation lock). l.Owner names
// the holder within this client (a process for POSIX locks, an open file
// for flock); locks of one owner never conflict. Without l.Wait a
// conflicting lock fails at once with an error of code CodeLocked; with
// it Lock waits until the lock is granted or ctx is done, in which case
// the daemon is told to stop waiting and Lock returns an error of code
// CodeInterrupted (or nil if the grant came first). The daemon drops a
// client's locks when its connection ends, so a reconnect loses them; a
// lock request is never repeated on a new connection.
func (f *File) Lock(ctx context.Context, l fwdproto.LockArgs) error {
	m := &fwdproto.Msg{Op: fwdproto.OpLock, Lock: l}
	done := make(chan struct{})
	if l.Wait {
		go func() {
			select {
			case <-done:
				return
			case <-ctx.Done():
			}
			for {
				cm := &fwdproto.Msg{Op: fwdproto.OpLock, Lock: fwdproto.LockArgs{Kind: l.Kind, Type: fwdproto.LockCancel, Owner: l.Owner}}
				_, _ = f.c.do(cm, nil, f.on(cm))
				select {
				case <-done:
					return
				case <-time.After(cancelEvery):
				}
			}
		}()
	}
	_, err := f.c.do(m, nil, f.on(m))
	close(done)
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}

// GetLock returns the first lock another owner holds that conflicts with
// l (fcntl F_GETLK); its Type is LockUnlock when there is none.
func (f *File) GetLock(l fwdproto.LockArgs) (fwdproto.LockArgs, error) {
	m := &fwdproto.Msg{Op: fwdproto.OpGetlk, Lock: l}
	cl, err := f.c.do(m, nil, f.on(m))
	if err != nil {
		return fwdproto.LockArgs{}, fmt.Errorf("getlk %s: %w", f.Name(), err)
	}
	return cl.resp.Lock, nil
}

// Allocate reserves bytes [off, off+n) of the file (fallocate mode 0): the
// file grows to cover them, and where the backend can reserve space later
// writes there do not fail for want of it.
func (f *File) Allocate(off, n int64) error {
	m := &fwdproto.Msg{Op: fwdproto.OpFallocate, Offset: off, Length: n}
	if _, err := f.c.do(m, nil, f.on(m)); err != nil {
		return fmt.Errorf("fallocate %s: %w", f.Name(), err)
	}
	return nil
}
