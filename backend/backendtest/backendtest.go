package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/adaptio/adaptio/backend"
)

// Harness is one fresh, empty backend for one subtest.
type Harness struct {
	Backend backend.Backend
	// Symlink, if set, creates in the backing store a symbolic link at
	// relative path name whose target is the absolute path target (outside
	// the export root). The path-confinement test uses it.
	Symlink func(name, target string) error
}

// Run runs the suite; newHarness is called once per subtest, and the
// backend is closed when the subtest ends.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ShortReadAtEOF", testShortRead},
		{"Holes", testHoles},
		{"Metadata", testMetadata},
		{"PathConfinement", testPathConfinement},
		{"WrongServer", testWrongServer},
		{"SplitCoversRange", testSplit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			t.Cleanup(func() { h.Backend.Close() })
			tt.fn(t, h)
		})
	}
}

// WriteAll writes data at off through the pieces Split gives.
func WriteAll(ctx context.Context, b backend.Backend, path string, data []byte, off int64) error {
	pieces, err := b.Split(nil, path, off, int64(len(data)))
	if err != nil {
		return err
	}
	for _, pc := range pieces {
		buf := data[pc.Offset-off:][:pc.Length]
		n, err := b.WriteAt(ctx, path, pc.Server, buf, pc.Offset)
		if err != nil {
			return fmt.Errorf("write piece %+v: %w", pc, err)
		}
		if n != len(buf) {
			return fmt.Errorf("write piece %+v: wrote %d bytes", pc, n)
		}
	}
	return nil
}

// ReadAll reads file bytes [off, off+n) through the pieces Split gives and
// returns the bytes read up to the first short piece.
func ReadAll(ctx context.Context, b backend.Backend, path string, off, n int64) ([]byte, error) {
	pieces, err := b.Split(nil, path, off, n)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	for _, pc := range pieces {
		buf := out[pc.Offset-off:][:pc.Length]
		got, err := b.ReadAt(ctx, path, pc.Server, buf, pc.Offset)
		if err != nil {
			return nil, fmt.Errorf("read piece %+v: %w", pc, err)
		}
		if got < len(buf) {
			return out[:pc.Offset-off+int64(got)], nil
		}
	}
	return out, nil
}

func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustCreate(t *testing.T, b backend.Backend, path string) {
	t.Helper()
	if err := b.Create(context.Background(), path, 0o644); err != nil {
		t.Fatalf("Create(%q): %v", path, err)
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	tests := []struct {
		name string
		off  int64
		n    int
	}{
		{"aligned 1MiB", 0, 1 << 20},
		{"small", 10, 100},
		{"unaligned across stripes", 65536 - 17, 3*65536 + 5},
		{"32KiB at 96KiB", 96 << 10, 32 << 10},
		{"one byte", 12345, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("rt%d.dat", i)
			mustCreate(t, b, path)
			data := pattern(uint64(i), tt.n)
			if err := WriteAll(ctx, b, path, data, tt.off); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAll(ctx, b, path, tt.off, int64(tt.n))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes differing from the %d written", len(got), len(data))
			}
			st, err := b.Stat(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.off + int64(tt.n); st.Size != want {
				t.Errorf("Stat size: got %d, want %d", st.Size, want)
			}
		})
	}
}

func testConcurrentWriters(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	const writers, chunk, rounds = 8, 20000, 4 // chunks straddle stripes
	mustCreate(t, b, "shared.dat")
	data := pattern(42, writers*chunk*rounds)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds { // 1D-strided: writer w owns chunks r*writers+w
				off := int64((r*writers + w) * chunk)
				if err := WriteAll(ctx, b, "shared.dat", data[off:off+chunk], off); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := ReadAll(ctx, b, "shared.dat", 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("concurrent writes: read back %d bytes, want %d identical bytes", len(got), len(data))
	}
}

func testShortRead(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	mustCreate(t, b, "eof.dat")
	const size = 100000
	data := pattern(3, size)
	if err := WriteAll(ctx, b, "eof.dat", data, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		off  int64
		n    int64
		want int
	}{
		{"straddling EOF", 90000, 50000, 10000},
		{"at EOF", size, 1000, 0},
		{"past EOF", 300000, 1000, 0},
		{"ends at EOF", 0, size, size},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadAll(ctx, b, "eof.dat", tt.off, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("read %d bytes, want %d", len(got), tt.want)
			}
			if !bytes.Equal(got, data[min(tt.off, size):][:tt.want]) {
				t.Fatal("bytes differ")
			}
		})
	}
}

