package fwd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

func lockArgs(owner uint64, typ uint8, start, end int64, wait bool) fwdproto.LockArgs {
	return fwdproto.LockArgs{Kind: fwdproto.LockPOSIX, Type: typ, Owner: owner, PID: uint32(owner), Start: start, End: end, Wait: wait}
}

func isCode(err error, c fwdproto.Code) bool {
	var we *fwdproto.Error
	return errors.As(err, &we) && we.Code == c
}

func openShared(t *testing.T, c *client.Client, name string) *client.File {
	t.Helper()
	f, err := c.OpenFile(name, fwdproto.OpenCreate, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLocksAcrossClients: two clients of one forwarder (two mounts) see
// each other's locks: conflicts refused, F_GETLK shows the holder, shared
// reads pass, a wait is granted when the holder unlocks, a cancelled wait
// ends interrupted, and a client's locks go with its connection.
func TestLocksAcrossClients(t *testing.T) {
	d := startDaemon(t, fwdtest.Posix(t, t.TempDir()), fwd.Options{})
	a, b := dial(t, d.Addr()), dial(t, d.Addr())
	fa, fb := openShared(t, a, "shared"), openShared(t, b, "shared")
	ctx := context.Background()

	if err := fa.Lock(ctx, lockArgs(1, fwdproto.LockWrite, 0, 99, false)); err != nil {
		t.Fatal(err)
	}
	if err := fb.Lock(ctx, lockArgs(1, fwdproto.LockWrite, 50, 60, false)); !isCode(err, fwdproto.CodeLocked) {
		t.Fatalf("conflicting lock through another client: %v, want locked", err)
	}
	if got, err := fb.GetLock(lockArgs(1, fwdproto.LockRead, 0, 10, false)); err != nil || got.Type != fwdproto.LockWrite || got.Start != 0 || got.End != 99 || got.PID != 1 {
		t.Fatalf("getlk: %+v, %v", got, err)
	}
	if err := fb.Lock(ctx, lockArgs(1, fwdproto.LockRead, 100, fwdproto.LockEOF, false)); err != nil {
		t.Fatalf("lock beside the held one: %v", err)
	}

	// A wait, granted on unlock.
	granted := make(chan error, 1)
	go func() { granted <- fb.Lock(ctx, lockArgs(1, fwdproto.LockWrite, 0, 99, true)) }()
	select {
	case err := <-granted:
		t.Fatalf("wait returned before the unlock: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := fa.Lock(ctx, lockArgs(1, fwdproto.LockUnlock, 0, fwdproto.LockEOF, false)); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatalf("wait after unlock: %v", err)
	}

	// A cancelled wait.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := fa.Lock(cctx, lockArgs(1, fwdproto.LockRead, 10, 20, true)); !isCode(err, fwdproto.CodeInterrupted) {
		t.Fatalf("cancelled wait: %v, want interrupted", err)
	}

	// The holder's connection ends: its locks go, a waiter gets the range.
	go func() { granted <- fa.Lock(ctx, lockArgs(2, fwdproto.LockWrite, 0, 0, true)) }()
	time.Sleep(50 * time.Millisecond)
	b.Close()
	select {
	case err := <-granted:
		if err != nil {
			t.Fatalf("wait after the holder's client closed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait not granted after the holder's client closed")
	}
}

// TestLocksAcrossForwarders: two forwarders over one POSIX directory
// exclude each other through OFD and flock locks on the real file.
func TestLocksAcrossForwarders(t *testing.T) {
	dir := t.TempDir()
	d1 := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{})
	d2 := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{})
	f1, f2 := openShared(t, dial(t, d1.Addr()), "f"), openShared(t, dial(t, d2.Addr()), "f")
	ctx := context.Background()
	for _, kind := range []uint8{fwdproto.LockPOSIX, fwdproto.LockFlock} {
		l := lockArgs(1, fwdproto.LockWrite, 0, fwdproto.LockEOF, false)
		l.Kind = kind
		if err := f1.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := f2.Lock(ctx, l); !isCode(err, fwdproto.CodeLocked) {
			t.Fatalf("kind %d: lock held through another forwarder: %v, want locked", kind, err)
		}
		// A wait through the second forwarder polls the file system.
		w := l
		w.Wait = true
		done := make(chan error, 1)
		go func() { done <- f2.Lock(ctx, w) }()
		time.Sleep(30 * time.Millisecond)
		l.Type = fwdproto.LockUnlock
		if err := f1.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("kind %d: wait through the other forwarder: %v", kind, err)
		}
		if err := f2.Lock(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFallocate(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{})
	f := openShared(t, dial(t, d.Addr()), "g")
	if err := f.Allocate(4096, 1<<20); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "g"))
	if err != nil || st.Size() != 4096+1<<20 {
		t.Fatalf("size after fallocate: %v, %v", st, err)
	}
	if err := f.Allocate(0, 0); !isCode(err, fwdproto.CodeBadArgument) {
		t.Fatalf("fallocate of 0 bytes: %v, want bad argument", err)
	}
}
