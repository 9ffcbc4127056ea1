package posix_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/backendtest"
	"github.com/adaptio/adaptio/backend/lustre"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/sched"
)

// The tests serve Lustre layouts from a user.lov attribute of files on the
// test's directory (tmpfs and ext4 store user. attributes only): the
// lustre kind reads it through Options.XattrNames as it reads lustre.lov
// on a Lustre client.
const testXattr = "user.lov"

const lmib = 1 << 20

// plainLayout is a v1 layout with objects on osts.
func plainLayout(stripe uint32, osts ...int) []byte {
	return lustre.Encode(lustre.Layout{Magic: lustre.MagicV1, Components: []lustre.Component{{
		Pattern: lustre.PatternRAID0, StripeSize: stripe, StripeCount: len(osts), OSTs: osts}}})
}

// setLayout writes layout bytes as name's user.lov attribute, creating the
// file if needed; it skips the test where the file system stores no user
// attributes.
func setLayout(t *testing.T, dir, name string, value []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Setxattr(p, testXattr, value, 0); err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			t.Skipf("no user. extended attributes on %s: %v", dir, err)
		}
		t.Fatal(err)
	}
}

func openLustre(t *testing.T, dir string, servers int) *posix.Backend {
	t.Helper()
	b, err := posix.Open(posix.Options{Root: dir, Layout: posix.LayoutLustre, Servers: servers, XattrNames: []string{testXattr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if b.LayoutKind() != posix.LayoutLustre || b.Servers() != servers {
		t.Fatalf("kind %s, %d servers; want lustre, %d", b.LayoutKind(), b.Servers(), servers)
	}
	return b
}

func split(t *testing.T, b *posix.Backend, name string, off, n int64) []layout.Piece {
	t.Helper()
	pieces, err := b.Split(nil, name, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return pieces
}

// A file on OSTs [7, 2, 5] with 1 MiB stripes: requests split where the
// stripes end, each piece on its OST's queue; ReadAt and WriteAt accept a
// piece on its OST only.
func TestLustreSplit(t *testing.T) {
	dir := t.TempDir()
	setLayout(t, dir, "f", plainLayout(lmib, 7, 2, 5))
	b := openLustre(t, dir, 8)
	tests := []struct {
		off, n int64
		want   []layout.Piece
	}{
		{0, 3 * lmib, []layout.Piece{{Server: 7, Offset: 0, Length: lmib}, {Server: 2, Offset: lmib, Length: lmib}, {Server: 5, Offset: 2 * lmib, Length: lmib}}},
		{lmib - 10, 20, []layout.Piece{{Server: 7, Offset: lmib - 10, Length: 10}, {Server: 2, Offset: lmib, Length: 10}}},
		{3*lmib + 5, 100, []layout.Piece{{Server: 7, Offset: 3*lmib + 5, Length: 100}}},
		{5 * lmib, 0, nil},
	}
	for _, tt := range tests {
		if got := split(t, b, "f", tt.off, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("Split(%d, %d) = %v, want %v", tt.off, tt.n, got, tt.want)
		}
	}
	ctx := context.Background()
	if _, err := b.WriteAt(ctx, "f", 2, make([]byte, 4096), lmib); err != nil {
		t.Errorf("WriteAt on OST 2 in its stripe: %v", err)
	}
	if _, err := b.WriteAt(ctx, "f", 7, make([]byte, 4096), lmib); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("WriteAt on OST 7 in OST 2's stripe: %v, want ErrBadArgument", err)
	}
	if _, err := b.ReadAt(ctx, "f", 8, make([]byte, 1), 0); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("ReadAt on server 8 of 8: %v, want ErrBadArgument", err)
	}
	if err := b.SetLayout(".", layout.Default(8)); !errors.Is(err, posix.ErrNotStatic) {
		t.Errorf("SetLayout on a lustre backend: %v, want ErrNotStatic", err)
	}
}

// A progressive layout: the second component is not instantiated when the
// first request reaches it; once the file system instantiates it (here: the
// attribute rewritten, with no open in between), the next request there
// reads the layout again and follows its OSTs.
func TestLustrePFLInstantiation(t *testing.T) {
	dir := t.TempDir()
	pfl := func(second []int) []byte {
		c2 := lustre.Component{ID: 2, Start: lmib, End: lustre.EOF, Pattern: lustre.PatternRAID0, StripeSize: lmib, StripeCount: 2, StripeOffset: -1, OSTs: second}
		if second != nil {
			c2.Flags = lustre.FlagInit
		}
		return lustre.Encode(lustre.Layout{Magic: lustre.MagicCompV1, Components: []lustre.Component{
			{ID: 1, Flags: lustre.FlagInit, Start: 0, End: lmib, Pattern: lustre.PatternRAID0, StripeSize: lmib, StripeCount: 1, OSTs: []int{3}},
			c2,
		}})
	}
	setLayout(t, dir, "f", pfl(nil))
	b := openLustre(t, dir, 8)
	before := split(t, b, "f", 0, 3*lmib)
	if before[0] != (layout.Piece{Server: 3, Offset: 0, Length: lmib}) || len(before) < 2 {
		t.Fatalf("before instantiation: %v, want OST 3 for the first MiB, then guesses", before)
	}
	ctx := context.Background()
	// A write split under the guess still goes through, whatever the file
	// system decides meanwhile.
	guessed := before[1]
	setLayout(t, dir, "f", pfl([]int{6, 1}))
	if _, err := b.WriteAt(ctx, "f", guessed.Server, make([]byte, 100), guessed.Offset); err != nil {
		t.Errorf("WriteAt split before the component was instantiated: %v", err)
	}
	want := []layout.Piece{{Server: 3, Offset: 0, Length: lmib}, {Server: 1, Offset: lmib, Length: lmib}, {Server: 6, Offset: 2 * lmib, Length: lmib}}
	if got := split(t, b, "f", 0, 3*lmib); !slices.Equal(got, want) {
		t.Errorf("after instantiation: %v, want %v (stripes count from offset 0)", got, want)
	}
}

// A file re-striped (its layout attribute changed) is read again at its
// next open (the daemon stats a file it opens), not before; a request
// split under the old layout is still accepted.
func TestLustreRestripe(t *testing.T) {
	dir := t.TempDir()
	setLayout(t, dir, "f", plainLayout(lmib, 7, 2, 5))
	b := openLustre(t, dir, 8)
	ctx := context.Background()
	if _, err := b.Stat(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	old := split(t, b, "f", 0, lmib)
	setLayout(t, dir, "f", plainLayout(lmib, 1, 0))
	if got := split(t, b, "f", 0, lmib); !slices.Equal(got, old) {
		t.Errorf("before the next open: %v, want the cached %v", got, old)
	}
	if _, err := b.WriteAt(ctx, "f", 7, make([]byte, 10), 0); err != nil {
		t.Errorf("WriteAt split under the old layout: %v", err)
	}
	if _, err := b.Stat(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	want := []layout.Piece{{Server: 1, Offset: 0, Length: lmib}, {Server: 0, Offset: lmib, Length: lmib}}
	if got := split(t, b, "f", 0, 2*lmib); !slices.Equal(got, want) {
		t.Errorf("after the open: %v, want %v", got, want)
	}
	if _, err := b.WriteAt(ctx, "f", 7, make([]byte, 10), 0); err != nil {
		t.Errorf("WriteAt split under the layout just replaced: %v", err)
	}
	if _, err := b.WriteAt(ctx, "f", 4, make([]byte, 10), 0); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("WriteAt on OST 4, in neither layout: %v, want ErrBadArgument", err)
	}
	// Unlinked and made again by another client: the next open reads the
	// new file's layout.
	if err := os.Remove(filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	setLayout(t, dir, "f", plainLayout(lmib, 4))
	if _, err := b.Stat(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if got := split(t, b, "f", 0, 2*lmib); !slices.Equal(got, []layout.Piece{{Server: 4, Offset: 0, Length: 2 * lmib}}) {
		t.Errorf("a new file under the same name: %v, want all on OST 4", got)
	}
}

// Bytes no OST holds (data on the MDT, a released file, no attribute, an
// undecodable one) go to one queue per file and are never refused.
func TestLustreNoStripes(t *testing.T) {
	dir := t.TempDir()
	dom := lustre.Encode(lustre.Layout{Magic: lustre.MagicCompV1, Components: []lustre.Component{
		{ID: 1, Flags: lustre.FlagInit, Start: 0, End: lmib, Pattern: lustre.PatternMDT, StripeSize: lmib},
		{ID: 2, Flags: lustre.FlagInit, Start: lmib, End: lustre.EOF, Pattern: lustre.PatternRAID0, StripeSize: lmib, StripeCount: 1, OSTs: []int{2}},
	}})
	setLayout(t, dir, "dom", dom)
	setLayout(t, dir, "released", lustre.Encode(lustre.Layout{Magic: lustre.MagicV1, Components: []lustre.Component{
		{Pattern: lustre.PatternRAID0 | lustre.PatternReleased, StripeSize: lmib, StripeCount: 2}}}))
	setLayout(t, dir, "corrupt", []byte{0xd0, 0x0b, 0xd1, 0x0b, 1})
	if err := os.WriteFile(filepath.Join(dir, "none"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := openLustre(t, dir, 4)
	got := split(t, b, "dom", 0, 2*lmib)
	if len(got) != 2 || got[0].Length != lmib || got[1] != (layout.Piece{Server: 2, Offset: lmib, Length: lmib}) {
		t.Errorf("DoM then OST 2: %v", got)
	}
	for _, name := range []string{"released", "corrupt", "none", "absent"} {
		if got := split(t, b, name, 0, 3*lmib); len(got) != 1 || got[0].Length != 3*lmib {
			t.Errorf("%s: %v, want one piece on one queue", name, got)
		} else if _, err := b.WriteAt(context.Background(), name, got[0].Server, []byte("x"), lmib); err != nil && name != "absent" {
			t.Errorf("%s: WriteAt on its queue: %v", name, err)
		}
	}
}

// With no --servers and no Lustre client on the machine, the lustre kind
// says how to set the count.
func TestLustreNeedsServers(t *testing.T) {
	if m, _ := filepath.Glob("/sys/fs/lustre/lov/*/target_obd"); len(m) > 0 {
		t.Skip("a Lustre client is mounted here")
	}
	_, err := posix.Open(posix.Options{Root: t.TempDir(), Layout: posix.LayoutLustre})
	if err == nil || !strings.Contains(err.Error(), "--servers") {
		t.Errorf("Open without servers: %v, want an error naming --servers", err)
	}
	if _, err := posix.Open(posix.Options{Root: t.TempDir(), Layout: "gpfs"}); !errors.Is(err, posix.ErrUnknownLayout) {
		t.Errorf("Open with layout gpfs: %v, want ErrUnknownLayout", err)
	}
}

// The backend conformance suite passes under the lustre kind, every file
// served a 4-OST layout of 4 KiB stripes by the Xattr hook.
func TestLustreConformance(t *testing.T) {
	layout := plainLayout(4096, 3, 1, 0, 2)
	backendtest.Run(t, func(t *testing.T) backendtest.Harness {
		dir := t.TempDir()
		b, err := posix.Open(posix.Options{Root: dir, Layout: posix.LayoutLustre, Servers: 4,
			Xattr: func(name, attr string) ([]byte, error) { return layout, nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return backendtest.Harness{Backend: b, Symlink: func(name, target string) error { return os.Symlink(target, filepath.Join(dir, name)) }}
	})
}

// recorder is the backend the daemon runs on in TestForwarderFollowsOSTs:
// the real posix backend, recording which server each access ran on. It
// is no Spanner, so the daemon moves every piece with ReadAt or WriteAt on
// its own server.
type recorder struct {
	backend.Backend
	mu     sync.Mutex
	writes map[int][]layout.Piece
}

func (r *recorder) WriteAt(ctx context.Context, p string, server int, buf []byte, off int64) (int, error) {
	r.mu.Lock()
	r.writes[server] = append(r.writes[server], layout.Piece{Server: server, Offset: off, Length: int64(len(buf))})
	r.mu.Unlock()
	return r.Backend.WriteAt(ctx, p, server, buf, off)
}

// The forwarder's TWINS queues are the OSTs: a file on OSTs [7, 2, 5] with
// 1 MiB stripes, written 3 MiB at once through a daemon, lands on servers
// 7, 2 and 5, a MiB each, and reads back intact.
func TestForwarderFollowsOSTs(t *testing.T) {
	dir := t.TempDir()
	setLayout(t, dir, "f", plainLayout(lmib, 7, 2, 5))
	rec := &recorder{Backend: openLustre(t, dir, 8), writes: map[int][]layout.Piece{}}
	d := fwdtest.Start(t, fwd.Options{Backend: rec, Scheduler: "twins", Sched: sched.Config{Window: sched.DefaultWindow, SkipEmpty: true}})
	c, err := client.Dial(d.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Servers() != 8 {
		t.Errorf("client sees %d servers, want 8 (OST indices 0..7)", c.Servers())
	}
	f, err := c.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	data := fwdtest.Content(7, 0, 3*lmib)
	if n, err := f.WriteAt(data, 0); err != nil || n != len(data) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	got := make([]byte, len(data))
	if n, err := f.ReadAt(got, 0); err != nil || n != len(got) || !slices.Equal(got, data) {
		t.Fatalf("ReadAt = %d, %v; equal %v", n, err, slices.Equal(got, data))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[int][2]int64{7: {0, lmib}, 2: {lmib, 2 * lmib}, 5: {2 * lmib, 3 * lmib}}
	for srv, pieces := range rec.writes {
		w, ok := want[srv]
		if !ok {
			t.Errorf("writes on server %d: %v; want only servers 7, 2, 5", srv, pieces)
			continue
		}
		var bytes int64
		for _, p := range pieces {
			if p.Offset < w[0] || p.Offset+p.Length > w[1] {
				t.Errorf("server %d wrote [%d, %d), outside its stripe [%d, %d)", srv, p.Offset, p.Offset+p.Length, w[0], w[1])
			}
			bytes += p.Length
		}
		if bytes != lmib {
			t.Errorf("server %d wrote %d bytes, want %d", srv, bytes, lmib)
		}
	}
	if len(rec.writes) != 3 {
		t.Errorf("writes on %d servers, want 3", len(rec.writes))
	}
}