func testHoles(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	mustCreate(t, b, "holes.dat")
	data := pattern(5, 1000)
	const at = 5*65536 + 77 // leaves whole stripes on several servers unwritten
	if err := WriteAll(ctx, b, "holes.dat", data, at); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAll(ctx, b, "holes.dat", 0, at+1000)
	if err != nil {
		t.Fatal(err)
	}
	want := append(make([]byte, at), data...)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d: zeros then the data", len(got), len(want))
	}
	// Truncate extends with zeros, shrinks by cutting.
	if err := b.Truncate(ctx, "holes.dat", 3*65536+10); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Stat(ctx, "holes.dat"); st.Size != 3*65536+10 {
		t.Fatalf("size after shrinking: got %d, want %d", st.Size, 3*65536+10)
	}
	if err := b.Truncate(ctx, "holes.dat", 9*65536); err != nil {
		t.Fatal(err)
	}
	got, err = ReadAll(ctx, b, "holes.dat", 0, 10*65536)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9*65536 || slices.ContainsFunc(got, func(c byte) bool { return c != 0 }) {
		t.Fatalf("after truncating to 9 stripes: read %d bytes (want %d zeros)", len(got), 9*65536)
	}
}

func testMetadata(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	if err := b.Mkdir(ctx, "dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Mkdir(ctx, "dir", 0o755); !errors.Is(err, backend.ErrExist) {
		t.Fatalf("Mkdir twice: got %v, want ErrExist", err)
	}
	for _, name := range []string{"dir/b", "dir/a", "dir/c"} {
		mustCreate(t, b, name)
	}
	mustCreate(t, b, "dir/a") // idempotent
	if err := WriteAll(ctx, b, "dir/b", pattern(1, 70000), 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "dir/b") // keeps contents
	if err := b.Mkdir(ctx, "dir/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := b.ReadDir(ctx, "dir")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, fmt.Sprintf("%s:%d:%v", e.Name, e.Size, e.IsDir))
	}
	want := []string{"a:0:false", "b:70000:false", "c:0:false", "sub:" + fmt.Sprint(dirSize(ents, "sub")) + ":true"}
	if !slices.Equal(got, want) {
		t.Fatalf("ReadDir: got %v, want %v", got, want)
	}
	st, err := b.Stat(ctx, "dir")
	if err != nil || !st.IsDir || st.Name != "dir" {
		t.Fatalf("Stat(dir): got %+v, %v; want a directory named dir", st, err)
	}
	st, err = b.Stat(ctx, "dir/b")
	if err != nil || st.IsDir || st.Size != 70000 || st.Name != "b" || st.Mode.Perm() == 0 {
		t.Fatalf("Stat(dir/b): got %+v, %v; want a 70000-byte file named b", st, err)
	}
	if err := b.Fsync(ctx, "dir/b"); err != nil {
		t.Fatalf("Fsync: %v", err)
	}
	if err := b.Unlink(ctx, "dir/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "dir/b"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("Stat after Unlink: got %v, want ErrNotExist", err)
	}
	if err := b.Unlink(ctx, "dir/b"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("Unlink twice: got %v, want ErrNotExist", err)
	}
	if _, err := b.ReadAt(ctx, "dir/b", ServerOf(t, b, "dir/b", 0), make([]byte, 10), 0); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("ReadAt of a removed file: got %v, want ErrNotExist", err)
	}
	if _, err := b.WriteAt(ctx, "missing", ServerOf(t, b, "missing", 0), make([]byte, 10), 0); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("WriteAt of a missing file: got %v, want ErrNotExist", err)
	}
	if _, err := b.ReadDir(ctx, "nodir"); !errors.Is(err, backend.ErrNotExist) {
		t.Fatalf("ReadDir of a missing directory: got %v, want ErrNotExist", err)
	}
	// A file re-created after unlink starts empty.
	mustCreate(t, b, "dir/b")
	if st, _ := b.Stat(ctx, "dir/b"); st.Size != 0 {
		t.Fatalf("re-created file: size %d, want 0", st.Size)
	}
	root, err := b.ReadDir(ctx, "")
	if err != nil || len(root) != 1 || root[0].Name != "dir" {
		t.Fatalf("ReadDir(root): got %v, %v; want [dir]", root, err)
	}
}

func dirSize(ents []backend.FileInfo, name string) int64 {
	for _, e := range ents {
		if e.Name == name {
			return e.Size
		}
	}
	return -1
}

