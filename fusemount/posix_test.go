package fusemount_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
)

// TestPOSIX checks, through the mount, one operation per subtest against
// what the backend directory then holds.
func TestPOSIX(t *testing.T) {
	mnt, root := mounted(t)
	write := func(t *testing.T, name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mnt, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("rename file", func(t *testing.T) {
		write(t, "r1", "one")
		f, err := os.OpenFile(filepath.Join(mnt, "r1"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Rename(filepath.Join(mnt, "r1"), filepath.Join(mnt, "r2")); err != nil {
			t.Fatal(err)
		}
		// The open descriptor follows the file.
		if _, err := f.WriteAt([]byte("ONE"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "r1")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("old name still on the backend: %v", err)
		}
		if got, _ := os.ReadFile(filepath.Join(root, "r2")); string(got) != "ONE" {
			t.Fatalf("backend r2 = %q, want the write through the renamed descriptor", got)
		}
	})
	t.Run("rename replaces", func(t *testing.T) {
		write(t, "a", "a")
		write(t, "b", "b")
		if err := os.Rename(filepath.Join(mnt, "a"), filepath.Join(mnt, "b")); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(mnt, "b")); string(got) != "a" {
			t.Fatalf("b = %q after rename over it", got)
		}
	})
	t.Run("rename directory", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(mnt, "d1/sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, "d1/sub/f", "deep")
		if err := os.Rename(filepath.Join(mnt, "d1"), filepath.Join(mnt, "d2")); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(mnt, "d2/sub/f")); err != nil || string(got) != "deep" {
			t.Fatalf("d2/sub/f = %q, %v", got, err)
		}
		if _, err := os.Stat(filepath.Join(root, "d1")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("d1 still on the backend: %v", err)
		}
	})
	t.Run("rename directory over an empty one", func(t *testing.T) {
		for _, d := range []string{"from/sub", "to"} {
			if err := os.MkdirAll(filepath.Join(mnt, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// syscall.Rename: os.Rename itself refuses to replace a directory.
		if err := syscall.Rename(filepath.Join(mnt, "from"), filepath.Join(mnt, "to")); err != nil {
			t.Fatalf("rename(2) replaces an empty directory: %v", err)
		}
		if fi, err := os.Stat(filepath.Join(root, "to/sub")); err != nil || !fi.IsDir() {
			t.Fatalf("backend to/sub: %v, %v", fi, err)
		}
		if err := os.Mkdir(filepath.Join(mnt, "from"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Rename(filepath.Join(mnt, "from"), filepath.Join(mnt, "to")); !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			t.Fatalf("rename over a directory that is not empty: %v, want ENOTEMPTY", err)
		}
	})
	t.Run("rename across mounts is EXDEV", func(t *testing.T) {
		write(t, "x", "x")
		err := os.Rename(filepath.Join(mnt, "x"), filepath.Join(t.TempDir(), "x"))
		if !errors.Is(err, syscall.EXDEV) {
			t.Fatalf("rename out of the mount: %v, want EXDEV", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		write(t, "h1", "shared")
		if err := os.Link(filepath.Join(mnt, "h1"), filepath.Join(mnt, "h2")); err != nil {
			t.Fatal(err)
		}
		var a, b syscall.Stat_t
		if err := syscall.Stat(filepath.Join(root, "h1"), &a); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(filepath.Join(root, "h2"), &b); err != nil {
			t.Fatal(err)
		}
		if a.Ino != b.Ino || a.Nlink != 2 {
			t.Fatalf("backend: inodes %d and %d, nlink %d; want one inode with 2 links", a.Ino, b.Ino, a.Nlink)
		}
		var m syscall.Stat_t
		if err := syscall.Stat(filepath.Join(mnt, "h2"), &m); err != nil || m.Nlink != 2 {
			t.Fatalf("mount: nlink %d, %v; want 2", m.Nlink, err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		write(t, "target", "pointed")
		if err := os.Symlink("target", filepath.Join(mnt, "link")); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(filepath.Join(mnt, "link")); err != nil || got != "target" {
			t.Fatalf("readlink = %q, %v", got, err)
		}
		if got, err := os.ReadFile(filepath.Join(mnt, "link")); err != nil || string(got) != "pointed" {
			t.Fatalf("read through the link = %q, %v", got, err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("backend: %v, %v; want a symbolic link", fi, err)
		}
	})
	t.Run("symlink leaving the export is refused", func(t *testing.T) {
		for _, target := range []string{"/etc/passwd", "../outside", "sub/../../x"} {
			if err := os.Symlink(target, filepath.Join(mnt, "bad")); !errors.Is(err, syscall.EACCES) {
				t.Fatalf("symlink to %q: %v, want EACCES", target, err)
			}
		}
	})
	t.Run("mkfifo", func(t *testing.T) {
		p := filepath.Join(mnt, "fifo")
		if err := syscall.Mkfifo(p, 0o640); err != nil {
			t.Fatalf("mkfifo on the mount: %v", err)
		}
		for _, q := range []string{filepath.Join(root, "fifo"), p} {
			if fi, err := os.Lstat(q); err != nil || fi.Mode() != os.ModeNamedPipe|0o640 {
				t.Fatalf("%s: %v, %v; want a FIFO with mode 0640", q, fi.Mode(), err)
			}
		}
		// The kernel serves the FIFO's opens itself: a writer and a reader
		// meet through it.
		done := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err == nil {
				_, err = w.Write([]byte("through the pipe"))
				w.Close()
			}
			done <- err
		}()
		got, err := os.ReadFile(p)
		if werr := <-done; err != nil || werr != nil || string(got) != "through the pipe" {
			t.Fatalf("read %q, %v (writer: %v)", got, err, werr)
		}
		if err := syscall.Mkfifo(p, 0o640); !errors.Is(err, syscall.EEXIST) {
			t.Fatalf("mkfifo over an existing name: %v, want EEXIST", err)
		}
	})
	t.Run("unix socket", func(t *testing.T) {
		p := filepath.Join(mnt, "sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatalf("bind on the mount: %v", err)
		}
		defer l.Close()
		if fi, err := os.Lstat(filepath.Join(root, "sock")); err != nil || fi.Mode().Type() != os.ModeSocket {
			t.Fatalf("backend: %v, %v; want a socket", fi, err)
		}
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		c, err := net.Dial("unix", p)
		if err != nil {
			t.Fatalf("connect through the mount's socket: %v", err)
		}
		defer c.Close()
		if got, err := io.ReadAll(c); err != nil || string(got) != "hi" {
			t.Fatalf("read %q, %v", got, err)
		}
	})
	t.Run("device node", func(t *testing.T) {
		p := filepath.Join(mnt, "null")
		dev := 1<<8 | 3 // makedev(1, 3)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o640, dev); err != nil {
			if errors.Is(err, syscall.EPERM) {
				t.Skipf("the backend refuses device nodes (no CAP_MKNOD in this container): %v", err)
			}
			t.Fatalf("mknod on the mount: %v", err)
		}
		for _, q := range []string{filepath.Join(root, "null"), p} {
			var st syscall.Stat_t
			if err := syscall.Lstat(q, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode != syscall.S_IFCHR|0o640 || st.Rdev != uint64(dev) {
				t.Fatalf("%s: mode %#o, rdev %#x; want a character device %#x with mode 0640", q, st.Mode, st.Rdev, dev)
			}
		}
	})
	t.Run("mknod of a regular file", func(t *testing.T) {
		p := filepath.Join(mnt, "plain")
		if err := syscall.Mknod(p, syscall.S_IFREG|0o600, 0); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "plain")); err != nil || fi.Mode() != 0o600 || fi.Size() != 0 {
			t.Fatalf("backend: %v, %v; want an empty regular file with mode 0600", fi, err)
		}
	})
	t.Run("chmod", func(t *testing.T) {
		write(t, "m", "m")
		if err := os.Chmod(filepath.Join(mnt, "m"), 0o600); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(root, "m")); fi.Mode().Perm() != 0o600 {
			t.Fatalf("backend mode %v, want 0600", fi.Mode())
		}
		if fi, _ := os.Stat(filepath.Join(mnt, "m")); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mount mode %v, want 0600", fi.Mode())
		}
	})
	t.Run("chown", func(t *testing.T) {
		write(t, "o", "o")
		if err := os.Chown(filepath.Join(mnt, "o"), 1234, 5678); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(root, "o"), &st); err != nil || st.Uid != 1234 || st.Gid != 5678 {
			t.Fatalf("backend owner %d:%d, %v; want 1234:5678", st.Uid, st.Gid, err)
		}
		if err := syscall.Stat(filepath.Join(mnt, "o"), &st); err != nil || st.Uid != 1234 || st.Gid != 5678 {
			t.Fatalf("mount owner %d:%d, %v; want 1234:5678", st.Uid, st.Gid, err)
		}
	})
	t.Run("utimes and atime", func(t *testing.T) {
		write(t, "u", "u")
		at, mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(mnt, "u"), at, mt); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(root, "u"), filepath.Join(mnt, "u")} {
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			if got := time.Unix(st.Atim.Unix()); !got.Equal(at) {
				t.Fatalf("%s: atime %v, want %v", p, got, at)
			}
			if got := time.Unix(st.Mtim.Unix()); !got.Equal(mt) {
				t.Fatalf("%s: mtime %v, want %v", p, got, mt)
			}
			if st.Ctim.Sec < time.Now().Add(-time.Hour).Unix() {
				t.Fatalf("%s: ctime %v is not recent", p, time.Unix(st.Ctim.Unix()))
			}
		}
	})
	t.Run("utimes of a symbolic link", func(t *testing.T) {
		write(t, "lt", "t")
		if err := os.Symlink("lt", filepath.Join(mnt, "ll")); err != nil {
			t.Fatal(err)
		}
		before, err := os.Stat(filepath.Join(root, "lt"))
		if err != nil {
			t.Fatal(err)
		}
		mt := time.Date(2003, 4, 5, 6, 7, 8, 0, time.UTC)
		ts := []unix.Timespec{unix.NsecToTimespec(mt.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(mnt, "ll"), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "ll")); err != nil || !fi.ModTime().Equal(mt) {
			t.Fatalf("backend link mtime %v, %v; want %v", fi.ModTime(), err, mt)
		}
		if fi, err := os.Stat(filepath.Join(root, "lt")); err != nil || !fi.ModTime().Equal(before.ModTime()) {
			t.Fatalf("the link's target changed: mtime %v, %v; want %v", fi.ModTime(), err, before.ModTime())
		}
	})
	t.Run("a symbolic link's atime as set", func(t *testing.T) {
		// Set before the mtime, which relatime would move to now at the
		// next read of the link: describing it must not read it
		// (pjdfstest utimensat/05.t).
		if err := os.Symlink("lt", filepath.Join(mnt, "la")); err != nil {
			t.Fatal(err)
		}
		at, mt := time.Unix(1960000000, 0), time.Unix(1970000000, 0)
		ts := []unix.Timespec{unix.NsecToTimespec(at.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(mnt, "la"), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(mnt, "la"), filepath.Join(root, "la")} {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			if got := time.Unix(st.Atim.Unix()); !got.Equal(at) {
				t.Fatalf("%s: atime %v, want %v", p, got, at)
			}
		}
		if _, err := os.ReadDir(mnt); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(filepath.Join(mnt, "la")); err != nil || got != "lt" {
			t.Fatalf("readlink: %q, %v", got, err)
		}
	})
	t.Run("modes as asked, not masked by the daemon's umask", func(t *testing.T) {
		// The caller's umask 0 (a child process: the daemon in this one
		// keeps its own), so the kernel asks for 0777 and 0666.
		cmd := exec.Command("/bin/sh", "-c", `umask 0 && cd "$1" && mkdir um.d && mkfifo um.p && : > um.f`, "sh", mnt)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for name, want := range map[string]os.FileMode{"um.d": os.ModeDir | 0o777, "um.p": os.ModeNamedPipe | 0o666, "um.f": 0o666} {
			if fi, err := os.Lstat(filepath.Join(root, name)); err != nil || fi.Mode() != want {
				t.Errorf("backend %s: %v, %v; want %v", name, fi.Mode(), err, want)
			}
		}
		fd, err := syscall.Open(filepath.Join(mnt, "mode0"), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL, 0)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		for _, p := range []string{filepath.Join(root, "mode0"), filepath.Join(mnt, "mode0")} {
			if fi, err := os.Lstat(p); err != nil || fi.Mode() != 0 {
				t.Errorf("open(O_CREAT, 0): %s mode %v, %v; want 0", p, fi.Mode(), err)
			}
		}
	})
	t.Run("name too long", func(t *testing.T) {
		long := filepath.Join(mnt, strings.Repeat("n", 256))
		if err := os.WriteFile(long, nil, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Fatalf("create: %v, want ENAMETOOLONG", err)
		}
		if err := os.Mkdir(long, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Fatalf("mkdir: %v, want ENAMETOOLONG", err)
		}
	})
	t.Run("statfs", func(t *testing.T) {
		var m, b syscall.Statfs_t
		if err := syscall.Statfs(mnt, &m); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Statfs(root, &b); err != nil {
			t.Fatal(err)
		}
		if m.Blocks != b.Blocks || m.Bsize != b.Bsize || m.Blocks == 0 {
			t.Fatalf("mount: %d blocks of %d; backend %d of %d", m.Blocks, m.Bsize, b.Blocks, b.Bsize)
		}
	})
	t.Run("dot and dotdot", func(t *testing.T) {
		d, err := os.Open(mnt)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		names, err := rawNames(d)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(names, ".") || !slices.Contains(names, "..") {
			t.Fatalf("listing %v lacks . or ..", names)
		}
	})
	t.Run("sparse file blocks", func(t *testing.T) {
		f, err := os.Create(filepath.Join(mnt, "sparse"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("end"), 1<<30); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(mnt, "sparse"), &st); err != nil {
			t.Fatal(err)
		}
		if st.Size != 1<<30+3 || st.Blocks*512 > 1<<20 {
			t.Fatalf("size %d, %d blocks allocated: want the sparse file's few blocks", st.Size, st.Blocks)
		}
	})
	t.Run("shared mmap", func(t *testing.T) {
		write(t, "mm", string(bytes.Repeat([]byte{'.'}, 8192)))
		// The mapping is written by a child process: a page fault on a
		// FUSE mapping holds the faulting process's mmap lock while the
		// request is served, and a server in that same process (this test
		// binary) can need the lock to grow its heap, a deadlock.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), mmapEnv+"="+filepath.Join(mnt, "mm"))
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == mmapUnsupported {
			t.Skipf("shared mmap of a direct-I/O file needs Linux 6.6 or later: %s", out)
		}
		if err != nil {
			t.Fatalf("writing through a shared mapping: %v: %s", err, out)
		}
		if got, _ := os.ReadFile(filepath.Join(root, "mm")); !bytes.Equal(got[4096:4102], []byte("mapped")) {
			t.Fatalf("backend holds %q at 4096 after msync", got[4096:4102])
		}
	})
}

// With AllowOther, another user works on the mount as on a local file
// system: what they create is theirs on the backend (the daemon, root
// here, made it), and the kernel checks their access against the
// backend's owners and modes.
func TestAllowOther(t *testing.T) {
	root := t.TempDir()
	mnt, _ := mountedClient(t, root, fwd.Options{}, fusemount.Options{AllowOther: true})
	for _, d := range []string{filepath.Dir(mnt), mnt} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "secret"), []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	cmd := exec.Command("/bin/sh", "-c", `set -e; cd "$1"; echo x > f; mkdir d; mkfifo p; ln -s f l
		if cat secret 2>/dev/null; then echo "read another user's 0600 file"; exit 1; fi
		if chmod 0644 secret 2>/dev/null; then echo "chmod of another user's file"; exit 1; fi`, "sh", mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v: %s", nobody, err, out)
	}
	for _, name := range []string{"f", "d", "p", "l"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(root, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != nobody || st.Gid != nobody {
			t.Errorf("backend %s owned by %d:%d, want %d:%d", name, st.Uid, st.Gid, nobody, nobody)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret: %v, %v", fi, err)
	}
}

// mmapEnv, set to a file's path, makes the test binary map the file shared,
// write "mapped" at offset 4096, msync, unmap and exit (exit status
// mmapUnsupported if the kernel refuses the mapping).
const mmapEnv = "ADAPTIO_FUSEMOUNT_TEST_MMAP"

const mmapUnsupported = 3

// writeMapped is the child's side of the shared-mmap subtest.
func writeMapped(path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return mmapUnsupported
	}
	copy(mem[4096:], "mapped")
	if err := msync(mem); err != nil {
		return fail(err)
	}
	if err := syscall.Munmap(mem); err != nil {
		return fail(err)
	}
	return 0
}

func msync(b []byte) error {
	_, _, e := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafePointer(b)), uintptr(len(b)), syscall.MS_SYNC)
	if e != 0 {
		return e
	}
	return nil
}

// rawNames lists a directory with getdents, "." and ".." included.
func rawNames(d *os.File) ([]string, error) {
	buf := make([]byte, 64<<10)
	var names []string
	for {
		n, err := syscall.ReadDirent(int(d.Fd()), buf)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return names, nil
		}
		// linux_dirent64: ino u64, off s64, reclen u16, type u8, name;
		// syscall.ParseDirent would drop "." and "..".
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			names = append(names, string(name))
			b = b[reclen:]
		}
	}
}

