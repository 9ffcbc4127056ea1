package fusemount_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// longPath returns a relative path of exactly n bytes made of directories
// of 200-byte names and a final name, and the directories on its way.
func longPath(n int) (string, []string) {
	var dirs []string
	p := ""
	for n-len(p) > 256 {
		p += strings.Repeat("d", 199) + "/"
		dirs = append(dirs, strings.TrimSuffix(p, "/"))
	}
	return p + strings.Repeat("f", n-len(p)), dirs
}

// TestLongPathsFromSubdirectory: a path of PATH_MAX-1 bytes relative to a
// subdirectory of the mount (longer than PATH_MAX from the mount's root,
// and from the backend's root directory) is created, described, chmod'ed
// and unlinked as on a local file system; a name of NAME_MAX+1 bytes is
// ENAMETOOLONG, never EIO.
func TestLongPathsFromSubdirectory(t *testing.T) {
	mnt, root := mounted(t)
	sub := filepath.Join(mnt, strings.Repeat("s", 200), strings.Repeat("t", 200))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(sub, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	p, dirs := longPath(4095)
	for _, d := range dirs {
		if err := unix.Mkdirat(dfd, d, 0o755); err != nil {
			t.Fatalf("mkdir of a %d-byte path: %v", len(d), err)
		}
	}
	fd, err := unix.Openat(dfd, p, unix.O_CREAT|unix.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("create of a %d-byte path: %v", len(p), err)
	}
	if _, err := unix.Write(fd, []byte("long")); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, p, &st, 0); err != nil || st.Size != 4 {
		t.Fatalf("stat: %v (size %d)", err, st.Size)
	}
	if err := unix.Fchmodat(dfd, p, 0o600, 0); err != nil {
		t.Fatalf("chmod: %v", err)
	}
	if err := unix.Fstatat(dfd, p, &st, 0); err != nil || st.Mode&0o777 != 0o600 {
		t.Fatalf("mode after chmod: %o, %v", st.Mode&0o777, err)
	}
	if err := unix.Unlinkat(dfd, p, 0); err != nil {
		t.Fatalf("unlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, strings.Repeat("s", 200))); err != nil {
		t.Fatal(err)
	}
	// PATH_MAX bytes: the kernel's ENAMETOOLONG; a 256-byte name: ours.
	if _, err := unix.Openat(dfd, p+"x", unix.O_CREAT|unix.O_RDWR, 0o644); err != syscall.ENAMETOOLONG {
		t.Fatalf("create of a %d-byte path: %v, want ENAMETOOLONG", len(p)+1, err)
	}
	if _, err := unix.Openat(dfd, strings.Repeat("n", 256), unix.O_CREAT|unix.O_RDWR, 0o644); err != syscall.ENAMETOOLONG {
		t.Fatalf("create of a 256-byte name: %v, want ENAMETOOLONG", err)
	}
}

// TestTmpfile: open(2) with O_TMPFILE on the mount is EOPNOTSUPP (the
// mount has no unnamed files), as docs/posix.md says.
func TestTmpfile(t *testing.T) {
	mnt, _ := mounted(t)
	fd, err := unix.Open(mnt, unix.O_TMPFILE|unix.O_RDWR, 0o600)
	if err == nil {
		unix.Close(fd)
	}
	if err != unix.EOPNOTSUPP {
		t.Fatalf("O_TMPFILE: %v, want EOPNOTSUPP", err)
	}
}

// TestFallocate: fallocate mode 0 (posix_fallocate) through the mount
// grows the file on the backend and reserves its blocks there; punching a
// hole is EOPNOTSUPP.
func TestFallocate(t *testing.T) {
	mnt, root := mounted(t)
	f, err := os.Create(filepath.Join(mnt, "pre"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
		t.Fatalf("fallocate: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "pre"), &st); err != nil || st.Size != 1<<20 || st.Blocks < (1<<20)/512 {
		t.Fatalf("backend file after fallocate: size %d, blocks %d, %v", st.Size, st.Blocks, err)
	}
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != unix.EOPNOTSUPP {
		t.Fatalf("punch hole: %v, want EOPNOTSUPP", err)
	}
}
