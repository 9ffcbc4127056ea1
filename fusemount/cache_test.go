package fusemount_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
)

// content is n bytes of a pattern that differs with gen.
func content(n int, gen byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i/4096) ^ gen*37 ^ byte(i)
	}
	return b
}

// readAll opens name read-only, reads it whole and closes it, with no
// stat (os.ReadFile's would have the kernel revalidate the attributes, and
// drop changed pages itself, hiding what the open does).
func readAll(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// same fails the test unless got is want, naming the first differing byte.
func same(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d; first difference at byte %d", what, len(got), len(want), firstDiff(got, want))
	}
}

// writeFile writes b to name from offset 0 without truncating (a node
// overwriting a file in place), and closes it, so that the write-behind is
// at the forwarder.
func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A file read through one mount (node A) while another mount (node B)
// changes it: an open on A after B's close reads B's bytes, whether B
// overwrote the file in place, grew it or cut it short (close-to-open, as
// NFS). The attribute and entry caches are held for an hour, so it is the
// open that revalidates, not a timeout.
func TestCachedReadsCloseToOpen(t *testing.T) {
	a, b := twoMounts(t, fusemount.Options{CacheTimeout: time.Hour})
	const n = 3<<20 + 1234
	writeFile(t, filepath.Join(b, "f"), content(n, 1))
	same(t, "A's first read", readAll(t, filepath.Join(a, "f")), content(n, 1))

	// A keeps a descriptor open meanwhile, as a reader that stays.
	held, err := os.Open(filepath.Join(a, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	writeFile(t, filepath.Join(b, "f"), content(n, 2))
	same(t, "A after B overwrote the file", readAll(t, filepath.Join(a, "f")), content(n, 2))

	grown := content(n+5<<20, 3)
	writeFile(t, filepath.Join(b, "f"), grown)
	same(t, "A after B grew the file", readAll(t, filepath.Join(a, "f")), grown)

	if err := os.Truncate(filepath.Join(b, "f"), 1<<20); err != nil {
		t.Fatal(err)
	}
	same(t, "A after B cut the file short", readAll(t, filepath.Join(a, "f")), grown[:1<<20])
}

// Writes through this mount are seen at once by a reader that keeps its
// read-only descriptor open: in place, past the cached end, and a truncate,
// with write-behind on (the default) and off.
func TestCachedReadSeesThisMountsWrites(t *testing.T) {
	for _, wb := range []int64{0, -1} {
		t.Run(fmt.Sprintf("write-behind=%d", wb), func(t *testing.T) {
			mnt, _ := mountedClient(t, t.TempDir(), fwd.Options{}, fusemount.Options{CacheTimeout: time.Hour, WriteBehind: wb})
			name := filepath.Join(mnt, "f")
			const n = 2 << 20
			want := content(n, 1)
			writeFile(t, name, want)
			r, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := make([]byte, n)
			if _, err := r.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			same(t, "first read", got, want)

			w, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			patch := content(100<<10, 9)
			if _, err := w.WriteAt(patch, 300<<10+17); err != nil {
				t.Fatal(err)
			}
			copy(want[300<<10+17:], patch)
			if _, err := r.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			same(t, "after a write in place", got, want)

			tail := content(64<<10, 5)
			if _, err := w.WriteAt(tail, n); err != nil {
				t.Fatal(err)
			}
			want = append(want, tail...)
			got = make([]byte, len(want)+1)
			k, _ := r.ReadAt(got, 0)
			same(t, "after a write past the end", got[:k], want)

			if err := w.Truncate(1000); err != nil {
				t.Fatal(err)
			}
			k, _ = r.ReadAt(got, 0)
			same(t, "after a truncate", got[:k], want[:1000])
		})
	}
}

// A reader holding the file open that takes a lock on it reads what another
// node wrote before releasing its lock, although its attributes are cached
// for an hour: the lock drops the file's cached pages (as NFS revalidates at
// a lock). This is what ROMIO's data sieving relies on.
func TestLockDropsCachedPages(t *testing.T) {
	a, b := twoMounts(t, fusemount.Options{CacheTimeout: time.Hour})
	const n = 1 << 20
	writeFile(t, filepath.Join(b, "f"), content(n, 1))
	r, err := os.Open(filepath.Join(a, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, n)
	if _, err := r.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	same(t, "first read", got, content(n, 1))

	w, err := os.OpenFile(filepath.Join(b, "f"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(w.Fd(), unix.F_SETLKW, &lk); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(content(n, 2), 0); err != nil {
		t.Fatal(err)
	}
	lk.Type = unix.F_UNLCK
	if err := unix.FcntlFlock(w.Fd(), unix.F_SETLK, &lk); err != nil { // waits for B's write-behind
		t.Fatal(err)
	}

	lk = unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(r.Fd(), unix.F_SETLKW, &lk); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	same(t, "A's read under its lock", got, content(n, 2))
}

// countingBackend counts the reads that reach the backend.
type countingBackend struct {
	backend.Backend
	reads *atomic.Int64
}

func (c countingBackend) Wrap(b backend.Backend) backend.Backend {
	return countingBackend{Backend: b, reads: c.reads}
}

func (c countingBackend) ReadAt(ctx context.Context, path string, server int, p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.Backend.ReadAt(ctx, path, server, p, off)
}

// A file read again, unchanged, is served from the page cache: no read
// reaches the forwarder. With DirectReads every read does.
func TestCachedReReadStaysOnTheNode(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct-reads=%v", direct), func(t *testing.T) {
			var reads atomic.Int64
			mnt, _ := mountedClient(t, t.TempDir(), fwd.Options{Backend: countingBackend{reads: &reads}},
				fusemount.Options{DirectReads: direct})
			name := filepath.Join(mnt, "f")
			want := content(4<<20, 1)
			writeFile(t, name, want)
			same(t, "first read", readAll(t, name), want)
			before := reads.Load()
			same(t, "second read", readAll(t, name), want)
			again := reads.Load() - before
			if direct && again == 0 {
				t.Fatal("with DirectReads the second read reached the backend 0 times")
			}
			if !direct && again != 0 {
				t.Fatalf("the unchanged file's second read reached the backend %d times, want 0 (page cache)", again)
			}
		})
	}
}

// Eight processes read one file 1D-strided in 32 KiB requests through the
// page cache while the kernel reads ahead: every byte is right.
func TestCachedStridedReaders(t *testing.T) {
	mnt, _ := mounted(t)
	name := filepath.Join(mnt, "f")
	const procs, req, per = 8, 32 << 10, 48
	want := content(procs*req*per, 4)
	writeFile(t, name, want)
	readers(t, name, want, procs, req, true)
}

// The mount raises the kernel's readahead for its connection to its
// largest request (the kernel offers FUSE 128 KiB).
func TestReadaheadRaised(t *testing.T) {
	mnt, _ := mountedClient(t, t.TempDir(), fwd.Options{}, fusemount.Options{MaxWrite: 512 << 10})
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		t.Skipf("the kernel's readahead of the mount is not readable here: %v", err)
	}
	if got := string(bytes.TrimSpace(b)); got != "512" {
		t.Fatalf("read_ahead_kb %s, want 512", got)
	}
}
