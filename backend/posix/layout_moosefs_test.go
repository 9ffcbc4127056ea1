package posix_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/layout"
)

const mib = 1 << 20

// mfsTool answers mfsfileinfo with the text set for a file, as the real
// tool prints it, and counts the runs; the live check against the real
// tool is e2e/moosefs.
type mfsTool struct {
	mu   sync.Mutex
	info map[string]string // absolute path -> mfsfileinfo output
	runs int
	argv [][]string
}

func (m *mfsTool) set(path, out string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.info[path] = out
}

func (m *mfsTool) run(_ context.Context, argv []string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs++
	m.argv = append(m.argv, argv)
	file := argv[len(argv)-1]
	out, ok := m.info[file]
	if !ok {
		return nil, errors.New(file + ": ENOENT")
	}
	return []byte(out), nil
}

func (m *mfsTool) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

var servers4 = []string{"10.213.0.2:9422", "10.213.0.3:9422", "10.213.0.4:9422", "10.213.0.5:9422"}

// chunkLines prints mfsfileinfo's output for a file whose chunk i is on
// addrs[i] ("": a hole).
func chunkLines(name string, addrs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n", name)
	for i, a := range addrs {
		if a == "" {
			fmt.Fprintf(&b, "\tchunk %d: empty\n", i)
			continue
		}
		fmt.Fprintf(&b, "\tchunk %d: %016X_00000001 / (id:%d ver:1)\n\t\tcopy 1: %s (status:VALID)\n", i, i+1, i+1, a)
	}
	return b.String()
}

