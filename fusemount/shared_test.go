package fusemount_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestSharedFileParallelWriters: eight writers fill one file in interleaved
// 32 KiB blocks (IOR's shared strided layout), every block extending the
// file; each closes its descriptor and checks the close. A reader on
// another descriptor, opened while the writers' data may still be in
// flight, and the backend file itself then hold every byte in place.
// Overwrites of one block by two writes in turn leave the later bytes.
func TestSharedFileParallelWriters(t *testing.T) {
	mnt, root := mounted(t)
	const writers, blocks, bs = 8, 32, 32 << 10
	name := filepath.Join(mnt, "shared")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	block := func(w, b int) []byte {
		return bytes.Repeat([]byte{byte(w*blocks + b)}, bs)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				errs <- err
				return
			}
			for b := range blocks {
				if _, err := f.WriteAt(block(w, b), int64((b*writers+w)*bs)); err != nil {
					errs <- err
					f.Close()
					return
				}
			}
			errs <- f.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := make([]byte, 0, writers*blocks*bs)
	for b := range blocks {
		for w := range writers {
			want = append(want, block(w, b)...)
		}
	}
	for _, p := range []string{name, filepath.Join(root, "shared")} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, want %d; first difference at %d", p, len(got), len(want), firstDiff(got, want))
		}
	}

	// Two writes to one range in a row, then a read on another descriptor:
	// the read waits for them and sees the second.
	g, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 20 {
		first, second := bytes.Repeat([]byte{'a'}, bs), bytes.Repeat([]byte{byte('b' + i%20)}, bs)
		if _, err := g.WriteAt(first, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := g.WriteAt(second, 0); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, bs)
		if _, err := r.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, second) {
			t.Fatalf("round %d: read %q..., want the second write's %q...", i, got[:4], second[:4])
		}
	}
	if fi, err := os.Stat(name); err != nil || fi.Size() != int64(len(want)) {
		t.Fatalf("stat after the writes: %v, size %d, want %d", err, fi.Size(), len(want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestWriteThrough: with write-behind off, a write returns only once the
// backend file has it.
func TestWriteThrough(t *testing.T) {
	mnt, root := mountedOpts(t, -1)
	f, err := os.Create(filepath.Join(mnt, "wt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 10 {
		data := []byte(fmt.Sprintf("block %d", i))
		if _, err := f.WriteAt(data, int64(i*16)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "wt"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i*16:], data) {
			t.Fatalf("backend holds %q after write %d returned", got[i*16:], i)
		}
	}
}