func testPathConfinement(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	outside := t.TempDir()
	secret := outside + "/secret"
	if err := writeFile(secret, []byte("outside")); err != nil {
		t.Fatal(err)
	}
	bad := []string{"../x", "/etc/passwd", "a/../../x", "..", "dir/../../x"}
	if h.Symlink != nil {
		if err := h.Symlink("escape", outside); err != nil {
			t.Fatal(err)
		}
		if err := h.Symlink("escapefile", secret); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, "escape/secret", "escapefile", "escape/new")
	} else {
		t.Log("backend offers no Symlink hook: symlink escapes not tested")
	}
	for _, p := range bad {
		t.Run(p, func(t *testing.T) {
			// A link leaving the root may be described itself (lstat
			// neither follows nor reads it); nothing beyond it may be.
			fi, err := b.Stat(ctx, p)
			if link := p == "escapefile" && err == nil && fi.Mode&fs.ModeSymlink != 0; !link && !errors.Is(err, backend.ErrPath) {
				t.Errorf("Stat: got %v, %v; want ErrPath", fi.Mode, err)
			}
			if err := b.Create(ctx, p, 0o644); !errors.Is(err, backend.ErrPath) {
				t.Errorf("Create: got %v, want ErrPath", err)
			}
			srv := 0 // the server of byte 0, where the path is clean enough to have one
			if pieces, err := b.Split(nil, p, 0, 1); err == nil && len(pieces) == 1 {
				srv = pieces[0].Server
			}
			if _, err := b.ReadAt(ctx, p, srv, make([]byte, 4), 0); !errors.Is(err, backend.ErrPath) {
				t.Errorf("ReadAt: got %v, want ErrPath", err)
			}
			if _, err := b.WriteAt(ctx, p, srv, []byte("pwnd"), 0); !errors.Is(err, backend.ErrPath) {
				t.Errorf("WriteAt: got %v, want ErrPath", err)
			}
			if err := b.Truncate(ctx, p, 0); !errors.Is(err, backend.ErrPath) {
				t.Errorf("Truncate: got %v, want ErrPath", err)
			}
			err = b.Mkdir(ctx, p, 0o755)
			if existing := p == "escapefile"; !errors.Is(err, backend.ErrPath) && !(existing && errors.Is(err, backend.ErrExist)) {
				t.Errorf("Mkdir: got %v, want ErrPath", err)
			}
			if ns, ok := b.(backend.Namespace); ok {
				err := ns.Mknod(ctx, p, fs.ModeNamedPipe|0o644, 0)
				if existing := p == "escapefile"; !errors.Is(err, backend.ErrPath) && !(existing && errors.Is(err, backend.ErrExist)) {
					t.Errorf("Mknod: got %v, want ErrPath", err)
				}
				if target, err := ns.Readlink(ctx, p); !errors.Is(err, backend.ErrPath) {
					t.Errorf("Readlink: got %q, %v; want ErrPath", target, err)
				}
			}
		})
	}
	if got, err := readFile(secret); err != nil || string(got) != "outside" {
		t.Fatalf("file outside the root changed: %q, %v", got, err)
	}
	if n, err := dirLen(outside); err != nil || n != 1 {
		t.Fatalf("directory outside the root has %d entries (%v), want 1", n, err)
	}
}

func testWrongServer(t *testing.T, h Harness) {
	ctx := context.Background()
	b := h.Backend
	if b.Servers() < 2 {
		t.Skip("one data server")
	}
	mustCreate(t, b, "w.dat")
	pieces, err := b.Split(nil, "w.dat", 0, 10)
	if err != nil || len(pieces) != 1 {
		t.Fatalf("Split: %v, %v", pieces, err)
	}
	wrong := (pieces[0].Server + 1) % b.Servers()
	if _, err := b.WriteAt(ctx, "w.dat", wrong, make([]byte, 10), 0); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("WriteAt on the wrong server: got %v, want ErrBadArgument", err)
	}
	if _, err := b.ReadAt(ctx, "w.dat", b.Servers(), make([]byte, 10), 0); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("ReadAt on server %d of %d: got %v, want ErrBadArgument", b.Servers(), b.Servers(), err)
	}
}

func testSplit(t *testing.T, h Harness) {
	b := h.Backend
	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[int]bool)
	for range 200 {
		off, n := r.Int64N(1<<22), r.Int64N(1<<20)
		pieces, err := b.Split(nil, "any.dat", off, n)
		if err != nil {
			t.Fatal(err)
		}
		at := off
		for _, pc := range pieces {
			if pc.Offset != at || pc.Length <= 0 || pc.Server < 0 || pc.Server >= b.Servers() {
				t.Fatalf("Split(%d, %d): bad piece %+v in %v", off, n, pc, pieces)
			}
			seen[pc.Server] = true
			at += pc.Length
		}
		if at != off+n {
			t.Fatalf("Split(%d, %d): pieces end at %d", off, n, at)
		}
	}
	if len(seen) != b.Servers() {
		t.Errorf("random ranges reached %d of %d servers", len(seen), b.Servers())
	}
}

// ServerOf is the data server holding byte off of path (files start on
// different servers: layout.Layout.FirstServer).
func ServerOf(t *testing.T, b backend.Backend, path string, off int64) int {
	t.Helper()
	pieces, err := b.Split(nil, path, off, 1)
	if err != nil || len(pieces) != 1 {
		t.Fatalf("Split(%q, %d, 1) = %v, %v", path, off, pieces, err)
	}
	return pieces[0].Server
}