func pc(server int, off, n int64) layout.Piece {
	return layout.Piece{Server: server, Offset: off, Length: n}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newKind(t *testing.T, tool *mfsTool, clk *clock) (posix.Layouts, string) {
	t.Helper()
	root := t.TempDir()
	l, err := posix.NewMooseFS(posix.Env{Root: root}, posix.MooseFSOptions{
		Exec: []string{"nsenter", "--net=/var/run/netns/x"}, ChunkServers: servers4,
		Run: tool.run, Now: clk.now, Retry: 50 * time.Millisecond, MaxAge: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, root
}

// load reads name's chunk list as the daemon's open does, and waits for
// the read.
func load(t *testing.T, l posix.Layouts, name string) {
	t.Helper()
	l.Opened(name, backend.FileInfo{Ino: 1, Size: 1})
	posix.WaitMooseFS(l)
}

// Pieces follow the 64 MiB chunks to the servers mfsfileinfo names (real
// output: chunks on servers 4, 3, 2, 1), split at chunk boundaries, and
// merge where neighbouring chunks share a server. The lists are read once
// per file, when it is opened.
func TestMooseFSSplit(t *testing.T) {
	tool := &mfsTool{info: map[string]string{}}
	clk := &clock{t: time.Unix(1000, 0)}
	l, root := newKind(t, tool, clk)
	if l.Servers() != 4 {
		t.Fatalf("Servers() = %d, want 4", l.Servers())
	}
	real, err := os.ReadFile(filepath.Join("testdata", "mfsfileinfo", "four-chunks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tool.set(filepath.Join(root, "f1"), string(real))
	tool.set(filepath.Join(root, "d", "same"), chunkLines("same", servers4[1], servers4[1], servers4[0]))
	load(t, l, "f1")
	load(t, l, "d/same")
	for _, tt := range []struct {
		name   string
		off, n int64
		want   []layout.Piece
	}{
		{"f1", 0, 32 << 10, []layout.Piece{{Server: 3, Offset: 0, Length: 32 << 10}}},
		{"f1", 64*mib - 4096, 8192, []layout.Piece{{Server: 3, Offset: 64*mib - 4096, Length: 4096}, {Server: 2, Offset: 64 * mib, Length: 4096}}},
		{"f1", 0, 256 * mib, []layout.Piece{pc(3, 0, 64*mib), pc(2, 64*mib, 64*mib), pc(1, 128*mib, 64*mib), pc(0, 192*mib, 64*mib)}},
		{"d/same", 10, 192*mib - 20, []layout.Piece{pc(1, 10, 128*mib-10), pc(0, 128*mib, 64*mib-10)}},
		{"f1", 5, 0, nil},
	} {
		got, err := l.Split(nil, tt.name, tt.off, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%s, %d, %d) = %v, want %v", tt.name, tt.off, tt.n, got, tt.want)
		}
		for _, p := range got {
			if err := l.Check(tt.name, p.Server, p.Offset, p.Length); err != nil {
				t.Errorf("Check of its own piece %v: %v", p, err)
			}
		}
	}
	posix.WaitMooseFS(l)
	if tool.count() != 2 {
		t.Errorf("%d mfsfileinfo runs, want 2 (one per file)", tool.count())
	}
	if want := []string{"nsenter", "--net=/var/run/netns/x", "mfsfileinfo", filepath.Join(root, "f1")}; !reflect.DeepEqual(tool.argv[0], want) {
		t.Errorf("ran %q, want %q", tool.argv[0], want)
	}
	if err := l.Check("f1", 0, 0, 4096); !errors.Is(err, backend.ErrBadArgument) || !strings.Contains(err.Error(), "10.213.0.5:9422") {
		t.Errorf("Check of chunk 0 on server 0: %v, want ErrBadArgument naming 10.213.0.5:9422", err)
	}
	if err := l.Check("f1", 4, 0, 4096); !errors.Is(err, backend.ErrBadArgument) {
		t.Errorf("Check on server 4 of 4: %v, want ErrBadArgument", err)
	}
}

// A file growing into a chunk no server holds yet: its requests go to a
// guessed queue (and Check accepts them on it), mfsfileinfo runs again
// at most every Retry, and once the chunk exists its server is used.
// After MaxAge the list is read again and a chunk the master moved
// follows it. Every read runs in the background: the request that starts
// one is split on the list in force.
func TestMooseFSGrowAndMove(t *testing.T) {
	tool := &mfsTool{info: map[string]string{}}
	clk := &clock{t: time.Unix(1000, 0)}
	l, root := newKind(t, tool, clk)
	path := filepath.Join(root, "g")
	tool.set(path, chunkLines("g", servers4[2]))
	split := func(off int64) int {
		t.Helper()
		p, err := l.Split(nil, "g", off, 4096)
		if err != nil || len(p) != 1 {
			t.Fatalf("Split(g, %d) = %v, %v; want one piece", off, p, err)
		}
		return p[0].Server
	}
	split(0) // never read: a guess, and the first read starts
	posix.WaitMooseFS(l)
	if s := split(0); s != 2 || tool.count() != 1 {
		t.Fatalf("chunk 0 on server %d after %d runs, want 2 after 1", s, tool.count())
	}
	clk.t = clk.t.Add(50 * time.Millisecond)
	guess := split(64 * mib) // chunk 1: not there yet
	posix.WaitMooseFS(l)
	if tool.count() != 2 {
		t.Fatalf("%d runs, want 2 (the new chunk read once)", tool.count())
	}
	clk.t = clk.t.Add(10 * time.Millisecond)
	if s := split(64*mib + 4096); s != guess {
		t.Fatalf("second guess %d, first %d: want the same", s, guess)
	}
	posix.WaitMooseFS(l)
	if tool.count() != 2 {
		t.Fatalf("%d runs within Retry, want 2", tool.count())
	}
	actual := (guess + 1) % 4
	tool.set(path, chunkLines("g", servers4[2], servers4[actual]))
	if err := l.Check("g", guess, 64*mib, 4096); err != nil {
		t.Errorf("Check of a guessed piece: %v", err)
	}
	clk.t = clk.t.Add(50 * time.Millisecond)
	if s := split(64 * mib); s != guess {
		t.Fatalf("the request starting a read: server %d, want the guess %d (no waiting for mfsfileinfo)", s, guess)
	}
	posix.WaitMooseFS(l)
	if s := split(64 * mib); s != actual || tool.count() != 3 {
		t.Fatalf("after Retry: server %d after %d runs, want %d after 3", s, tool.count(), actual)
	}
	if err := l.Check("g", guess, 64*mib, 4096); err != nil {
		t.Errorf("Check of a piece split on the guess before the chunk existed: %v", err)
	}
	// Known chunks do not re-run mfsfileinfo until MaxAge.
	clk.t = clk.t.Add(9 * time.Second)
	split(0)
	posix.WaitMooseFS(l)
	if tool.count() != 3 {
		t.Fatalf("%d runs before MaxAge, want 3", tool.count())
	}
	tool.set(path, chunkLines("g", servers4[0], servers4[actual]))
	clk.t = clk.t.Add(2 * time.Second)
	if s := split(0); s != 2 {
		t.Fatalf("the request starting the MaxAge read: server %d, want the list in force's 2", s)
	}
	posix.WaitMooseFS(l)
	if s := split(0); s != 0 || tool.count() != 4 {
		t.Fatalf("after MaxAge: chunk 0 on %d after %d runs, want 0 after 4", s, tool.count())
	}
	if err := l.Check("g", 2, 0, 4096); err != nil {
		t.Errorf("Check of a piece split before the chunk moved: %v", err)
	}
}

// blockingTool is an mfsfileinfo that does not answer until released.
type blockingTool struct {
	mfsTool
	started chan string
	release chan struct{}
}

func (b *blockingTool) run(ctx context.Context, argv []string) ([]byte, error) {
	b.started <- argv[len(argv)-1]
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.mfsTool.run(ctx, argv)
}

// No request waits for mfsfileinfo: while a file's chunk list is being
// read (the tool hangs), requests on that file, in a chunk it does not
// know, are split at once on their guessed queue and checked, and no
// second read of the file starts; at most MaxRuns reads run at once over
// all files. Close ends the reads in flight.
func TestMooseFSReadsOffRequestPath(t *testing.T) {
	tool := &blockingTool{mfsTool: mfsTool{info: map[string]string{}}, started: make(chan string, 16), release: make(chan struct{})}
	clk := &clock{t: time.Unix(1000, 0)}
	root := t.TempDir()
	l, err := posix.NewMooseFS(posix.Env{Root: root}, posix.MooseFSOptions{ChunkServers: servers4, Run: tool.run, Now: clk.now, MaxRuns: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "b", "c"} {
		tool.set(filepath.Join(root, f), chunkLines(f, servers4[3]))
	}
	done := make(chan []layout.Piece)
	go func() {
		var all []layout.Piece
		for i := range int64(100) {
			p, err := l.Split(nil, "a", i*2*64*mib/100, 4096) // in chunks 0 and 1
			if err != nil || len(p) != 1 {
				t.Errorf("Split: %v, %v", p, err)
				break
			}
			if err := l.Check("a", p[0].Server, p[0].Offset, p[0].Length); err != nil {
				t.Errorf("Check of a guessed piece while the list is read: %v", err)
			}
			all = append(all, p...)
		}
		l.Split(nil, "b", 0, 1)
		l.Split(nil, "c", 0, 1)
		done <- all
	}()
	var pieces []layout.Piece
	select {
	case pieces = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Split waited for mfsfileinfo")
	}
	if len(pieces) != 100 {
		t.Fatalf("%d pieces, want 100", len(pieces))
	}
	started := map[string]bool{}
	for range 2 {
		select {
		case f := <-tool.started:
			started[filepath.Base(f)] = true
		case <-time.After(10 * time.Second):
			t.Fatal("reads did not start")
		}
	}
	select {
	case f := <-tool.started:
		t.Fatalf("a third read (%s) runs with MaxRuns 2 and two hanging", f)
	case <-time.After(50 * time.Millisecond):
	}
	if len(started) != 2 {
		t.Fatalf("reads started for %v; want two files", started)
	}
	close(tool.release)
	posix.WaitMooseFS(l)
	if tool.count() != 3 {
		t.Errorf("%d runs after release, want 3 (one per file)", tool.count())
	}
	if p, _ := l.Split(nil, "a", 0, 1); p[0].Server != 3 {
		t.Errorf("after the read: server %d, want 3", p[0].Server)
	}
	if err := l.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
}

// Another file under the name (another inode) or Forget drops the list;
// a write's new ctime alone does not. A file mfsfileinfo cannot describe
// gets guessed queues, not an error.
func TestMooseFSOpenedForget(t *testing.T) {
	tool := &mfsTool{info: map[string]string{}}
	clk := &clock{t: time.Unix(1000, 0)}
	l, root := newKind(t, tool, clk)
	tool.set(filepath.Join(root, "d", "h"), chunkLines("h", servers4[1]))
	step := func(fi *backend.FileInfo, wantRuns int) {
		t.Helper()
		if fi != nil {
			l.Opened("d/h", *fi)
		}
		l.Split(nil, "d/h", 0, 1)
		posix.WaitMooseFS(l)
		if p, _ := l.Split(nil, "d/h", 0, 1); p[0].Server != 1 || tool.count() != wantRuns {
			t.Fatalf("server %d after %d runs, want 1 after %d", p[0].Server, tool.count(), wantRuns)
		}
	}
	step(&backend.FileInfo{Ino: 7, Ctime: time.Unix(1, 0)}, 1)
	step(&backend.FileInfo{Ino: 7, Ctime: time.Unix(2, 0), Size: 10}, 1) // a write's ctime
	step(&backend.FileInfo{Ino: 8, Size: 10}, 2)                         // another file
	l.Forget("d")
	step(nil, 3)
	p, err := l.Split(nil, "missing", 0, 1)
	posix.WaitMooseFS(l)
	if err != nil || len(p) != 1 || p[0].Server < 0 || p[0].Server >= 4 {
		t.Fatalf("Split of a file mfsfileinfo cannot read: %v, %v; want one guessed piece", p, err)
	}
}

// Chunk servers from the master (mfscli) when not listed, sorted; a list
// that disagrees with --servers, or is not address:port, is refused.
func TestNewMooseFS(t *testing.T) {
	scs, err := os.ReadFile(filepath.Join("testdata", "mfscli-scs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	run := func(_ context.Context, argv []string) ([]byte, error) {
		got = argv
		return scs, nil
	}
	l, err := posix.NewMooseFS(posix.Env{Root: t.TempDir()}, posix.MooseFSOptions{Master: "10.213.0.1:9421", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if l.Servers() != 4 || !reflect.DeepEqual(got, []string{"mfscli", "-H", "10.213.0.1", "-P", "9421", "-SCS", "-p", "-n"}) {
		t.Errorf("%d servers after %q; want 4 after mfscli -SCS", l.Servers(), got)
	}
	for _, tt := range []struct {
		env  posix.Env
		o    posix.MooseFSOptions
		want string
	}{
		{posix.Env{Servers: 3}, posix.MooseFSOptions{ChunkServers: servers4}, "3 servers configured but the cluster has 4"},
		{posix.Env{}, posix.MooseFSOptions{ChunkServers: []string{"cs1:9422"}}, "want address:port"},
		{posix.Env{}, posix.MooseFSOptions{ChunkServers: []string{servers4[0], servers4[0]}}, "listed twice"},
		{posix.Env{}, posix.MooseFSOptions{Run: run}, "not on a MooseFS mount"},
	} {
		tt.env.Root = t.TempDir()
		if _, err := posix.NewMooseFS(tt.env, tt.o); !errors.Is(err, posix.ErrMooseFS) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewMooseFS(%+v): %v, want ErrMooseFS about %q", tt.o, err, tt.want)
		}
	}
	for _, tt := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"10.0.0.2:9422, 10.0.0.1:9422", []string{"10.0.0.2:9422", "10.0.0.1:9422"}, false},
		{"10.0.0.2:9422,,", []string{"10.0.0.2:9422"}, false},
		{"cs1:9422", nil, true},
		{"10.0.0.2", nil, true},
		{"10.0.0.2:0", nil, true},
	} {
		got, err := posix.ParseMooseFSServerList(tt.in)
		if (err != nil) != tt.err || (err != nil && !errors.Is(err, posix.ErrMooseFS)) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseMooseFSServerList(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