// plainBackend shows only backend.Backend of the backend it wraps: no
// namespace operations, no statfs (as the emulated PFS).
type plainBackend struct{ backend.Backend }

// Wrap makes mountedClient mount a plainBackend over its POSIX backend.
func (plainBackend) Wrap(b backend.Backend) backend.Backend { return plainBackend{b} }

// A backend that cannot tell its capacity: statfs reports it unknown rather
// than failing (MPI-IO's ROMIO calls statfs on open and refuses to open files
// when it fails), and rename is refused with ENOTSUP, never faked.
func TestStatfsUnsupportedBackend(t *testing.T) {
	mnt, _ := mountedClient(t, t.TempDir(), fwd.Options{Backend: plainBackend{}})
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatalf("statfs on a backend without capacity: %v", err)
	}
	if st.Blocks != 0 || st.Bsize == 0 || st.Namelen == 0 {
		t.Fatalf("statfs: %d blocks of %d, names up to %d; want unknown capacity (0 blocks) with a block size and name length", st.Blocks, st.Bsize, st.Namelen)
	}
	if err := os.WriteFile(filepath.Join(mnt, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mnt, "a"), filepath.Join(mnt, "b")); !errors.Is(err, syscall.ENOTSUP) {
		t.Fatalf("rename on a backend without namespace operations: %v, want ENOTSUP", err)
	}
	if err := syscall.Mkfifo(filepath.Join(mnt, "fifo"), 0o644); !errors.Is(err, syscall.ENOTSUP) {
		t.Fatalf("mkfifo on a backend without namespace operations: %v, want ENOTSUP", err)
	}
}
