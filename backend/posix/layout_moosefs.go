package posix

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/layout"
)

// LayoutMooseFS names the moosefs layout kind.
const LayoutMooseFS = "moosefs"

// MooseFSOptions configures the moosefs layout kind: Env.MooseFS (set by
// adaptio forward's --moosefs-exec, --moosefs-servers and
// --moosefs-master), or NewMooseFS's argument.
type MooseFSOptions struct {
	// Exec is the command prefix the MooseFS tools (mfsfileinfo, mfscli)
	// run with, e.g. {"nsenter", "--net=/var/run/netns/NAME"} where the
	// master is reachable only from a network namespace; nil: none.
	Exec []string
	// ChunkServers lists the chunk servers ("10.0.0.2:9422") in the order
	// of their server indices (scheduler queues); nil asks the master with
	// mfscli and sorts them by address and port, so that the same cluster
	// gives the same indices every time.
	ChunkServers []string
	// Master is the master's host:port for mfscli (port 9421 when left
	// out); "" reads it from the mount table (the mount's source,
	// mfs#HOST:PORT).
	Master string
	// Retry is the least time between two runs of mfsfileinfo for one file
	// while requests meet chunks it does not know yet (holes, or chunks
	// being created by the writes being split). Default 50 ms.
	Retry time.Duration
	// MaxAge is how long a file's chunk list is trusted before it is read
	// again on the next request (the master moves chunks to balance
	// servers). Default 10 s.
	MaxAge time.Duration
	// MaxRuns is the most mfsfileinfo processes running at once, over all
	// files; files waiting for a run keep their guessed queues meanwhile.
	// Default 4.
	MaxRuns int
	// Run runs argv and returns its standard output (nil: os/exec, with a
	// 10 s timeout). It runs on a goroutine of its own, never on a
	// request's path; ctx ends when the Backend is closed.
	Run func(ctx context.Context, argv []string) ([]byte, error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// ParseMooseFSServerList reads a list of chunk servers written as
// address:port separated by commas (spaces allowed), as
// --moosefs-servers takes it; "" is none. Each must be an IP address and a
// port: the names mfsfileinfo prints.
func ParseMooseFSServerList(s string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(a)
		if err != nil || ap.Port() == 0 {
			return nil, fmt.Errorf("%w: chunk server %q: want address:port, e.g. 10.0.0.2:9422 (as mfscli -SCS lists them)", ErrMooseFS, a)
		}
		addrs = append(addrs, ap.String())
	}
	return addrs, nil
}

// ErrMooseFS reports a moosefs layout kind that cannot be set up.
var ErrMooseFS = errors.New("posix: moosefs layout")

// moosefs is the layout kind of a MooseFS mount: a file's byte range
// [i*64 MiB, (i+1)*64 MiB) is chunk i, held (with goal 1) by one chunk
// server, which mfsfileinfo names; the server's index is its queue. Each
// file's chunk list is cached and read again in the background: when the
// file is first opened or split, when a request meets a chunk not in it
// (the file grew, at most every Retry), when it is older than MaxAge, and
// when the name shows another file. At most one read per file is in
// flight, and no request waits for one: a chunk no server is known to
// hold yet goes to a guessed queue (the file's name hash plus the chunk
// index, round robin), as do chunks on a server missing from the list.
type moosefs struct {
	root    string
	o       MooseFSOptions
	addrs   []string       // server index -> address:port
	index   map[string]int // address:port -> server index
	log     *slog.Logger
	mu      sync.Mutex
	files   map[string]*mfsFile
	unknown map[string]bool // addresses not in the list, logged once
	runs    chan struct{}   // semaphore: MaxRuns slots
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // refreshes in flight
}

// mfsFile is one file's cached chunk list; mu guards it (held only to read
// or replace the list, never while mfsfileinfo runs).
type mfsFile struct {
	mu      sync.Mutex
	ino     uint64
	servers []int        // per chunk: server index, -1 while no server holds it
	loaded  time.Time    // start of the last mfsfileinfo run (zero: never)
	loading bool         // a run is in flight
	ok      bool         // the last run succeeded
	changed map[int]bool // chunks guessed or moved: Check accepts any server for them
}

var _ Layouts = (*moosefs)(nil)

func newMooseFS(env Env) (Layouts, error) { return NewMooseFS(env, env.MooseFS) }

// NewMooseFS builds the moosefs layout kind for the export env.Root, a
// directory on a MooseFS mount. env.Servers, if set, must equal the
// number of chunk servers.
func NewMooseFS(env Env, o MooseFSOptions) (Layouts, error) {
	if o.Retry <= 0 {
		o.Retry = 50 * time.Millisecond
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Second
	}
	if o.Run == nil {
		o.Run = runCommand
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 4
	}
	m := &moosefs{root: env.Root, o: o, log: env.Logger, index: map[string]int{}, files: map[string]*mfsFile{}, unknown: map[string]bool{},
		runs: make(chan struct{}, o.MaxRuns)}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	addrs := o.ChunkServers
	if len(addrs) == 0 {
		var err error
		if addrs, err = m.discover(); err != nil {
			return nil, err
		}
	}
	for i, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return nil, fmt.Errorf("%w: chunk server %q: want address:port (--moosefs-servers)", ErrMooseFS, a)
		}
		a = ap.String()
		if _, dup := m.index[a]; dup {
			return nil, fmt.Errorf("%w: chunk server %s listed twice", ErrMooseFS, a)
		}
		m.index[a] = i
		m.addrs = append(m.addrs, a)
	}
	if len(m.addrs) == 0 {
		return nil, fmt.Errorf("%w: no chunk servers", ErrMooseFS)
	}
	if env.Servers > 0 && env.Servers != len(m.addrs) {
		return nil, fmt.Errorf("%w: %d servers configured but the cluster has %d chunk servers (%s); drop --servers or list the servers with --moosefs-servers",
			ErrMooseFS, env.Servers, len(m.addrs), strings.Join(m.addrs, ", "))
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.log.Info("posix: moosefs chunk servers", "servers", m.addrs)
	return m, nil
}

