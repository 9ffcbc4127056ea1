package fusemount_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
)

// readers has procs processes (goroutines, each with its descriptor) read
// name in req-byte requests, 1D-strided (rank after rank) or each its own
// contiguous segment, and checks every byte against want.
func readers(t *testing.T, name string, want []byte, procs, req int, strided bool) {
	t.Helper()
	per := len(want) / procs / req
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(name)
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			b := make([]byte, req)
			for i := range per {
				off := int64((p*per + i) * req)
				if strided {
					off = int64((i*procs + p) * req)
				}
				if _, err := f.ReadAt(b, off); err != nil {
					errs <- fmt.Errorf("process %d: read at %d: %w", p, off, err)
					return
				}
				if !bytes.Equal(b, want[off:off+int64(req)]) {
					errs <- fmt.Errorf("process %d: bytes at %d differ", p, off)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// released waits until the mount's prefetcher holds no block (the kernel
// releases files after close returns).
func released(t *testing.T, m *fusemount.Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for m.PrefetchStats().Held != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the prefetcher still holds %d bytes after every file closed", m.PrefetchStats().Held)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Eight processes reading one file 1D-strided, and eight each reading
// their own segment of it, are served from prefetched blocks: every byte
// right, most of them fetched ahead, the blocks freed at the last close.
func TestPrefetchSequentialReaders(t *testing.T) {
	for _, strided := range []bool{true, false} {
		t.Run(fmt.Sprintf("strided=%v", strided), func(t *testing.T) {
			var reads atomic.Int64
			mnt, _, m := mountedServer(t, t.TempDir(), fwd.Options{Backend: countingBackend{reads: &reads}})
			name := filepath.Join(mnt, "f")
			const procs, req = 8, 64 << 10
			want := content(32<<20, 7)
			writeFile(t, name, want)
			readers(t, name, want, procs, req, strided)
			released(t, m)
			st := m.PrefetchStats()
			if st.Served < int64(len(want))/2 {
				t.Errorf("%d of %d bytes served from prefetched blocks, want at least half (%+v)", st.Served, len(want), st)
			}
			// A block the readers drifted past partly read is dropped and
			// its rest read again: a few on a slow run (the race
			// detector's: 7 blocks, 1.16 times the file).
			if st.Fetched > int64(len(want))+int64(len(want))/4 {
				t.Errorf("fetched %d bytes ahead for a file of %d (%+v)", st.Fetched, len(want), st)
			}
		})
	}
}

// Random reads prefetch nothing: each goes to the forwarder as issued.
func TestPrefetchRandomReads(t *testing.T) {
	mnt, _, m := mountedServer(t, t.TempDir(), fwd.Options{}, fusemount.Options{DirectReads: false})
	name := filepath.Join(mnt, "f")
	want := content(64<<20, 3)
	writeFile(t, name, want)
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rnd := rand.New(rand.NewPCG(4, 2))
	b := make([]byte, 4096)
	for range 500 {
		off := rnd.Int64N(int64(len(want))/4096) * 4096
		if _, err := f.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want[off:off+4096]) {
			t.Fatalf("bytes at %d differ", off)
		}
	}
	if st := m.PrefetchStats(); st.Fetched != 0 {
		t.Fatalf("random reads fetched %d bytes ahead, want 0 (%+v)", st.Fetched, st)
	}
}

// A file changed through another mount (another node) between two opens is
// read afresh at the second, though blocks of it were prefetched; a reader
// that keeps a descriptor open meanwhile does not keep them alive.
func TestPrefetchOtherMountsWrite(t *testing.T) {
	a, b := twoMounts(t, fusemount.Options{CacheTimeout: time.Hour})
	const n = 16<<20 + 4321
	writeFile(t, filepath.Join(b, "f"), content(n, 1))
	held, err := os.Open(filepath.Join(a, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// Read half: the blocks ahead are prefetched and stay (held is open).
	part := make([]byte, n/2)
	if _, err := held.ReadAt(part, 0); err != nil {
		t.Fatal(err)
	}
	same(t, "A's first half", part, content(n, 1)[:n/2])
	writeFile(t, filepath.Join(b, "f"), content(n, 2))
	same(t, "A after B overwrote the file", readAll(t, filepath.Join(a, "f")), content(n, 2))
}

// A write through this mount is seen at once by a reader whose descriptor
// stays open, in the range it had prefetched, and the blocks of the file
// are dropped while it is open for writing.
func TestPrefetchLocalWriteInvalidates(t *testing.T) {
	mnt, _, m := mountedServer(t, t.TempDir(), fwd.Options{})
	name := filepath.Join(mnt, "f")
	const n = 16 << 20
	want := content(n, 1)
	writeFile(t, name, want)
	r, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	for off := 0; off < 4<<20; off += len(buf) {
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if st := m.PrefetchStats(); st.Held == 0 {
		t.Fatalf("nothing prefetched ahead of a sequential reader (%+v)", st)
	}
	w, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	patch := bytes.Repeat([]byte{0xAB}, 300<<10)
	const at = 5<<20 + 12345 // ahead of the reader: prefetched
	if _, err := w.WriteAt(patch, at); err != nil {
		t.Fatal(err)
	}
	copy(want[at:], patch)
	got := make([]byte, n-4<<20)
	if _, err := r.ReadAt(got, 4<<20); err != nil {
		t.Fatal(err)
	}
	same(t, "the reader's rest after the write", got, want[4<<20:])
	if st := m.PrefetchStats(); st.Held != 0 {
		t.Errorf("the prefetcher holds %d bytes while the file is open for writing, want 0", st.Held)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	same(t, "a new open after the writer closed", readAll(t, name), want)
}

// The prefetcher holds no more than its budgets, per file and for the
// mount, while many files are read at once; every byte is right.
func TestPrefetchMemoryBound(t *testing.T) {
	const mount, file = 6 << 20, 3 << 20
	mnt, _, m := mountedServer(t, t.TempDir(), fwd.Options{},
		fusemount.Options{Prefetch: mount, PrefetchFile: file, PrefetchBlock: 1 << 20})
	const files = 6
	wants := make([][]byte, files)
	for i := range wants {
		wants[i] = content(8<<20, byte(i))
		writeFile(t, filepath.Join(mnt, fmt.Sprint(i)), wants[i])
	}
	var wg sync.WaitGroup
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readers(t, filepath.Join(mnt, fmt.Sprint(i)), wants[i], 2, 128<<10, true)
		}()
	}
	wg.Wait()
	released(t, m)
	st := m.PrefetchStats()
	if st.Peak > mount {
		t.Errorf("the prefetcher held %d bytes at its peak, budget %d", st.Peak, mount)
	}
	if st.Served == 0 {
		t.Errorf("nothing served from prefetched blocks (%+v)", st)
	}
}
