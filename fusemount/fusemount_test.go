package fusemount_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
)

// mounted starts a daemon over a POSIX backend in a temporary directory and
// mounts it; it returns the mount point and the backend's directory.
func mounted(t testing.TB) (mnt, root string) {
	t.Helper()
	return mountedWith(t, t.TempDir(), fwd.Options{})
}

// mountedWith mounts a daemon with opts over a POSIX backend in root.
func mountedWith(t testing.TB, root string, opts fwd.Options) (mnt, _ string) {
	t.Helper()
	mnt, _ = mountedClient(t, root, opts)
	return mnt, root
}

// mountedOpts is mounted with the mount's write-behind budget set.
func mountedOpts(t testing.TB, writeBehind int64) (mnt, root string) {
	t.Helper()
	root = t.TempDir()
	mnt, _ = mountedClient(t, root, fwd.Options{}, fusemount.Options{WriteBehind: writeBehind})
	return mnt, root
}

// mountedClient is mountedWith that also returns the mount's client; mo,
// if given, configures the mount.
func mountedClient(t testing.TB, root string, opts fwd.Options, mo ...fusemount.Options) (mnt string, c *client.Client) {
	t.Helper()
	mnt, c, _ = mountedServer(t, root, opts, mo...)
	return mnt, c
}

// mountedServer is mountedClient that also returns the mount.
func mountedServer(t testing.TB, root string, opts fwd.Options, mo ...fusemount.Options) (mnt string, c *client.Client, m *fusemount.Server) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("FUSE unavailable (%v): install fuse3 / run with /dev/fuse to test the mount", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the mount test mounts directly (DirectMount) and needs root")
	}
	be, err := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	if wrap, ok := opts.Backend.(interface {
		Wrap(backend.Backend) backend.Backend
	}); ok {
		opts.Backend = wrap.Wrap(be) // a test's view of the POSIX backend
	} else {
		opts.Backend = be
	}
	if len(opts.Listen) == 0 {
		// A Unix socket, as on a compute node: the mount's client moves data
		// through the shared-memory region.
		sockDir, err := os.MkdirTemp("", "adaptio-sock-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(sockDir) })
		opts.Listen = []string{"unix:" + sockDir + "/fwd.sock"}
	}
	d := fwdtest.Start(t, opts)
	c, err = client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.SharedMemory() {
		t.Fatal("the mount's client did not get a shared-memory region")
	}
	mnt = t.TempDir()
	var o fusemount.Options
	if len(mo) > 0 {
		o = mo[0]
	}
	m, err = fusemount.Mount(mnt, c, o)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "operation not permitted") {
			t.Skipf("mounting FUSE is not permitted here (%v): needs CAP_SYS_ADMIN", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for m.Unmount() != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // a file may still be closing
		}
	})
	return mnt, c, m
}

