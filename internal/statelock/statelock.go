// Package statelock makes one process at a time the owner of a directory of
// learned state (the demo's --state, the Council's --state-dir), so that two
// runs sharing it cannot overwrite each other's learning.
//
// The lock is an advisory flock(2) on a file named LockFile in the
// directory, holding the owner's process id. The kernel releases it when
// the process ends, however it ends, so a crashed run leaves no stale lock.
package statelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the name of the lock file inside a state directory.
const LockFile = ".adaptio.lock"

// ErrHeld is wrapped by the error Acquire returns when another process
// holds the directory.
var ErrHeld = errors.New("state directory in use")

// Lock is a held state-directory lock.
type Lock struct {
	f *os.File
}

// Acquire locks dir (created if absent) for this process, without waiting.
// If another process holds it, the error wraps ErrHeld and names the
// holder's PID.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "process " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("%w: %s is used by %s (one run per state directory: wait for it, or choose another directory)", ErrHeld, dir, holder)
		}
		return nil, fmt.Errorf("state directory lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release unlocks the directory. Safe on a nil Lock and more than once.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor drops the flock
	l.f = nil
	return err
}
