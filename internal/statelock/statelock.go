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
	if err := checkAncestors(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is used by %s (one run per state directory: wait for it, or choose another directory)", ErrHeld, dir, holder(path))
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

// holder names the process whose id the lock file at path holds.
func holder(path string) string {
	if pid := holderPID(path); pid > 0 {
		return "process " + strconv.Itoa(pid)
	}
	return "another process"
}

func holderPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// checkAncestors refuses dir when a folder above it is a state directory
// another process holds: a run's state directory holds the folders of its
// parts (the demo's Council keeps its JetStream store in a subfolder), and
// a second server on one of them would corrupt the first's store. It
// creates no lock file: it only probes the ones that exist.
func checkAncestors(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		path := filepath.Join(d, LockFile)
		if f, err := os.Open(path); err == nil {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
			if err == nil {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			}
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) && holderPID(path) != os.Getpid() {
				return fmt.Errorf("%w: %s is inside %s, which %s uses (choose a directory outside it)", ErrHeld, dir, d, holder(path))
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