func runCommand(ctx context.Context, argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func (m *moosefs) run(ctx context.Context, args ...string) ([]byte, error) {
	return m.o.Run(ctx, append(slices.Clone(m.o.Exec), args...))
}

// Close stops the chunk-list reads in flight and waits for them.
func (m *moosefs) Close() error {
	m.cancel()
	m.wg.Wait()
	return nil
}

// discover asks the master for its chunk servers, sorted.
func (m *moosefs) discover() ([]string, error) {
	master := m.o.Master
	if master == "" {
		abs, err := filepath.Abs(m.root)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		f, err2 := os.Open("/proc/self/mountinfo")
		if err != nil || err2 != nil {
			return nil, fmt.Errorf("%w: cannot find the master of %s (%v %v); give it with --moosefs-master HOST:PORT", ErrMooseFS, m.root, err, err2)
		}
		master = mooseFSMaster(f, abs)
		f.Close()
		if master == "" {
			return nil, fmt.Errorf("%w: %s is not on a MooseFS mount (no mfs#HOST:PORT source in the mount table); give the master with --moosefs-master HOST:PORT or the chunk servers with --moosefs-servers", ErrMooseFS, m.root)
		}
	}
	host, port, ok := strings.Cut(master, ":")
	if !ok {
		port = "9421"
	}
	out, err := m.run(context.Background(), "mfscli", "-H", host, "-P", port, "-SCS", "-p", "-n")
	if err != nil {
		return nil, fmt.Errorf("%w: listing chunk servers: %w (give --moosefs-exec PREFIX if the master is reachable only through it, e.g. nsenter --net=/var/run/netns/NAME, or list them with --moosefs-servers)", ErrMooseFS, err)
	}
	addrs, err := parseMooseFSServers(out)
	if err != nil {
		return nil, err
	}
	return addrs, nil
}

// parseMooseFSServers reads "mfscli -SCS -p -n": lines "chunk servers:",
// address, port, ... separated by tabs; the addresses sorted.
func parseMooseFSServers(out []byte) ([]string, error) {
	var aps []netip.AddrPort
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 || strings.TrimSpace(f[0]) != "chunk servers:" {
			continue
		}
		ap, err := netip.ParseAddrPort(strings.TrimSpace(f[1]) + ":" + strings.TrimSpace(f[2]))
		if err != nil {
			return nil, fmt.Errorf("%w: mfscli line %q: %v", ErrMooseFS, sc.Text(), err)
		}
		aps = append(aps, ap)
	}
	if len(aps) == 0 {
		return nil, fmt.Errorf("%w: mfscli lists no chunk servers: %q", ErrMooseFS, clip(string(out)))
	}
	slices.SortFunc(aps, func(a, b netip.AddrPort) int { return a.Compare(b) })
	aps = slices.Compact(aps)
	addrs := make([]string, len(aps))
	for i, ap := range aps {
		addrs[i] = ap.String()
	}
	return addrs, nil
}

