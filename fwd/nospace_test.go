package fwd_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

// A full backend file system (a 512 KiB tmpfs) answers a write that does
// not fit with "no space left", and the daemon keeps serving: the files
// already there read back, and once space is freed writes succeed again.
func TestBackendFullAnswersNoSpaceAndKeepsServing(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("cannot mount a small tmpfs for a full backend (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	d := startDaemon(t, fwdtest.Posix(t, dir), fwd.Options{})
	c := dial(t, d.Addr())
	write := func(name string, seed uint64, n int) error {
		f, err := c.Create(name)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteAt(fwdtest.Content(seed, 0, n), 0)
		return err
	}
	if err := write("small", 1, 64<<10); err != nil {
		t.Fatal(err)
	}
	err := write("big", 2, 4<<20)
	var we *fwdproto.Error
	if !errors.As(err, &we) || we.Code != fwdproto.CodeNoSpace {
		t.Fatalf("4 MiB into 512 KiB: %v, want status %q", err, fwdproto.CodeNoSpace)
	}
	f, err := c.Open("small")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64<<10)
	if n, err := f.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, fwdtest.Content(1, 0, len(got))) {
		t.Fatalf("reading a file of the full backend: %d bytes, %v", n, err)
	}
	f.Close()
	if err := c.Unlink("big"); err != nil {
		t.Fatal(err)
	}
	if err := write("after", 3, 128<<10); err != nil {
		t.Fatalf("write after freeing space: %v", err)
	}
}