// TestReadsFromTheRegion reads through the mount at sizes and offsets that
// end inside a request, at the end of the file and past it: the replies
// come straight from the shared region, and every region buffer is given
// back once its reply is written.
func TestReadsFromTheRegion(t *testing.T) {
	root := t.TempDir()
	mnt, c := mountedClient(t, root, fwd.Options{})
	data := make([]byte, 3<<20+4321)
	fwdbench.Fill(data, 7, 0, 0)
	if err := os.WriteFile(filepath.Join(root, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for round := 0; round < 20; round++ { // more bytes than the region holds, so a leak would show
		for _, size := range []int{1 << 20, 128<<10 + 17, 4096, 1} {
			for _, off := range []int64{0, 12345, int64(len(data)) - int64(size)/2, int64(len(data)), int64(len(data)) + 99} {
				buf := make([]byte, size)
				n, err := f.ReadAt(buf, off)
				want := data[min(off, int64(len(data))):min(off+int64(size), int64(len(data)))]
				if n != len(want) || !bytes.Equal(buf[:n], want) {
					t.Fatalf("read %d at %d: %d bytes (%v), want %d", size, off, n, err, len(want))
				}
				if n < size && !errors.Is(err, io.EOF) {
					t.Fatalf("short read %d at %d: %v, want io.EOF", size, off, err)
				}
			}
		}
	}
	// The whole region is free again (go-fuse frees a reply's buffer just
	// after writing it, so allow it a moment).
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := c.AllocBuffer(client.DefaultShmSize)
		if err != nil {
			t.Fatal(err)
		}
		shared := b.Shared()
		b.Free()
		if shared {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shared region is still in use after the reads: reply buffers were not freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFileOperations(t *testing.T) {
	mnt, root := mounted(t)
	if err := os.MkdirAll(filepath.Join(mnt, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+123)
	fwdbench.Fill(data, 1, 0, 0)
	p := filepath.Join(mnt, "a/b/f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "a/b/f")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("backend holds %d bytes (%v), want the %d written", len(got), err, len(data))
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through the mount: %d bytes, %v", len(got), err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Size() != int64(len(data)) || fi.IsDir() {
		t.Fatalf("stat: %v %v", fi, err)
	}
	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(mnt, "a/b"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("readdir: %v %v", ents, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "a/b")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a/b")); !os.IsNotExist(err) {
		t.Fatalf("directory still on the backend: %v", err)
	}
	if _, err := os.Open(filepath.Join(mnt, "missing")); !os.IsNotExist(err) {
		t.Fatalf("open missing: %v, want not exist", err)
	}
}

func TestDD(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("dd not installed")
	}
	mnt, root := mounted(t)
	src := filepath.Join(t.TempDir(), "src")
	data := make([]byte, 8<<20)
	fwdbench.Fill(data, 2, 0, 0)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(dd, args...).CombinedOutput(); err != nil {
			t.Fatalf("dd %v: %v\n%s", args, err, out)
		}
	}
	run("if="+src, "of="+filepath.Join(mnt, "dd.out"), "bs=1M", "conv=fsync")
	if got, _ := os.ReadFile(filepath.Join(root, "dd.out")); !bytes.Equal(got, data) {
		t.Fatalf("dd through the mount: backend holds %d bytes or other bytes", len(got))
	}
	back := filepath.Join(t.TempDir(), "back")
	run("if="+filepath.Join(mnt, "dd.out"), "of="+back, "bs=64k")
	if got, _ := os.ReadFile(back); !bytes.Equal(got, data) {
		t.Fatalf("dd read back %d bytes or other bytes", len(got))
	}
}

// TestFio runs fio through the mount with its own crc32c verification.
func TestFio(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Skip("fio not installed (CI installs it): skipping the fio verification run")
	}
	mnt, root := mounted(t)
	for _, rw := range []string{"write", "randwrite"} {
		t.Run(rw, func(t *testing.T) {
			dir := filepath.Join(mnt, rw)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"--name=verify", "--directory=" + dir, "--rw=" + rw, "--bs=64k", "--size=8m",
				"--numjobs=2", "--ioengine=psync", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1",
				"--verify_state_save=0", // else fio leaves local-verify-*-verify.state in the working directory
				"--group_reporting", "--output-format=normal"}
			out, err := exec.Command(fio, args...).CombinedOutput()
			if err != nil || bytes.Contains(out, []byte("verify: bad")) || bytes.Contains(out, []byte("err=")) && !bytes.Contains(out, []byte("err= 0")) {
				t.Fatalf("fio %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			ents, err := os.ReadDir(filepath.Join(root, rw))
			if err != nil || len(ents) != 2 {
				t.Fatalf("backend holds %d fio files (%v), want 2", len(ents), err)
			}
			for _, e := range ents {
				if fi, _ := e.Info(); fi.Size() != 8<<20 {
					t.Fatalf("%s: %d bytes, want %d", e.Name(), fi.Size(), 8<<20)
				}
			}
		})
	}
}

// TestMPIIO runs an unmodified MPI-IO program (collective, 1D-strided
// writes and reads, MPICH's ROMIO) on 4 ranks through the mount.
func TestMPIIO(t *testing.T) {
	mpicc, err1 := exec.LookPath("mpicc")
	mpiexec, err2 := exec.LookPath("mpiexec")
	if err1 != nil || err2 != nil {
		t.Skip("MPICH not installed (apt-get install mpich libmpich-dev): skipping the MPI-IO run")
	}
	mnt, root := mounted(t)
	prog := filepath.Join(t.TempDir(), "mpiio")
	if out, err := exec.Command(mpicc, "-O2", "-o", prog, "testdata/mpiio.c").CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	const ranks, bs, blocks = 4, 48 << 10, 8
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, mpiexec, "-n", fmt.Sprint(ranks), prog, filepath.Join(mnt, "mpi.dat"), fmt.Sprint(bs), fmt.Sprint(blocks)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 bad blocks") {
		t.Fatalf("mpiexec: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(root, "mpi.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != ranks*bs*blocks {
		t.Fatalf("backend file: %d bytes, want %d", len(got), ranks*bs*blocks)
	}
	for x, b := range got {
		if b != byte((x*7)%251) {
			t.Fatalf("backend file byte %d = %d, want %d", x, b, (x*7)%251)
		}
	}
}

// TestDaemonRestartUnderMount restarts the forwarder while dd writes
// through the mount: the client reconnects, dd completes, and the file on
// the backend is exactly what dd read.
func TestDaemonRestartUnderMount(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("dd not installed")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs /dev/fuse and root")
	}
	root := t.TempDir()
	be, err := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	sock := "unix:" + filepath.Join(t.TempDir(), "fwd.sock")
	start := func() *fwd.Daemon { return fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{sock}}) }
	d := start()
	c, err := client.DialOptions(sock, client.Options{Reconnect: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mnt := t.TempDir()
	m, err := fusemount.Mount(mnt, c, fusemount.Options{})
	if err != nil {
		t.Skipf("mount: %v", err)
	}
	defer func() {
		for i := 0; m.Unmount() != nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}()
	src := filepath.Join(t.TempDir(), "src")
	data := make([]byte, 16<<20)
	fwdbench.Fill(data, 3, 0, 0)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(dd, "if="+src, "of="+filepath.Join(mnt, "r.bin"), "bs=64k")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for { // restart once dd is under way
		if fi, err := os.Stat(filepath.Join(root, "r.bin")); err == nil && fi.Size() >= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dd made no progress")
		}
		time.Sleep(time.Millisecond)
	}
	d.Shutdown()
	d2 := start()
	defer d2.Shutdown()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dd across the restart: %v: %s", err, stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(root, "r.bin")); !bytes.Equal(got, data) {
		t.Fatalf("after the restart the backend holds %d bytes or other bytes", len(got))
	}
}

// An application writing through the mount to a full backend gets ENOSPC
// (at the write, or with write-behind at fsync or close, as with NFS), and
// the mount keeps serving the files already there.
func TestBackendFullGivesENOSPC(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("cannot mount a small tmpfs for a full backend (needs root): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	mnt, _ := mountedWith(t, root, fwd.Options{})
	if err := os.WriteFile(filepath.Join(mnt, "small"), bytes.Repeat([]byte{7}, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte{9}, 256<<10)
	var werr error
	for i := 0; i < 16 && werr == nil; i++ {
		_, werr = f.Write(buf)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("4 MiB into a 512 KiB backend through the mount: %v, want ENOSPC", werr)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "small")); err != nil || !bytes.Equal(b, bytes.Repeat([]byte{7}, 64<<10)) {
		t.Fatalf("reading a file of the full backend through the mount: %d bytes, %v", len(b), err)
	}
}