// mooseFSMaster returns HOST:PORT from the source "mfs#HOST:PORT" of the
// mount holding abs in a /proc/self/mountinfo listing, or "" when that
// mount is not MooseFS's.
func mooseFSMaster(mountinfo io.Reader, abs string) string {
	master, ok := strings.CutPrefix(mountOf(mountinfo, abs).Source, "mfs#")
	if !ok {
		return ""
	}
	return master
}

func (m *moosefs) Servers() int { return len(m.addrs) }

// file returns name's cache entry, making it.
func (m *moosefs) file(name string) *mfsFile {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.files[name]
	if f == nil {
		f = &mfsFile{changed: map[int]bool{}}
		m.files[name] = f
	}
	return f
}

// serverOf maps an address to its index; one missing from the list (a
// chunk server added since) gets a stable guess and a log line.
func (m *moosefs) serverOf(addr string) int {
	if i, ok := m.index[addr]; ok {
		return i
	}
	m.mu.Lock()
	if !m.unknown[addr] {
		m.unknown[addr] = true
		m.log.Warn("posix: moosefs chunk server not in the list: its chunks go to a guessed queue", "server", addr, "list", m.addrs)
	}
	m.mu.Unlock()
	return int(hashString(addr) % uint64(len(m.addrs)))
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// refresh starts a background read of name's chunk list unless one is in
// flight; f.mu held. The list in force stays until the read ends.
func (m *moosefs) refresh(f *mfsFile, name string, now time.Time) {
	if f.loading {
		return
	}
	f.loading, f.loaded = true, now
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		servers, err := m.read(name)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.loading = false
		m.apply(f, name, servers, err)
	}()
}

