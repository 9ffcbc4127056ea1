package fusemount_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/pfs"
	"github.com/adaptio/adaptio/pfs/pfsclient"
)

// lockedLog collects log lines written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// needFUSE skips where the mount cannot be made.
func needFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("FUSE unavailable (%v): install fuse3 / run with /dev/fuse to test the mount", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the mount test mounts directly (DirectMount) and needs root")
	}
}

// mountOver serves be with a daemon on a Unix socket and mounts it with a
// client of options co; it returns the mount point and the daemon.
func mountOver(t *testing.T, be backend.Backend, co client.Options) (string, *fwd.Daemon, func() *fwd.Daemon) {
	t.Helper()
	needFUSE(t)
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	start := func() *fwd.Daemon { return fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}}) }
	d := start()
	c, err := client.DialOptions(sock, co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	mnt := t.TempDir()
	m, err := fusemount.Mount(mnt, c, fusemount.Options{WriteBehind: -1})
	if err != nil {
		t.Skipf("mount: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; m.Unmount() != nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return mnt, d, start
}

// pfsCluster starts data servers in dir (a temporary one if "") and
// returns the cluster and a client of it.
func pfsCluster(t *testing.T, dir string, servers int) (*pfs.Cluster, *pfsclient.Client) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cl, err := pfs.NewCluster(pfs.ClusterOptions{Servers: servers, Dir: dir, Disk: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Shutdown)
	if !cl.Ready(5 * time.Second) {
		t.Fatal("pfs cluster not ready")
	}
	be, err := cl.Backend()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return cl, be
}

// With the forwarder gone, the application gets EIO: the first call after
// the mount's Reconnect wait, every later one at once; once the forwarder
// is back, the mount serves again by itself.
func TestForwarderGoneGivesEIOThenRecovers(t *testing.T) {
	const wait = 300 * time.Millisecond
	mnt, d, start := mountOver(t, fwdtest.Posix(t, t.TempDir()), client.Options{Reconnect: wait})
	f := filepath.Join(mnt, "f")
	if err := os.WriteFile(f, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Shutdown()
	if _, err := os.ReadFile(f); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read with the forwarder gone: %v, want EIO", err)
	}
	t0 := time.Now()
	for i := range 10 {
		if _, err := os.ReadDir(mnt); !errors.Is(err, syscall.EIO) {
			t.Fatalf("listing %d with the forwarder gone: %v, want EIO", i, err)
		}
	}
	// Had each call waited the Reconnect again, the 10 would take 10 waits;
	// failing at once, they take a small part of one. The bound sits
	// halfway, so a loaded machine does not fail the test.
	if took := time.Since(t0); took >= 5*wait {
		t.Fatalf("10 calls after the first timeout took %v, want each to fail at once (under %v together, half of one wait each)", took, 5*wait)
	}
	d2 := start()
	defer d2.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(f)
		if err == nil && string(b) == "before" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount still fails 10 s after the forwarder came back: %q, %v", b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With one data server of the emulated PFS dead, the namespace works
// through the mount (ls, stat, mkdir, create), a file whose bytes are on
// the other servers reads back whole, and a file with a stripe on the dead
// server gives EIO when that stripe is read.
func TestDeadDataServerThroughTheMount(t *testing.T) {
	needFUSE(t)
	cl, be := pfsCluster(t, "", 4)
	mnt, _, _ := mountOver(t, be, client.Options{})
	const stripe = 64 << 10
	dead := 3
	var small string
	for i := 0; small == ""; i++ {
		name := "small" + string(rune('a'+i))
		if p, _ := be.Split(nil, name, 0, 1); p[0].Server != dead {
			small = name
		}
	}
	smallData := bytes.Repeat([]byte("x"), 3000)
	big := bytes.Repeat([]byte("0123456789abcdef"), 4*stripe/16)
	if err := os.WriteFile(filepath.Join(mnt, small), smallData, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	cl.Server(dead).Shutdown()

	ents, err := os.ReadDir(mnt)
	if err != nil || len(ents) != 2 {
		t.Fatalf("ls with a data server dead: %d entries, %v", len(ents), err)
	}
	if fi, err := os.Stat(filepath.Join(mnt, small)); err != nil || fi.Size() != int64(len(smallData)) {
		t.Fatalf("stat with a data server dead: %v", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err != nil {
		t.Fatalf("mkdir with a data server dead: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, small)); err != nil || !bytes.Equal(b, smallData) {
		t.Fatalf("reading a file off the dead server: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "big")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading a file with a stripe on the dead server: %v, want EIO", err)
	}
}

// A full data server of the emulated PFS reaches the application through
// the forwarder and the mount as ENOSPC.
func TestFullDataServerGivesENOSPCThroughTheMount(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("cannot mount a small tmpfs for a full data server (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	_, be := pfsCluster(t, dir, 2)
	mnt, _, _ := mountOver(t, be, client.Options{})
	err := os.WriteFile(filepath.Join(mnt, "big"), make([]byte, 4<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("4 MiB onto 512 KiB of data servers through the mount: %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), "no space left") {
		t.Errorf("error %q does not say no space left", err)
	}
}
