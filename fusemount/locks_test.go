package fusemount_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
)

// lockEnv, set to "mode kind path [args]", makes the test binary a helper
// process taking locks (lockHelper): another process, as on another node.
const lockEnv = "ADAPTIO_FUSEMOUNT_TEST_LOCK"

// twoMounts starts one forwarder over a POSIX directory and mounts it
// twice (two compute nodes' mounts); it returns both mount points.
func twoMounts(t *testing.T, mo fusemount.Options) (string, string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("FUSE unavailable (%v): install fuse3 / run with /dev/fuse to test the mount", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the mount test mounts directly (DirectMount) and needs root")
	}
	be, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	sockDir, err := os.MkdirTemp("", "adaptio-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	d := fwdtest.Start(t, fwd.Options{Backend: be, Listen: []string{"unix:" + sockDir + "/fwd.sock"}})
	var mnts [2]string
	for i := range mnts {
		c, err := client.Dial(d.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		mnts[i] = t.TempDir()
		m, err := fusemount.Mount(mnts[i], c, mo)
		if err != nil {
			t.Skipf("mount: %v", err)
		}
		t.Cleanup(func() {
			deadline := time.Now().Add(10 * time.Second)
			for m.Unmount() != nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	return mnts[0], mnts[1]
}

// helper starts the test binary as a lock helper.
func helper(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, in, bufio.NewReader(out)
}

// try runs a helper that tries to take the lock without waiting: true if
// it got it, false if the lock is held elsewhere.
func try(t *testing.T, kind, path string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockEnv+"=try "+kind+" "+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return false
	}
	t.Fatalf("lock helper: %v: %s", err, out)
	return false
}

func expectLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("helper said %q (%v), want %q", line, err, want)
	}
}

// TestLocksAcrossMounts: a lock held by a process through one mount keeps
// a process on the other mount of the same forwarder out, both ways, for
// fcntl and flock; a blocked F_SETLKW (or flock) is granted once the
// holder unlocks; and a holder killed with SIGKILL releases its lock.
func TestLocksAcrossMounts(t *testing.T) {
	a, b := twoMounts(t, fusemount.Options{})
	for _, kind := range []string{"fcntl", "flock"} {
		t.Run(kind, func(t *testing.T) {
			name := "lock-" + kind
			if err := os.WriteFile(filepath.Join(a, name), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, dir := range [][2]string{{a, b}, {b, a}} {
				holder, in, out := helper(t, "hold", kind, filepath.Join(dir[0], name))
				expectLine(t, out, "locked")
				if try(t, kind, filepath.Join(dir[1], name)) {
					t.Fatalf("lock held through %s was granted through %s", dir[0], dir[1])
				}
				// A waiter on the other mount gets it when the holder unlocks.
				waiter, _, wout := helper(t, "wait", kind, filepath.Join(dir[1], name))
				got := make(chan string, 1)
				go func() { l, _ := wout.ReadString('\n'); got <- strings.TrimSpace(l) }()
				select {
				case l := <-got:
					t.Fatalf("waiter said %q while the lock was held", l)
				case <-time.After(200 * time.Millisecond):
				}
				in.Close() // the holder unlocks and exits
				_ = holder.Wait()
				select {
				case l := <-got:
					if l != "locked" {
						t.Fatalf("waiter said %q", l)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("waiter not granted after the holder unlocked")
				}
				_ = waiter.Wait()
			}
			// A killed holder's lock goes with it.
			holder, _, out := helper(t, "hold", kind, filepath.Join(a, name))
			expectLine(t, out, "locked")
			if try(t, kind, filepath.Join(b, name)) {
				t.Fatal("lock granted while held")
			}
			_ = holder.Process.Kill()
			_ = holder.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for !try(t, kind, filepath.Join(b, name)) {
				if time.Now().After(deadline) {
					t.Fatal("the lock of a killed process was not released")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// sieveSize, sieveStride, sieveIters: the data-sieving pattern's range,
// the interleaving unit of the two processes, and the rounds each makes.
const (
	sieveSize   = 64 << 10
	sieveStride = 512
	sieveIters  = 150
)

// sieve runs the ROMIO data-sieving write pattern from one process per
// mount and returns the bytes found wrong at the end: each process locks
// the whole range, reads it, changes its own interleaved strided blocks,
// writes the whole range back and unlocks, sieveIters times.
func sieve(t *testing.T, a, b, lock string) int {
	name := "sieve-" + lock
	if err := os.WriteFile(filepath.Join(a, name), make([]byte, sieveSize), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for rank, dir := range []string{a, b} {
		cmd, _, _ := helper(t, "sieve", lock, filepath.Join(dir, name), strconv.Itoa(rank))
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("sieve helper: %v", err)
		}
	}
	got, err := os.ReadFile(filepath.Join(a, name))
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, v := range got {
		if want := sieveByte((i/sieveStride)%2, sieveIters-1); v != want {
			bad++
		}
	}
	return bad
}

func sieveByte(rank, iter int) byte { return byte(1 + rank*100 + iter%97) }

// TestDataSievingAcrossMounts: with the forwarder's locks every byte of
// the two processes' read-modify-write rounds is right; with locks local
// to each mount (Options.LocalLocks, as a mount without lock forwarding)
// the processes overwrite each other's blocks and bytes are lost.
func TestDataSievingAcrossMounts(t *testing.T) {
	a, b := twoMounts(t, fusemount.Options{})
	if bad := sieve(t, a, b, "fcntl"); bad != 0 {
		t.Errorf("with locks through the forwarder: %d of %d bytes wrong", bad, sieveSize)
	}
	// Lost updates are a race: the control may need a few tries to show
	// one (one run in several loses none on a loaded machine).
	la, lb := twoMounts(t, fusemount.Options{LocalLocks: true})
	for try := 1; ; try++ {
		bad := sieve(t, la, lb, "fcntl")
		t.Logf("locks local to each mount, try %d: %d of %d bytes lost", try, bad, sieveSize)
		if bad > 0 {
			return
		}
		if try == 4 {
			t.Fatalf("with locks local to each mount no byte was lost in %d tries: the test does not see lost updates", try)
		}
	}
}

// lockHelper is the helper process's body; it returns the exit status
// (3: the lock is held elsewhere).
func lockHelper(spec string) int {
	f := strings.Fields(spec)
	mode, kind, path := f[0], f[1], f[2]
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fd := int(file.Fd())
	lock := func(typ int16, wait bool) error {
		for {
			var err error
			if kind == "flock" {
				how := syscall.LOCK_EX
				if typ == syscall.F_UNLCK {
					how = syscall.LOCK_UN
				}
				if !wait {
					how |= syscall.LOCK_NB
				}
				err = syscall.Flock(fd, how)
			} else {
				cmd := syscall.F_SETLK
				if wait {
					cmd = syscall.F_SETLKW
				}
				err = syscall.FcntlFlock(uintptr(fd), cmd, &syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0})
			}
			if err != syscall.EINTR {
				return err
			}
		}
	}
	switch mode {
	case "try":
		err := lock(syscall.F_WRLCK, false)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EWOULDBLOCK) {
			return 3
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "try:", err)
			return 1
		}
		return 0
	case "hold", "wait":
		if err := lock(syscall.F_WRLCK, true); err != nil {
			fmt.Fprintln(os.Stderr, mode+":", err)
			return 1
		}
		fmt.Println("locked")
		if mode == "hold" {
			_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
			if err := lock(syscall.F_UNLCK, false); err != nil {
				fmt.Fprintln(os.Stderr, "unlock:", err)
				return 1
			}
		}
		return 0
	case "sieve":
		rank, _ := strconv.Atoi(f[3])
		buf := make([]byte, sieveSize)
		for it := range sieveIters {
			if err := lock(syscall.F_WRLCK, true); err != nil {
				fmt.Fprintln(os.Stderr, "sieve lock:", err)
				return 1
			}
			if _, err := file.ReadAt(buf, 0); err != nil {
				fmt.Fprintln(os.Stderr, "sieve read:", err)
				return 1
			}
			for blk := rank * sieveStride; blk < sieveSize; blk += 2 * sieveStride {
				copy(buf[blk:blk+sieveStride], bytes.Repeat([]byte{sieveByte(rank, it)}, sieveStride))
			}
			if _, err := file.WriteAt(buf, 0); err != nil {
				fmt.Fprintln(os.Stderr, "sieve write:", err)
				return 1
			}
			if err := lock(syscall.F_UNLCK, false); err != nil {
				fmt.Fprintln(os.Stderr, "sieve unlock:", err)
				return 1
			}
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 1
}

// BenchmarkLockUnlock: one fcntl write lock and its unlock through the
// mount per operation, held by the forwarder (forwarder) or by the
// client's kernel (local, Options.LocalLocks).
func BenchmarkLockUnlock(b *testing.B) {
	for _, tt := range []struct {
		name  string
		local bool
	}{{"forwarder", false}, {"local", true}} {
		b.Run(tt.name, func(b *testing.B) {
			mnt, _ := mountedClient(b, b.TempDir(), fwd.Options{}, fusemount.Options{LocalLocks: tt.local})
			f, err := os.Create(filepath.Join(mnt, "bench"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 0, Len: 4096}
			un := syscall.Flock_t{Type: syscall.F_UNLCK, Start: 0, Len: 4096}
			b.ResetTimer()
			for range b.N {
				if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
					b.Fatal(err)
				}
				if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &un); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
