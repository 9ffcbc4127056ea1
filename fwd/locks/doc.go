// Package locks is the forwarder's table of file locks: POSIX record locks
// (fcntl F_SETLK, F_SETLKW, F_GETLK) and flock(2) locks that the clients of
// one forwarder hold on its files, so that a lock taken through one mount
// excludes the same lock taken through another mount of the same forwarder.
//
// The Table is a pure state machine: no goroutines, no clock, no I/O. The
// forwarder (package fwd) keeps one, calls Set, Test and the waiter methods
// under its own mutex, answers the requests whose waits Grantable releases,
// and mirrors Coverage onto the backend file where the backend can lock.
//
// Usage:
//
//	t := locks.NewTable()
//	k := locks.Key{File: handle, Kind: locks.POSIX}
//	if c, ok := t.Set(k, locks.Lock{Owner: o, Type: locks.Write, Start: 0, End: 99}); !ok {
//		// c conflicts: answer EAGAIN, or t.Wait(k, id, lock) and retry
//		// t.Grantable(k) after each change of k.
//	}
package locks
