package fusemount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// Options configure Mount. Zero fields take the defaults listed.
type Options struct {
	// DirectMount calls mount(2) directly instead of fusermount (needs
	// root; default: on when running as root).
	DirectMount *bool
	// CacheTimeout is how long the kernel caches names and attributes
	// (default 1 s; keep it short when other clients write the same files).
	CacheTimeout time.Duration
	// PageCache lets the kernel cache file data of every open file, for
	// writing too (default off: files open read-only are read through the
	// page cache with close-to-open consistency, cache.go; other files'
	// reads and writes go to the forwarder as issued).
	PageCache bool
	// DirectReads sends the reads of files open read-only to the forwarder
	// as issued too, bypassing the page cache (default off: cache.go).
	DirectReads bool
	// Prefetch is the most memory, in bytes, the mount's prefetcher holds
	// for all files (prefetch.go): blocks of files open read-only fetched
	// ahead of their sequential readers (default DefaultPrefetch; negative:
	// no prefetching, reads go to the forwarder as the kernel issues
	// them). Off with DirectReads or PageCache.
	Prefetch int64
	// PrefetchFile is the most memory, in bytes, the prefetcher holds for
	// one file (default DefaultPrefetchFile, at most Prefetch).
	PrefetchFile int64
	// PrefetchBlock is the size in bytes of the blocks the prefetcher
	// fetches, each in one request to the forwarder (default MaxWrite).
	PrefetchBlock int
	// MaxBackground is how many asynchronous requests (readahead) the
	// kernel keeps in flight to the mount (default 64; the kernel's own
	// default is 12).
	MaxBackground int
	// MaxWrite is the largest read or write the kernel sends in one request
	// (default 1 MiB).
	MaxWrite int
	// WriteBehind is how many bytes of writes the mount may acknowledge
	// before the forwarder has them (default 64 MiB; negative: none, every
	// write returns once the backend holds its bytes). close(2) and
	// fsync(2) wait for a file's pending writes and report their first
	// error; reads, stat and truncate wait for the writes they could see.
	WriteBehind int64
	// AllowOther lets users other than the one mounting use the mount
	// (FUSE's allow_other; through fusermount it needs user_allow_other in
	// /etc/fuse.conf). The kernel then checks each access against the
	// owner and mode the backend reports (default_permissions), and what a
	// user creates (files, directories, links, FIFOs, ...) is given to that
	// user and group (the directory's group if it is setgid), which needs
	// the daemon to run as root.
	AllowOther bool
	// LocalLocks leaves fcntl and flock locks to the kernel of this
	// client node: they exclude processes using this mount only. By
	// default the forwarder holds them for all its clients (and on the
	// backend's files where it can), so they exclude across nodes.
	LocalLocks bool
	// JobEnv are the environment variables that name the batch job of a
	// process opening a file (nil: DefaultJobEnv); without one set, a
	// Slurm job is found from the process's cgroup. Each process is bound
	// to its job on the forwarder (client.SetJob) at its first open, so
	// the forwarder's QoS rules and per-job metrics count its requests
	// under it (jobs.go).
	JobEnv []string
	// NoJobs leaves processes unbound: their requests count under the
	// client's own job (client.Options.Job), if any.
	NoJobs bool
	// Debug logs every FUSE operation to stderr.
	Debug bool
	// Logger receives errors (nil: discard).
	Logger *slog.Logger
}

// DefaultWriteBehind is Options.WriteBehind's default.
const DefaultWriteBehind = 64 << 20

// DefaultMaxBackground is Options.MaxBackground's default.
const DefaultMaxBackground = 64

// Server is a mounted forwarder.
type Server struct {
	srv  *fuse.Server
	dir  string
	once sync.Once
	err  error

	c        *client.Client // for the knobs (knobs.go)
	wb       *writeBehind
	maxWrite int
	pool     *prefetchPool // nil: no prefetching
}

// PrefetchStats reports the prefetcher's counters (zero without one).
func (m *Server) PrefetchStats() PrefetchStats { return m.pool.stats() }

