package fusemount_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fusemount"
)

// TestUnlinkedWhileOpen: a file unlinked (or replaced by a rename) while
// open stays readable, writable and fstat-able through its descriptors
// until the last close (pjdfstest unlink/14.t), kept on the backend under a
// hidden name that the mount never shows and removes at the last close.
func TestUnlinkedWhileOpen(t *testing.T) {
	mnt, root := mounted(t)
	t.Run("read, write, fstat and ftruncate after unlink", func(t *testing.T) {
		p := filepath.Join(mnt, "u")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("Hello, World!"), 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lstat of the unlinked name: %v, want ENOENT", err)
		}
		got := make([]byte, 13)
		if n, err := f.ReadAt(got, 0); err != nil || string(got[:n]) != "Hello, World!" {
			t.Fatalf("pread after unlink: %q, %v", got[:n], err)
		}
		if _, err := f.WriteAt([]byte("Bye"), 13); err != nil {
			t.Fatalf("pwrite after unlink: %v", err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 || st.Size != 16 {
			t.Fatalf("fstat after unlink: nlink %d, size %d, %v; want 0 links, 16 bytes", st.Nlink, st.Size, err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatalf("ftruncate after unlink: %v", err)
		}
		// Reopened through /proc (the kernel asks the mount to open the
		// inode, which has no name left).
		if got, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err != nil || string(got) != "Hello" {
			t.Fatalf("read through /proc/self/fd: %q, %v", got, err)
		}
		hidden := hiddenOn(t, root)
		if len(hidden) != 1 {
			t.Fatalf("backend hidden names %v, want one", hidden)
		}
		if names := listed(t, mnt); slices.ContainsFunc(names, isHidden) {
			t.Fatalf("mount lists %v", names)
		}
		if _, err := os.Lstat(filepath.Join(mnt, hidden[0])); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lookup of the hidden name through the mount: %v, want ENOENT", err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		waitNoHidden(t, root)
	})
	t.Run("hard link", func(t *testing.T) {
		a, b := filepath.Join(mnt, "h1"), filepath.Join(mnt, "h2")
		if err := os.WriteFile(a, []byte("linked"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(a, b); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(a)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 1 {
			t.Fatalf("fstat: nlink %d, %v; want 1 (h2)", st.Nlink, err)
		}
		if err := syscall.Stat(b, &st); err != nil || st.Nlink != 1 {
			t.Fatalf("stat h2: nlink %d, %v; want 1", st.Nlink, err)
		}
		if got, err := os.ReadFile(b); err != nil || string(got) != "linked" {
			t.Fatalf("h2: %q, %v", got, err)
		}
		f.Close()
		waitNoHidden(t, root)
		if err := syscall.Stat(filepath.Join(root, "h2"), &st); err != nil || st.Nlink != 1 {
			t.Fatalf("backend h2: nlink %d, %v; want 1", st.Nlink, err)
		}
	})
	t.Run("rename over an open file", func(t *testing.T) {
		a, b := filepath.Join(mnt, "ra"), filepath.Join(mnt, "rb")
		for _, w := range [][2]string{{a, "new"}, {b, "old"}} {
			if err := os.WriteFile(w[0], []byte(w[1]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.OpenFile(b, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 3)
		if _, err := f.ReadAt(got, 0); err != nil || string(got) != "old" {
			t.Fatalf("the replaced file through its descriptor: %q, %v; want old", got, err)
		}
		if _, err := f.WriteAt([]byte("OLD"), 0); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
			t.Fatalf("fstat of the replaced file: nlink %d, %v; want 0", st.Nlink, err)
		}
		if got, err := os.ReadFile(b); err != nil || string(got) != "new" {
			t.Fatalf("rb: %q, %v; want new", got, err)
		}
		f.Close()
		waitNoHidden(t, root)
		if got, err := os.ReadFile(filepath.Join(root, "rb")); err != nil || string(got) != "new" {
			t.Fatalf("backend rb: %q, %v; want new", got, err)
		}
	})
	t.Run("rmdir of a directory holding only unlinked open files", func(t *testing.T) {
		d := filepath.Join(mnt, "d")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(d, "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("kept"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(d, "f")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(d); err != nil {
			t.Fatalf("rmdir of a directory empty to its users: %v", err)
		}
		got := make([]byte, 4)
		if _, err := f.ReadAt(got, 0); err != nil || string(got) != "kept" {
			t.Fatalf("read after its directory was removed: %q, %v", got, err)
		}
		if _, err := os.Stat(filepath.Join(root, "d")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("backend d: %v, want removed", err)
		}
		f.Close()
		waitNoHidden(t, root)
	})
	t.Run("rename over a directory holding only unlinked open files", func(t *testing.T) {
		from, to := filepath.Join(mnt, "from"), filepath.Join(mnt, "to")
		for _, d := range []string{from, to} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Create(filepath.Join(to, "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := os.Remove(filepath.Join(to, "f")); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Rename(from, to); err != nil {
			t.Fatalf("rename over a directory empty to its users: %v", err)
		}
		if _, err := f.WriteString("still"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		waitNoHidden(t, root)
	})
	t.Run("a directory with another's hidden file is not empty", func(t *testing.T) {
		d := filepath.Join(mnt, "d2")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// Left by a mount that died with the file open.
		left := filepath.Join(root, "d2", fusemount.HiddenPrefix+"0-1")
		if err := os.WriteFile(left, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if names := listed(t, d); len(names) != 0 {
			t.Fatalf("mount lists %v in d2", names)
		}
		if err := syscall.Rmdir(d); !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			t.Fatalf("rmdir: %v, want ENOTEMPTY", err)
		}
		if _, err := os.Stat(left); err != nil {
			t.Fatalf("the other's hidden file: %v", err)
		}
		if err := os.Remove(left); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("concurrent unlinks of open files", func(t *testing.T) {
		const workers, rounds = 8, 20
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					p := filepath.Join(mnt, fmt.Sprintf("c%d", w))
					want := fmt.Sprintf("worker %d round %d", w, r)
					if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
						t.Error(err)
						return
					}
					a, err := os.Open(p)
					if err != nil {
						t.Error(err)
						return
					}
					b, err := os.Open(p)
					if err != nil {
						a.Close()
						t.Error(err)
						return
					}
					if err := os.Remove(p); err != nil {
						t.Error(err)
					}
					a.Close() // b keeps the file
					got := make([]byte, len(want))
					if _, err := b.ReadAt(got, 0); err != nil || string(got) != want {
						t.Errorf("worker %d round %d: %q, %v", w, r, got, err)
					}
					b.Close()
				}
			})
		}
		wg.Wait()
		waitNoHidden(t, root)
	})
	t.Run("hidden names are reserved", func(t *testing.T) {
		name := filepath.Join(mnt, fusemount.HiddenPrefix+"mine")
		if err := os.WriteFile(name, nil, 0o644); !errors.Is(err, syscall.EPERM) {
			t.Errorf("create: %v, want EPERM", err)
		}
		if err := os.Mkdir(name, 0o755); !errors.Is(err, syscall.EPERM) {
			t.Errorf("mkdir: %v, want EPERM", err)
		}
		if err := os.Symlink("x", name); !errors.Is(err, syscall.EPERM) {
			t.Errorf("symlink: %v, want EPERM", err)
		}
		if err := os.WriteFile(filepath.Join(mnt, "r"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(mnt, "r"), name); !errors.Is(err, syscall.EPERM) {
			t.Errorf("rename to: %v, want EPERM", err)
		}
		if err := os.Link(filepath.Join(mnt, "r"), name); !errors.Is(err, syscall.EPERM) {
			t.Errorf("link: %v, want EPERM", err)
		}
	})
}

func isHidden(name string) bool { return strings.HasPrefix(name, fusemount.HiddenPrefix) }

// hiddenOn lists the hidden names in dir (on the backend).
func hiddenOn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range listed(t, dir) {
		if isHidden(n) {
			out = append(out, n)
		}
	}
	return out
}

func listed(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// waitNoHidden waits until root (on the backend) has no hidden name left:
// the kernel sends the release of a closed file after close(2) returns.
func waitNoHidden(t *testing.T, root string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h := hiddenOn(t, root)
		if len(h) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hidden names left on the backend after the last close: %v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