// read runs mfsfileinfo on name (waiting for one of MaxRuns slots) and
// returns each chunk's server index, -1 for a chunk no server holds.
func (m *moosefs) read(name string) ([]int, error) {
	select {
	case m.runs <- struct{}{}:
	case <-m.ctx.Done():
		return nil, m.ctx.Err()
	}
	out, err := m.run(m.ctx, "mfsfileinfo", filepath.Join(m.root, filepath.FromSlash(name)))
	<-m.runs
	var files []MooseFSFile
	if err == nil {
		files, err = ParseMooseFSFileInfo(out)
	}
	if err == nil && len(files) != 1 {
		err = fmt.Errorf("%w: %d files listed, want 1", ErrMooseFSInfo, len(files))
	}
	if err != nil {
		return nil, err
	}
	servers := make([]int, 0, len(files[0].Chunks))
	for _, c := range files[0].Chunks {
		for len(servers) < c.Index {
			servers = append(servers, -1)
		}
		s := -1
		if a, ok := c.Server(); ok {
			s = m.serverOf(a)
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// apply replaces f's chunk list with what a read found; f.mu held.
func (m *moosefs) apply(f *mfsFile, name string, servers []int, err error) {
	if err != nil {
		if (f.ok || f.servers == nil) && m.ctx.Err() == nil {
			m.log.Warn("posix: moosefs: cannot read a file's chunks; guessing their servers", "file", name, "err", err)
		}
		f.ok = false
		return
	}
	f.ok = true
	for i, s := range f.servers {
		if i < len(servers) && s >= 0 && servers[i] != s {
			f.changed[i] = true // moved by the master since last read
		}
	}
	f.servers = servers
}

// guess is the queue of a chunk no server holds yet.
func (m *moosefs) guess(name string, chunk int64) int {
	return int((hashString(name) + uint64(chunk)) % uint64(len(m.addrs)))
}

func (m *moosefs) Split(dst []layout.Piece, name string, off, n int64) ([]layout.Piece, error) {
	if n <= 0 {
		return dst, nil
	}
	first, last := off/MooseFSChunkSize, (off+n-1)/MooseFSChunkSize
	f := m.file(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	now := m.o.Now()
	known := func() bool {
		for c := first; c <= last; c++ {
			if c >= int64(len(f.servers)) || f.servers[c] < 0 {
				return false
			}
		}
		return true
	}
	if f.loaded.IsZero() || now.Sub(f.loaded) >= m.o.MaxAge || (!known() && now.Sub(f.loaded) >= m.o.Retry) {
		m.refresh(f, name, now)
	}
	for c := first; c <= last; c++ {
		s := -1
		if c < int64(len(f.servers)) {
			s = f.servers[c]
		}
		if s < 0 {
			s = m.guess(name, c)
			f.changed[int(c)] = true
		}
		lo, hi := max(off, c*MooseFSChunkSize), min(off+n, (c+1)*MooseFSChunkSize)
		if k := len(dst) - 1; c > first && dst[k].Server == s && dst[k].Offset+dst[k].Length == lo {
			dst[k].Length += hi - lo
			continue
		}
		dst = append(dst, layout.Piece{Server: s, Offset: lo, Length: hi - lo})
	}
	return dst, nil
}

func (m *moosefs) Check(name string, server int, off, n int64) error {
	if server < 0 || server >= len(m.addrs) {
		return fmt.Errorf("%w: server %d of %d", backend.ErrBadArgument, server, len(m.addrs))
	}
	if n <= 0 {
		return nil
	}
	m.mu.Lock()
	f := m.files[name]
	m.mu.Unlock()
	if f == nil {
		return nil // forgotten since the split: the layout is read anew
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := off / MooseFSChunkSize; c <= (off+n-1)/MooseFSChunkSize; c++ {
		if c >= int64(len(f.servers)) || f.servers[c] < 0 || f.servers[c] == server || f.changed[int(c)] {
			continue
		}
		return fmt.Errorf("%w: chunk %d (bytes from %d) is on server %d (%s), not %d",
			backend.ErrBadArgument, c, c*MooseFSChunkSize, f.servers[c], m.addrs[f.servers[c]], server)
	}
	return nil
}

// Opened drops name's chunk list when fi shows another file (inode):
// MooseFS never changes a written chunk's place except by moving it
// between servers, which MaxAge covers, so a change of ctime alone (every
// write) keeps the list. A file with chunks (fi.Size > 0) whose list was
// never read gets it read in the background, so that the requests after
// the open find it.
func (m *moosefs) Opened(name string, fi backend.FileInfo) {
	m.mu.Lock()
	f := m.files[name]
	if f != nil {
		f.mu.Lock()
		same := f.ino == 0 || f.ino == fi.Ino
		f.ino = fi.Ino
		f.mu.Unlock()
		if !same {
			f = nil
		}
	}
	if f == nil {
		f = &mfsFile{ino: fi.Ino, changed: map[int]bool{}}
		m.files[name] = f
	}
	m.mu.Unlock()
	if fi.Size > 0 {
		f.mu.Lock()
		if f.loaded.IsZero() {
			m.refresh(f, name, m.o.Now())
		}
		f.mu.Unlock()
	}
}

func (m *moosefs) Forget(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" || name == "." {
		clear(m.files)
		return
	}
	for k := range m.files {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(m.files, k)
		}
	}
}