// Mount mounts the forwarder reached through c at dir (an existing empty
// directory) and serves it until Unmount. c must stay open meanwhile.
func Mount(dir string, c *client.Client, o Options) (*Server, error) {
	if c == nil {
		return nil, errors.New("fusemount: nil client")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// Checked before mounting: a mount over a file fails only after the
	// kernel has it, leaving a dead mount point behind.
	fi, err := os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) {
		if err := cleanStale(dir); err != nil {
			return nil, err
		}
		o.Logger.Warn("cleaned up a stale FUSE mount left by a mount process that died (lazy unmount)", "dir", dir)
		fi, err = os.Stat(dir)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("fusemount: mount point: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("fusemount: mount point %s is not a directory", dir)
	}
	direct := os.Geteuid() == 0
	if o.DirectMount != nil {
		direct = *o.DirectMount
	}
	if o.CacheTimeout == 0 {
		o.CacheTimeout = time.Second
	}
	if o.MaxWrite == 0 {
		o.MaxWrite = 1 << 20
	}
	if o.WriteBehind == 0 {
		o.WriteBehind = DefaultWriteBehind
	}
	if o.MaxBackground == 0 {
		o.MaxBackground = DefaultMaxBackground
	}
	if o.Prefetch == 0 {
		o.Prefetch = DefaultPrefetch
	}
	if o.PrefetchFile <= 0 {
		o.PrefetchFile = DefaultPrefetchFile
	}
	if o.PrefetchBlock <= 0 {
		o.PrefetchBlock = o.MaxWrite
	}
	if o.DirectReads || o.PageCache {
		o.Prefetch = -1
	}
	var wb *writeBehind
	if o.WriteBehind > 0 {
		wb = newWriteBehind(o.WriteBehind)
	}
	u := newUnlinked()
	var jobs *jobLookup
	if !o.NoJobs {
		jobs = newJobLookup(c, o.JobEnv, o.Logger)
	}
	pool := newPrefetchPool(&o)
	r := &root{node: node{c: c, o: &o, wb: wb, u: u, jobs: jobs, pool: pool}}
	u.root = &r.node
	to := o.CacheTimeout
	neg := time.Duration(0)
	mo := fuse.MountOptions{
		DirectMount: direct, FsName: "adaptio", Name: "adaptio", MaxWrite: o.MaxWrite,
		Debug: o.Debug, DisableXAttrs: true, DisableSplice: true,
		// Shared mmap of a direct-I/O file (Linux 6.6 and later).
		ExtraCapabilities: fuse.CAP_DIRECT_IO_ALLOW_MMAP,
		EnableLocks:       !o.LocalLocks,
		MaxBackground:     o.MaxBackground,
	}
	if o.AllowOther {
		// Never without default_permissions: the daemon may run as root
		// and would let any user do anything.
		mo.AllowOther, mo.Options = true, []string{"default_permissions"}
	}
	raw := gofs.NewNodeFS(r, &gofs.Options{
		EntryTimeout: &to, AttrTimeout: &to, NegativeTimeout: &neg, MountOptions: mo,
		// A mode of 0000 is shown as it is (go-fuse would show 0644 or 0755).
		NullPermissions: true,
	})
	srv, err := fuse.NewServer(rawFS{raw}, dir, &mo) // rawFS: flushes carry their lock owner (locks.go)
	if err != nil {
		return nil, fmt.Errorf("fusemount: mount %s: %w", dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, fmt.Errorf("fusemount: mount %s: %w", dir, err)
	}
	if !o.DirectReads {
		// Readahead as large as the largest request: one request then
		// serves many small reads of a file read by many processes.
		if err := setReadahead(dir, o.MaxWrite>>10); err != nil {
			o.Logger.Warn("could not raise the kernel's readahead for the mount (cached reads then go in requests of 128 KiB); it needs root", "err", err)
		}
	}
	return &Server{srv: srv, dir: dir, c: c, wb: wb, maxWrite: o.MaxWrite, pool: pool}, nil
}

// ErrStaleMount is returned by Mount when its mount point is a FUSE mount
// whose server died (stat says "transport endpoint is not connected") and
// it could not be unmounted; the error gives the command to run.
var ErrStaleMount = errors.New("fusemount: stale mount")

// cleanStale lazily unmounts dir, a mount point whose stat failed with
// ENOTCONN, if it is a FUSE mount: as root with umount2(MNT_DETACH),
// otherwise with fusermount3 -uz. Anything else at dir is left alone.
func cleanStale(dir string) error {
	fstype, ok := mountType(dir)
	if !ok || !strings.HasPrefix(fstype, "fuse") {
		return fmt.Errorf("fusemount: mount point %s: transport endpoint is not connected, and it is not a FUSE mount (%q): unmount it yourself", dir, fstype)
	}
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err != nil {
		out, ferr := exec.Command("fusermount3", "-uz", dir).CombinedOutput()
		if ferr == nil {
			return nil
		}
		return fmt.Errorf("%w at %s (its mount process died: transport endpoint is not connected); unmounting it failed (umount2: %v; fusermount3: %v %s): run `fusermount3 -uz %s` (or, as root, `umount -l %s`) and mount again",
			ErrStaleMount, dir, err, ferr, strings.TrimSpace(string(out)), dir, dir)
	}
	return nil
}

// mountType is the file-system type of the mount at dir, from
// /proc/self/mountinfo.
func mountType(dir string) (string, bool) { return mountField(dir, -1) }

// mountField is field i of the line of /proc/self/mountinfo of the mount at
// dir (the last one mounted there), or, for i < 0, its file-system type.
func mountField(dir string, i int) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	// Fields: id parent major:minor root mount-point options... - type source super-options;
	// spaces and other bytes in paths are octal escapes (\040).
	esc := strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`).Replace(abs)
	val, found := "", false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != esc {
			continue
		}
		if i >= 0 && i < len(f) {
			val, found = f[i], true // the last mount on dir is the one seen
			continue
		}
		for k := 5; k+1 < len(f); k++ {
			if f[k] == "-" {
				val, found = f[k+1], true
				break
			}
		}
	}
	return val, found
}

// Dir is the mount point.
func (m *Server) Dir() string { return m.dir }

// Unmount unmounts (it fails while files are open, as umount does).
func (m *Server) Unmount() error {
	m.once.Do(func() { m.err = m.srv.Unmount() })
	return m.err
}

// Wait blocks until the file system is unmounted.
func (m *Server) Wait() { m.srv.Wait() }

// node is a file or directory; its path is computed from the inode tree,
// or is a hidden name while the file is open and unlinked (unlinked.go).
type node struct {
	gofs.Inode
	c    *client.Client
	o    *Options
	wb   *writeBehind  // nil: write-through
	u    *unlinked     // the mount's open files
	jobs *jobLookup    // binds processes to their jobs (nil: off)
	pool *prefetchPool // the mount's prefetch memory (nil: no prefetching)

	opens  int                      // open handles on this mount (guarded by u.mu)
	cache  cacheState               // page-cache consistency of cached opens (cache.go)
	pf     prefetch                 // blocks fetched ahead of the readers of cached opens (prefetch.go)
	owners lockOwners               // POSIX lock owners that locked the file here (locks.go)
	hid    atomic.Pointer[[]hidden] // names the file is kept under since its own were removed (written under u.mu)
}

type root struct{ node }

var (
	_ gofs.NodeLookuper   = (*node)(nil)
	_ gofs.NodeGetattrer  = (*node)(nil)
	_ gofs.NodeSetattrer  = (*node)(nil)
	_ gofs.NodeReaddirer  = (*node)(nil)
	_ gofs.NodeOpener     = (*node)(nil)
	_ gofs.NodeCreater    = (*node)(nil)
	_ gofs.NodeMkdirer    = (*node)(nil)
	_ gofs.NodeUnlinker   = (*node)(nil)
	_ gofs.NodeRmdirer    = (*node)(nil)
	_ gofs.NodeRenamer    = (*node)(nil)
	_ gofs.NodeLinker     = (*node)(nil)
	_ gofs.NodeSymlinker  = (*node)(nil)
	_ gofs.NodeReadlinker = (*node)(nil)
	_ gofs.NodeStatfser   = (*node)(nil)
	_ gofs.NodeMknoder    = (*node)(nil)
)

// rel is the backend path of n's child name, or of n itself ("") — for a
// file unlinked while open, the hidden name it is kept under.
func (n *node) rel(name string) string {
	if name == "" {
		if hs := n.hiddenNames(); len(hs) > 0 {
			return hs[0].path()
		}
	}
	p := n.Path(n.Root())
	if name != "" {
		p = path.Join(p, name)
	}
	if p == "" {
		return "."
	}
	return p
}

// errno maps forwarder errors to errno values.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var we *fwdproto.Error
	if errors.As(err, &we) {
		switch we.Code {
		case fwdproto.CodeNotExist:
			return syscall.ENOENT
		case fwdproto.CodeExist:
			return syscall.EEXIST
		case fwdproto.CodePath:
			return syscall.EACCES
		case fwdproto.CodeIsDir:
			return syscall.EISDIR
		case fwdproto.CodeNotDir:
			return syscall.ENOTDIR
		case fwdproto.CodeNotEmpty:
			return syscall.ENOTEMPTY
		case fwdproto.CodeBadArgument:
			return syscall.EINVAL
		case fwdproto.CodeTooLarge:
			return syscall.EFBIG
		case fwdproto.CodeBadHandle:
			return syscall.EBADF
		case fwdproto.CodeNotSupported:
			return syscall.ENOTSUP
		case fwdproto.CodeCrossDevice:
			return syscall.EXDEV
		case fwdproto.CodePermission:
			return syscall.EPERM
		case fwdproto.CodeNoSpace:
			return syscall.ENOSPC
		case fwdproto.CodeNameTooLong:
			return syscall.ENAMETOOLONG
		case fwdproto.CodeLocked:
			return syscall.EAGAIN
		case fwdproto.CodeInterrupted:
			return syscall.EINTR
		}
		return syscall.EIO
	}
	// A lost forwarder (client.ErrClosed, client.ErrUnavailable) is an I/O
	// error to the application, as a lost server is on NFS; ENOTCONN
	// would read as the mount itself being gone.
	return syscall.EIO
}

// fill describes a file as the backend reports it (allocated blocks,
// owner, the three times); a backend that knows only size, mode and mtime
// (Ino 0) gets the mounting user as owner and blocks from the size.
func (n *node) fill(fi client.FileInfo, a *fuse.Attr) {
	a.Size = uint64(fi.Size)
	a.Blksize = 1 << 20
	a.Mode = fileType(fi) | fwdproto.UnixMode(fi.Mode)
	a.Ino = fi.Ino
	a.Rdev = uint32(fi.Rdev) // Linux's encoding of numbers below 2^12 (major) and 2^20 (minor)
	if fi.Ino != 0 {
		a.Blocks = uint64(fi.Blocks)
		a.Nlink = fi.Nlink
		a.Uid, a.Gid = fi.UID, fi.GID
	} else {
		a.Blocks = (a.Size + 511) / 512
		a.Nlink = 1
		if fi.IsDir {
			a.Nlink = 2
		}
		a.Uid, a.Gid = uint32(os.Getuid()), uint32(os.Getgid())
	}
	at, ct := fi.Atime, fi.Ctime
	if at.IsZero() {
		at = fi.ModTime
	}
	if ct.IsZero() {
		ct = fi.ModTime
	}
	if !fi.ModTime.IsZero() {
		a.SetTimes(&at, &fi.ModTime, &ct)
	}
}

// fileType is the S_IF* type of a file.
func fileType(fi client.FileInfo) uint32 {
	if fi.IsDir {
		return syscall.S_IFDIR
	}
	return fwdproto.UnixType(fi.Mode)
}

// own gives what the caller just created at p (described by fi, made
// with mode's setuid, setgid and sticky bits) to the caller, on a mount
// other users share: the daemon made it as its own user. The group is the
// caller's unless the directory is setgid (the backend then gave it the
// directory's group). chown clears setuid and setgid, so those are
// applied again. A mount for one user leaves the backend's owner.
func (n *node) own(ctx context.Context, p string, fi *client.FileInfo, mode uint32) syscall.Errno {
	if !n.o.AllowOther || fi.Ino == 0 {
		return 0
	}
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return 0
	}
	uid, gid := c.Uid, c.Gid
	if gid != fi.GID {
		if dir, err := n.c.Stat(n.rel("")); err == nil && dir.Mode&fs.ModeSetgid != 0 {
			gid = fi.GID
		}
	}
	if uid == fi.UID && gid == fi.GID {
		return 0
	}
	a := client.Attr{UID: &uid, GID: &gid}
	if m := fwdproto.FileMode(mode); m&(fs.ModeSetuid|fs.ModeSetgid) != 0 && fi.Mode&fs.ModeSymlink == 0 {
		a.Mode = &m
	}
	if err := n.c.Setattr(p, a); err != nil {
		return errno(err)
	}
	nfi, err := n.c.Stat(p)
	if err != nil {
		return errno(err)
	}
	*fi = nfi
	return 0
}

func (n *node) child(ctx context.Context, fi client.FileInfo, out *fuse.EntryOut) *gofs.Inode {
	n.fill(fi, &out.Attr)
	// The backend's inode number, where it has one, keeps one kernel inode
	// per file across lookups (and for hard links).
	ch := n.NewInode(ctx, &node{c: n.c, o: n.o, wb: n.wb, u: n.u, jobs: n.jobs, pool: n.pool}, gofs.StableAttr{Mode: fileType(fi), Ino: fi.Ino})
	if c, ok := ch.Operations().(*node); ok {
		c.visibleLinks(&out.Attr) // an existing inode: a hard link of a file unlinked while open
	}
	return ch
}

// visibleLinks leaves out of a's link count the hidden names n is kept
// under: a file unlinked while open has no link left (fstat shows 0), a
// hard link of one has one fewer.
func (n *node) visibleLinks(a *fuse.Attr) {
	if k := uint32(len(n.hiddenNames())); k > 0 {
		a.Nlink -= min(k, a.Nlink)
	}
}

// childNode is the node of child name, if the kernel has looked it up.
func (n *node) childNode(name string) *node {
	if ch := n.GetChild(name); ch != nil {
		c, _ := ch.Operations().(*node)
		return c
	}
	return nil
}

// self is n's node (root's is the one it embeds).
func (n *node) self() *node { return n }

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if hiddenName(name) {
		return nil, syscall.ENOENT
	}
	fi, err := n.c.Stat(n.rel(name))
	if err != nil {
		return nil, errno(err)
	}
	return n.child(ctx, fi, out), 0
}

func (n *node) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.wb.wait(n) // the size must count the writes already acknowledged
	fi, err := n.c.Stat(n.rel(""))
	if err != nil {
		return errno(err)
	}
	n.fill(fi, &out.Attr)
	n.visibleLinks(&out.Attr)
	return 0
}

// Setattr applies chmod, chown, utimes and truncate on the backend; a
// backend without attributes refuses the first three (ENOTSUP), never
// pretending they were applied.
func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var a client.Attr
	set := false
	if m, ok := in.GetMode(); ok {
		mode := fwdproto.FileMode(m)
		a.Mode, set = &mode, true
	}
	if u, ok := in.GetUID(); ok {
		a.UID, set = &u, true
	}
	if g, ok := in.GetGID(); ok {
		a.GID, set = &g, true
	}
	if t, ok := in.GetATime(); ok {
		a.Atime, set = &t, true
	}
	if t, ok := in.GetMTime(); ok {
		n.wb.wait(n) // a pending write must not move mtime after the change
		a.Mtime, set = &t, true
	}
	if set {
		if err := n.c.Setattr(n.rel(""), a); err != nil {
			return errno(err)
		}
	}
	if sz, ok := in.GetSize(); ok {
		n.wb.wait(n)
		err := n.c.Truncate(n.rel(""), int64(sz))
		n.changed(int64(sz), -1)
		if err != nil {
			return errno(err)
		}
	}
	return n.Getattr(ctx, fh, out)
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ents, err := n.c.ReadDir(n.rel(""))
	if err != nil {
		return nil, errno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents)+2)
	list = append(list, fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR}, fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR})
	for _, e := range ents {
		if !hiddenName(e.Name) {
			list = append(list, fuse.DirEntry{Name: e.Name, Mode: fileType(e), Ino: e.Ino})
		}
	}
	return gofs.NewListDirStream(list), 0
}

func callerPID(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Pid
	}
	return 0
}

func openFlags(flags uint32) uint32 {
	var f uint32
	if flags&syscall.O_TRUNC != 0 {
		f |= fwdproto.OpenTruncate
	}
	if flags&syscall.O_CREAT != 0 {
		f |= fwdproto.OpenCreate
	}
	if flags&syscall.O_EXCL != 0 {
		f |= fwdproto.OpenExcl
	}
	return f
}

// fuseFlags are the flags of an open that does not read through the page
// cache (cache.go): without Options.PageCache, every read and write goes
// to the mount as issued, and writes to one file inside its size run in
// parallel (the kernel otherwise serialises them per file).
func (n *node) fuseFlags() uint32 {
	if n.o.PageCache {
		return 0
	}
	return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES
}

// Open opens the file on the daemon. It is counted before the daemon
// opens it, so that an unlink meanwhile keeps the file (unlinked.go).
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.u.opened(n)
	f, err := n.c.OpenFile(n.rel(""), openFlags(flags)&^fwdproto.OpenCreate, 0)
	if err != nil {
		n.u.closed(n)
		return nil, 0, errno(err)
	}
	f.Process = callerPID(ctx)
	n.jobs.bind(f.Process)
	if n.cachedRead(flags) {
		fl, e := n.openCached()
		if e != 0 {
			f.Close()
			n.u.closed(n)
			return nil, 0, e
		}
		// O_DIRECT asks for each read to reach storage: no prefetching.
		pre := n.pool != nil && flags&syscall.O_DIRECT == 0
		return &handle{f: f, c: n.c, n: n, cached: true, prefetch: pre}, fl, 0
	}
	w := writable(flags)
	n.prefetchOpened(w, 0)
	return &handle{f: f, c: n.c, n: n, writer: w}, n.fuseFlags(), 0
}

// writable reports whether an open with these flags may write.
func writable(flags uint32) bool { return int(flags)&syscall.O_ACCMODE != syscall.O_RDONLY }

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if hiddenName(name) {
		return nil, nil, 0, syscall.EPERM
	}
	p := n.rel(name)
	// OpenMode: the mode as the kernel gives it (open(2) with mode 0 makes
	// a file nobody but root may open).
	f, err := n.c.OpenFile(p, openFlags(flags)|fwdproto.OpenCreate|fwdproto.OpenMode, fs.FileMode(mode).Perm())
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	f.Process = callerPID(ctx)
	n.jobs.bind(f.Process)
	fi, err := n.c.Stat(p)
	if err != nil {
		f.Close()
		return nil, nil, 0, errno(err)
	}
	// The kernel asks to create only a name its lookup did not find; a
	// file another client has filled meanwhile keeps its owner.
	if fi.Size == 0 {
		if e := n.own(ctx, p, &fi, mode); e != 0 {
			f.Close()
			return nil, nil, 0, e
		}
	}
	ch := n.child(ctx, fi, out).Operations().(*node)
	n.u.opened(ch) // the kernel holds the directory: no unlink of name meanwhile
	w := writable(flags)
	ch.prefetchOpened(w, 0)
	return &ch.Inode, &handle{f: f, c: n.c, n: ch, writer: w}, n.fuseFlags(), 0
}

// made answers the creation of p (by Mkdir or Mknod, with mode): its
// attributes from the backend, given to the creating user, as a new child.
func (n *node) made(ctx context.Context, p string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fi, err := n.c.Stat(p)
	if err != nil {
		return nil, errno(err)
	}
	if e := n.own(ctx, p, &fi, mode); e != 0 {
		return nil, e
	}
	return n.child(ctx, fi, out), 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if hiddenName(name) {
		return nil, syscall.EPERM
	}
	p := n.rel(name)
	if err := n.c.Mkdir(p, fs.FileMode(mode).Perm()); err != nil {
		return nil, errno(err)
	}
	return n.made(ctx, p, mode, out)
}

// Unlink removes name; a file open on this mount is kept under a hidden
// name until its last close instead (unlinked.go), so its descriptors still
// read, write and fstat it (with no link left).
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if hiddenName(name) {
		return syscall.ENOENT
	}
	if h, e := n.u.hide(n, name, n.childNode(name)); h != "" || e != 0 {
		return e
	}
	return errno(n.c.Unlink(n.rel(name)))
}

// Rmdir removes an empty directory. One that holds only files unlinked
// while open on this mount (empty to its users) is emptied first: they move
// to the export root, under their hidden names.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if hiddenName(name) {
		return syscall.ENOENT
	}
	p := n.rel(name)
	e := errno(n.c.Unlink(p))
	if notEmpty(e) && n.u.evacuate(p) {
		e = errno(n.c.Unlink(p))
	}
	return e
}

// notEmpty reports whether e is rmdir(2)'s "directory not empty" (the
// daemon answers ENOTEMPTY; older daemons answered EEXIST, which POSIX
// allows too).
func notEmpty(e syscall.Errno) bool { return e == syscall.ENOTEMPTY || e == syscall.EEXIST }

// Rename renames atomically on the backend (one rename(2) there). Both
// names are on this mount, so on one daemon; the kernel itself refuses a
// rename between two mounts with EXDEV. RENAME_NOREPLACE is checked
// before the rename (not atomic against another client); RENAME_EXCHANGE
// is not supported. A file the rename replaces that is open on this mount
// is first kept under a hidden name, as by Unlink (so the target's name is
// missing for the moment between the two renames); a directory it replaces
// that holds only such files is emptied first, as by Rmdir.
func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	const noReplace, exchange = 1, 2 // RENAME_NOREPLACE, RENAME_EXCHANGE
	np, ok := newParent.(interface{ self() *node })
	if !ok || flags&exchange != 0 {
		return syscall.ENOTSUP
	}
	if hiddenName(name) {
		return syscall.ENOENT
	}
	if hiddenName(newName) {
		return syscall.EPERM
	}
	dst := np.self()
	from, to := n.rel(name), dst.rel(newName)
	if flags&noReplace != 0 {
		if _, err := n.c.Stat(to); err == nil {
			return syscall.EEXIST
		}
	}
	// The replaced file, unless it is the one renamed (two links of one
	// file: rename(2) then does nothing).
	var replaced *node
	if t := dst.childNode(newName); t != nil && t != n.childNode(name) {
		replaced = t
	}
	h, e := n.u.hide(dst, newName, replaced)
	if e != 0 {
		return e
	}
	err := n.c.Rename(from, to)
	if notEmpty(errno(err)) && n.u.evacuate(to) {
		err = n.c.Rename(from, to)
	}
	if err != nil && h != "" {
		n.u.unhide(dst, newName, replaced, h)
	}
	return errno(err)
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	t, ok := target.(interface{ rel(string) string })
	if !ok {
		return nil, syscall.ENOTSUP
	}
	if hiddenName(name) {
		return nil, syscall.EPERM
	}
	p := n.rel(name)
	if err := n.c.Link(t.rel(""), p); err != nil {
		return nil, errno(err)
	}
	fi, err := n.c.Stat(p)
	if err != nil {
		return nil, errno(err)
	}
	return n.child(ctx, fi, out), 0
}

// Symlink creates a symbolic link; the backend refuses an absolute target
// or one leaving the export (EACCES).
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if hiddenName(name) {
		return nil, syscall.EPERM
	}
	p := n.rel(name)
	if err := n.c.Symlink(target, p); err != nil {
		return nil, errno(err)
	}
	fi, err := n.c.Stat(p)
	if err != nil {
		return nil, errno(err)
	}
	if e := n.own(ctx, p, &fi, 0); e != 0 {
		return nil, e
	}
	return n.child(ctx, fi, out), 0
}

// Mknod creates a FIFO, a socket's file (bind(2) of a Unix socket), a
// block or character device or an empty regular file on the backend. The
// kernel serves opens of FIFOs, sockets and devices itself; the backend's
// node only records them. A backend without namespace operations refuses
// (ENOTSUP); a device node a non-root daemon or a nodev backend cannot
// make, with EPERM.
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if hiddenName(name) {
		return nil, syscall.EPERM
	}
	p := n.rel(name)
	if err := n.c.Mknod(p, fwdproto.FileType(mode)|fwdproto.FileMode(mode), uint64(dev)); err != nil {
		return nil, errno(err)
	}
	return n.made(ctx, p, mode, out)
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := n.c.Readlink(n.rel(""))
	if err != nil {
		return nil, errno(err)
	}
	return []byte(t), 0
}

// Statfs reports the backend's file system (df on the mount).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	st, err := n.c.Statfs()
	if err != nil {
		e := errno(err)
		if e == syscall.ENOTSUP || e == syscall.EOPNOTSUPP {
			// A backend that cannot tell its capacity (the emulated PFS):
			// report it unknown, as a FUSE file system without statfs
			// does, rather than fail. MPI-IO (ROMIO) calls statfs to
			// choose its driver and refuses to open files when it fails.
			*out = fuse.StatfsOut{Bsize: 4096, Frsize: 4096, NameLen: 255}
			return 0
		}
		return e
	}
	*out = fuse.StatfsOut{Blocks: st.Blocks, Bfree: st.Free, Bavail: st.Avail, Files: st.Files, Ffree: st.FreeFiles,
		Bsize: st.BlockSize, Frsize: st.BlockSize, NameLen: st.NameLen}
	return 0
}

// handle is an open file.
type handle struct {
	f *client.File
	c *client.Client
	n *node // the file's node: its pending writes

	flockOwner atomic.Uint64  // the flock owner (this open file) once it took a flock lock
	cached     bool           // reads through the page cache (cache.go)
	prefetch   bool           // reads served by the prefetcher (prefetch.go)
	writer     bool           // open for writing: the file is not prefetched meanwhile
	loads      sync.WaitGroup // the prefetcher's fetches through f
}

var (
	_ gofs.FileReader   = (*handle)(nil)
	_ gofs.FileWriter   = (*handle)(nil)
	_ gofs.FileFsyncer  = (*handle)(nil)
	_ gofs.FileFlusher  = (*handle)(nil)
	_ gofs.FileReleaser = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.n.wb.waitRange(h.n, off, off+int64(len(dest)))
	if h.prefetch {
		if r, ok := h.readPrefetched(len(dest), off); ok {
			return r, 0
		}
		h.n.pool.direct.Add(int64(len(dest)))
	}
	if h.c.SharedMemory() {
		if b, err := h.c.AllocBuffer(len(dest)); err == nil {
			if b.Shared() {
				return h.readShared(b, off)
			}
			b.Free() // the region has no room: read into dest instead
		}
	}
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// readShared has the daemon pread into b, a buffer in the shared region,
// and hands b to go-fuse, which writes the reply from it (writev on
// /dev/fuse): the kernel copies the bytes from the region straight into
// the reader's buffer, one copy fewer than reading into dest. b is freed
// once the reply is written.
func (h *handle) readShared(b *client.Buffer, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadBuffer(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		b.Free()
		return nil, errno(err)
	}
	if n == 0 { // go-fuse writes an empty reply without calling Done
		b.Free()
		return fuse.ReadResultData(nil), 0
	}
	return &sharedRead{b: b, n: n}, 0
}

// sharedRead is a read's reply data lying in the shared region. go-fuse
// writes it with its vectored path (Slices) and calls Done after the write.
type sharedRead struct {
	b *client.Buffer
	n int
}

func (r *sharedRead) Size() int { return r.n }

// Slices is go-fuse's vectored reply: the data is written from the region.
func (r *sharedRead) Slices() ([][]byte, fuse.Status) { return [][]byte{r.b.Bytes()[:r.n]}, fuse.OK }

// Bytes copies the data into buf (go-fuse may use the result after Done).
func (r *sharedRead) Bytes(buf []byte) ([]byte, fuse.Status) {
	return append(buf[:0], r.b.Bytes()[:r.n]...), fuse.OK
}

func (r *sharedRead) Done() { r.b.Free() }

// Write hands the bytes to the forwarder. Within the write-behind budget it
// returns once they are copied (the kernel's buffer is reused after the
// reply) and the write continues in the background; otherwise it returns
// once the backend holds them.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	size := int64(len(data))
	id, behind, err := h.n.wb.begin(h.n, off, size)
	if err != nil {
		return 0, errno(err)
	}
	if !behind {
		h.n.wb.waitRange(h.n, off, off+size) // a later write must land last
		n, err := h.f.WriteAt(data, off)
		h.n.changed(off, size)
		if err != nil {
			return uint32(n), errno(err)
		}
		return uint32(n), 0
	}
	h.n.changed(off, size) // begun: a read of the range waits for it
	buf, err := h.c.AllocBuffer(len(data))
	if err != nil {
		h.n.wb.end(h.n, id, nil)
		return 0, errno(err)
	}
	copy(buf.Bytes(), data)
	go func() {
		n, err := h.f.WriteBuffer(buf, off)
		buf.Free()
		if err == nil && n < len(data) {
			err = errShortWrite
		}
		if err != nil {
			h.n.o.Logger.Error("write-behind failed; close or fsync of the file will report it", "file", h.f.Name(), "offset", off, "err", err)
		}
		h.n.wb.end(h.n, id, err)
	}()
	return uint32(size), 0
}

// Fsync waits for the file's pending writes, then has the backend make the
// file durable; it reports the first error of either.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if err := h.n.wb.drain(h.n); err != nil {
		return errno(err)
	}
	return errno(h.f.Sync())
}

// Flush (on every close(2) of a descriptor) waits for the file's pending
// writes and reports the first error one of them met.
// The closing process's POSIX locks on the file are then released.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	err := h.n.wb.drain(h.n)
	h.unlockOnFlush(ctx)
	return errno(err)
}

// Release closes the daemon's handle; at the file's last close on this
// mount, the hidden name of a file unlinked while open is removed.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.n.wb.wait(h.n)
	h.unlockOnRelease()
	h.loads.Wait()
	if h.cached {
		h.n.closedCached()
	}
	if h.writer {
		h.n.prefetchWriterClosed()
	}
	err := h.f.Close()
	h.n.u.closed(h.n)
	return errno(err)
}
