package fusemount_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/testproc"
	"github.com/adaptio/adaptio/layout"
)

// mountEnv, set in the environment, makes the test binary serve a daemon
// and mount it (serveMount), so that a test can kill the mount process.
const mountEnv = "ADAPTIO_FUSEMOUNT_TEST_MOUNT"

// serveMount serves a daemon over dir/export and mounts it at dir/mnt.
func serveMount(dir string) (string, func(), error) {
	addr, stop, err := fwdtest.ServeDir(dir, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		return "", nil, err
	}
	c, err := client.Dial(addr)
	if err != nil {
		stop()
		return "", nil, err
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", nil, err
	}
	m, err := fusemount.Mount(mnt, c, fusemount.Options{})
	if err != nil {
		return "", nil, err
	}
	return mnt, func() { m.Unmount(); c.Close(); stop() }, nil
}

// A mount process killed with SIGKILL leaves a stale mount ("transport
// endpoint is not connected"); mounting again on the same folder cleans it
// up (a lazy unmount), says so in the log, and serves.
func TestMountOverAStaleMount(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs /dev/fuse and root (the child process mounts directly)")
	}
	dir := t.TempDir()
	p := testproc.StartProc(t, mountEnv, dir, "the mount process")
	mnt := p.Published
	p.Kill()
	if _, err := os.Stat(mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("stat of the killed mount: %v, want ENOTCONN (a stale mount)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) }) // if the test fails before cleaning it

	root := t.TempDir()
	addr, stop, err := fwdtest.ServeDir(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs lockedLog
	m, err := fusemount.Mount(mnt, c, fusemount.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("mount over the stale mount: %v", err)
	}
	defer m.Unmount()
	if out := logs.String(); !strings.Contains(out, "level=WARN msg=\"cleaned up a stale FUSE mount") || !strings.Contains(out, "dir="+mnt) {
		t.Errorf("log %q, want a line saying the stale mount at %s was cleaned up", out, mnt)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("served"), 0o644); err != nil {
		t.Fatalf("writing through the new mount: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "export", "f")); err != nil || string(b) != "served" {
		t.Fatalf("backend file: %q, %v", b, err)
	}
}
