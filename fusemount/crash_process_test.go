package fusemount_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/testproc"
	"github.com/adaptio/adaptio/layout"
)

// daemonEnv, set in the environment, makes the test binary run a
// forwarding daemon (serveDaemon) instead of the tests, so that a test can
// kill it with SIGKILL under the mount.
const daemonEnv = "ADAPTIO_FUSEMOUNT_TEST_DAEMON"

func TestMain(m *testing.M) {
	if path := os.Getenv(mmapEnv); path != "" {
		os.Exit(writeMapped(path))
	}
	if spec := os.Getenv(lockEnv); spec != "" {
		os.Exit(lockHelper(spec))
	}
	testproc.Serve(daemonEnv, serveDaemon)
	testproc.Serve(mountEnv, serveMount)
	os.Exit(m.Run())
}

// serveDaemon serves a daemon over dir/export on the socket dir/fwd.sock.
func serveDaemon(dir string) (string, func(), error) {
	return fwdtest.ServeDir(dir, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
}

// The forwarder killed with SIGKILL while dd writes through the mount
// (write-behind on, so dd's writes are acknowledged before they reach the
// daemon): a new daemon on the same directory, the mount reconnects and
// sends again what was in flight, dd completes, and the file on the
// backend is exactly what dd read. Without Reconnect, dd fails instead of
// hanging.
func TestDaemonKilledUnderMount(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills daemon processes; skipped with -short")
	}
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("dd not installed")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs /dev/fuse and root")
	}
	src := filepath.Join(t.TempDir(), "src")
	data := make([]byte, 32<<20)
	fwdbench.Fill(data, 5, 0, 0)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, reconnect := range []time.Duration{20 * time.Second, 0} {
		dir := t.TempDir()
		p := testproc.StartProc(t, daemonEnv, dir, "the forwarding daemon")
		c, err := client.DialOptions(p.Published, client.Options{Reconnect: reconnect})
		if err != nil {
			t.Fatal(err)
		}
		mnt := t.TempDir()
		m, err := fusemount.Mount(mnt, c, fusemount.Options{})
		if err != nil {
			c.Close()
			t.Skipf("mount: %v", err)
		}
		cmd := exec.Command(dd, "if="+src, "of="+filepath.Join(mnt, "k.bin"), "bs=64k", "conv=fsync")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		backendFile := filepath.Join(dir, "export", "k.bin")
		deadline := time.Now().Add(20 * time.Second)
		for { // kill once dd is under way
			if fi, err := os.Stat(backendFile); err == nil && fi.Size() >= 2<<20 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("dd made no progress")
			}
			time.Sleep(time.Millisecond)
		}
		p.Kill()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if reconnect == 0 {
			select {
			case err := <-done:
				if err == nil {
					t.Error("dd succeeded through a mount whose forwarder was killed, without Reconnect")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("dd still blocked 30 s after the forwarder was killed (no Reconnect)")
			}
		} else {
			testproc.StartProc(t, daemonEnv, dir, "the restarted forwarding daemon")
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("dd across the crash: %v: %s", err, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("dd still blocked 60 s after the forwarder was killed and restarted")
			}
			if got, _ := os.ReadFile(backendFile); !bytes.Equal(got, data) {
				t.Fatalf("after the crash the backend holds %d bytes or other bytes, want dd's %d", len(got), len(data))
			}
		}
		for i := 0; m.Unmount() != nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
		c.Close()
	}
}
