package rootfs

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
)

// DefaultMaxOpen is the number of files kept open when Options leave it 0.
const DefaultMaxOpen = 256

// FS is a confined directory tree. Safe for concurrent use.
type FS struct {
	root    *os.Root
	maxOpen int
	umask   fs.FileMode // the process's, applied by the kernel to what we create; -1 (all bits): unknown

	mu     sync.Mutex
	files  map[string]*handle
	lru    list.List // of *handle, most recent first
	closed bool
}

type handle struct {
	f       *os.File
	name    string
	refs    int
	evicted bool
	elem    *list.Element
}

// Open confines an FS to dir, which must exist. maxOpen bounds the cache of
// open files (0: DefaultMaxOpen).
func Open(dir string, maxOpen int) (*FS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpen
	}
	return &FS{root: r, maxOpen: maxOpen, umask: processUmask(), files: make(map[string]*handle)}, nil
}

// processUmask reads the process's file mode creation mask (Linux 4.7 and
// later show it in /proc/self/status); all permission bits if unknown.
func processUmask() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(u) & fs.ModePerm
				}
			}
		}
	}
	return fs.ModePerm
}

// masked reports whether the process's umask took bits of perm away from
// a file just created: the modes clients ask for are final (the mount's
// kernel has applied the caller's umask already), so such a file is
// chmod'ed to perm.
func (f *FS) masked(perm fs.FileMode) bool { return perm&f.umask != 0 }

// parent opens the directory holding name (a clean path other than ".")
// through the root, so that neither it nor the links on its way lead
// outside, and returns it with name's last element, which *at system
// calls on it then do not follow.
func (f *FS) parent(path, name string) (*os.File, string, error) {
	d, err := f.root.Open(pathpkg.Dir(name))
	if err != nil {
		return nil, "", mapErr(path, err)
	}
	return d, pathpkg.Base(name), nil
}

// Clean validates a slash-separated path relative to the root and returns
// its canonical form ("." for the root itself). Absolute paths, ".."
// elements, backslashes and NUL bytes are refused with backend.ErrPath.
func Clean(path string) (string, error) {
	if path == "" || path == "/" || path == "." {
		return ".", nil
	}
	if strings.HasPrefix(path, "/") || strings.ContainsAny(path, "\\\x00") {
		return "", fmt.Errorf("%w: %q", backend.ErrPath, path)
	}
	if isClean(path) {
		return path, nil
	}
	parts := strings.Split(path, "/")
	out := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
		case "..":
			return "", fmt.Errorf("%w: %q", backend.ErrPath, path)
		default:
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ".", nil
	}
	return strings.Join(out, "/"), nil
}

// isClean reports whether path is already canonical: non-empty elements
// separated by single slashes, none "." or "..".
func isClean(path string) bool {
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		switch elem := path[start:i]; elem {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// mapErr turns os.Root's escape refusal into backend.ErrPath; other errors
// (fs.ErrNotExist, fs.ErrExist, ...) pass through wrapped.
func mapErr(path string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %q: %v", backend.ErrPath, path, err)
	}
	return err
}

func (f *FS) acquire(path string) (*handle, error) {
	name, err := Clean(path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, backend.ErrClosed
	}
	if h, ok := f.files[name]; ok {
		h.refs++
		f.lru.MoveToFront(h.elem)
		return h, nil
	}
	file, err := f.root.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		file, err = f.root.OpenFile(name, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, mapErr(path, err)
	}
	if st, err := file.Stat(); err == nil && st.IsDir() {
		file.Close()
		return nil, fmt.Errorf("%w: %q is a directory", backend.ErrBadArgument, path)
	}
	h := &handle{f: file, name: name, refs: 1}
	h.elem = f.lru.PushFront(h)
	f.files[name] = h
	for f.lru.Len() > f.maxOpen {
		f.evictLocked(f.lru.Back().Value.(*handle))
	}
	return h, nil
}

func (f *FS) evictLocked(h *handle) {
	if h.evicted {
		return
	}
	h.evicted = true
	f.lru.Remove(h.elem)
	delete(f.files, h.name)
	if h.refs == 0 {
		h.f.Close()
	}
}

func (f *FS) release(h *handle) {
	f.mu.Lock()
	h.refs--
	if h.evicted && h.refs == 0 {
		h.f.Close()
	}
	f.mu.Unlock()
}

// forget drops the cached handle of path, if any (after unlink).
func (f *FS) forget(name string) {
	f.mu.Lock()
	if h, ok := f.files[name]; ok {
		f.evictLocked(h)
	}
	f.mu.Unlock()
}

// ReadAt reads up to len(p) bytes at off of an existing file; a read past
// the end of file returns a short count and no error.
func (f *FS) ReadAt(path string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d", backend.ErrBadArgument, off)
	}
	h, err := f.acquire(path)
	if err != nil {
		return 0, err
	}
	defer f.release(h)
	n, err := h.f.ReadAt(p, off)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// WriteAt writes p at off of an existing file (pwrite).
func (f *FS) WriteAt(path string, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d", backend.ErrBadArgument, off)
	}
	h, err := f.acquire(path)
	if err != nil {
		return 0, err
	}
	defer f.release(h)
	return h.f.WriteAt(p, off)
}

// Fsync flushes a file to stable storage.
func (f *FS) Fsync(path string) error {
	h, err := f.acquire(path)
	if err != nil {
		return err
	}
	defer f.release(h)
	return h.f.Sync()
}

// Truncate sets a file's size.
func (f *FS) Truncate(path string, size int64) error {
	if size < 0 {
		return fmt.Errorf("%w: size %d", backend.ErrBadArgument, size)
	}
	h, err := f.acquire(path)
	if err != nil {
		return err
	}
	defer f.release(h)
	return h.f.Truncate(size)
}

// Create creates a regular file if absent; an existing file is left as it
// is, an existing directory is an error.
func (f *FS) Create(path string, mode fs.FileMode) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if name == "." {
		return fmt.Errorf("%w: %q is the root directory", backend.ErrBadArgument, path)
	}
	file, err := f.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode.Perm())
	if errors.Is(err, fs.ErrExist) { // left as it is
		if file, err = f.root.OpenFile(name, os.O_RDWR, 0); err == nil {
			file.Close()
		}
		return mapErr(path, err)
	}
	if err != nil {
		return mapErr(path, err)
	}
	defer file.Close()
	if f.masked(mode.Perm()) {
		return file.Chmod(mode.Perm())
	}
	return nil
}

// Mkdir creates one directory.
func (f *FS) Mkdir(path string, mode fs.FileMode) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if err := f.root.Mkdir(name, mode.Perm()); err != nil {
		return mapErr(path, err)
	}
	if f.masked(mode.Perm()) {
		return mapErr(path, f.root.Chmod(name, mode.Perm()))
	}
	return nil
}

// Unlink removes a file or an empty directory.
func (f *FS) Unlink(path string) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if name == "." {
		return fmt.Errorf("%w: cannot remove the root", backend.ErrBadArgument)
	}
	f.forget(name)
	return mapErr(path, f.root.Remove(name))
}

// Stat describes path.
func (f *FS) Stat(path string) (backend.FileInfo, error) {
	name, err := Clean(path)
	if err != nil {
		return backend.FileInfo{}, err
	}
	return f.describe(name)
}

// describe is lstat: a symbolic link is described, not followed nor read,
// even one whose target leaves the root (Readlink and every operation that
// follows it refuse that one). Reading a link to check it would update its
// atime (on a relatime file system, once its atime is older than its
// mtime), so a link's atime set with utimensat would read back as now.
func (f *FS) describe(name string) (backend.FileInfo, error) {
	st, err := f.root.Lstat(name)
	if err != nil {
		return backend.FileInfo{}, mapErr(name, err)
	}
	return info(st), nil
}

// ReadDir lists a directory in name order; symbolic links are listed as
// links (not followed nor read); entries removed meanwhile are left out.
func (f *FS) ReadDir(path string) ([]backend.FileInfo, error) {
	name, err := Clean(path)
	if err != nil {
		return nil, err
	}
	d, err := f.root.Open(name)
	if err != nil {
		return nil, mapErr(path, err)
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, mapErr(path, err)
	}
	out := make([]backend.FileInfo, 0, len(ents))
	for _, e := range ents {
		child := e.Name()
		if name != "." {
			child = name + "/" + e.Name()
		}
		fi, err := f.describe(child)
		if err != nil {
			continue
		}
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b backend.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func info(st fs.FileInfo) backend.FileInfo {
	fi := backend.FileInfo{Name: st.Name(), Size: st.Size(), Mode: st.Mode(), ModTime: st.ModTime(), IsDir: st.IsDir()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fi.Atime = time.Unix(sys.Atim.Unix())
		fi.Ctime = time.Unix(sys.Ctim.Unix())
		fi.Blocks = sys.Blocks
		fi.Ino = sys.Ino
		fi.Nlink = uint32(sys.Nlink)
		fi.UID, fi.GID = sys.Uid, sys.Gid
		fi.Rdev = sys.Rdev
	}
	return fi
}

// Rename moves oldPath to newPath (rename(2), both inside the root); open
// files keep their handles and are known by the new name from then on.
func (f *FS) Rename(oldPath, newPath string) error {
	from, to, err := clean2(oldPath, newPath)
	if err != nil {
		return err
	}
	if from == "." || to == "." {
		return fmt.Errorf("%w: cannot rename the root", backend.ErrBadArgument)
	}
	od, ob, err := f.parent(oldPath, from)
	if err != nil {
		return err
	}
	defer od.Close()
	nd, nb, err := f.parent(newPath, to)
	if err != nil {
		return err
	}
	defer nd.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	// renameat(2) itself, not os.Root.Rename, which refuses to replace a
	// directory (an empty one may be replaced, as rename(2) does).
	if err := unix.Renameat(int(od.Fd()), ob, int(nd.Fd()), nb); err != nil {
		return &os.LinkError{Op: "rename", Old: oldPath, New: newPath, Err: err}
	}
	// Cached handles follow their files: under the new name, and the
	// replaced file's handle is dropped.
	if h, ok := f.files[to]; ok {
		f.evictLocked(h)
	}
	for name, h := range f.files {
		if rest, ok := under(name, from); ok {
			delete(f.files, name)
			h.name = to + rest
			if old, ok := f.files[h.name]; ok {
				f.evictLocked(old)
			}
			f.files[h.name] = h
		}
	}
	return nil
}

// under reports whether name is dir or lies below it, and the rest of name
// after dir.
func under(name, dir string) (string, bool) {
	if name == dir {
		return "", true
	}
	if strings.HasPrefix(name, dir+"/") {
		return name[len(dir):], true
	}
	return "", false
}

func clean2(a, b string) (string, string, error) {
	x, err := Clean(a)
	if err != nil {
		return "", "", err
	}
	y, err := Clean(b)
	return x, y, err
}

// Link makes newPath a hard link to oldPath.
func (f *FS) Link(oldPath, newPath string) error {
	from, to, err := clean2(oldPath, newPath)
	if err != nil {
		return err
	}
	return mapErr(newPath, f.root.Link(from, to))
}

// Symlink makes path a symbolic link to target. The target must be
// relative and resolve inside the root from the link's directory.
func (f *FS) Symlink(target, path string) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if target == "" || strings.HasPrefix(target, "/") || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%w: symbolic link target %q must be a relative path inside the export", backend.ErrPath, target)
	}
	if to := pathpkg.Join(pathpkg.Dir(name), target); to == ".." || strings.HasPrefix(to, "../") {
		return fmt.Errorf("%w: symbolic link target %q leaves the export root", backend.ErrPath, target)
	}
	return mapErr(path, f.root.Symlink(target, name))
}

// Mknod creates a FIFO, socket, block or character device numbered dev,
// or an empty regular file (mode's type bits say which) with mknodat(2) in
// its directory, opened through the root: neither the directory nor the
// new name can lead outside it (mknodat does not follow a final symbolic
// link: an existing name is EEXIST).
func (f *FS) Mknod(path string, mode fs.FileMode, dev uint64) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if name == "." {
		return fmt.Errorf("%w: %q is the root directory", backend.ErrExist, path)
	}
	var typ uint32
	switch mode.Type() {
	case 0:
		typ = syscall.S_IFREG
	case fs.ModeNamedPipe:
		typ = syscall.S_IFIFO
	case fs.ModeSocket:
		typ = syscall.S_IFSOCK
	case fs.ModeDevice:
		typ = syscall.S_IFBLK
	case fs.ModeDevice | fs.ModeCharDevice:
		typ = syscall.S_IFCHR
	default:
		return fmt.Errorf("%w: mknod of type %v", backend.ErrBadArgument, mode.Type())
	}
	perm := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		perm |= syscall.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		perm |= syscall.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		perm |= syscall.S_ISVTX
	}
	d, base, err := f.parent(path, name)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := syscall.Mknodat(int(d.Fd()), base, typ|perm, int(dev)); err != nil {
		return &fs.PathError{Op: "mknod", Path: path, Err: err}
	}
	if f.masked(mode.Perm()) {
		return mapErr(path, f.root.Chmod(name, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)))
	}
	return nil
}

// Readlink returns the target of the symbolic link path; a link whose
// target leaves the root (made on the backend directly: Symlink refuses
// such targets) is refused with backend.ErrPath, as following it is.
func (f *FS) Readlink(path string) (string, error) {
	name, err := Clean(path)
	if err != nil {
		return "", err
	}
	t, err := f.root.Readlink(name)
	if err != nil {
		return "", mapErr(path, err)
	}
	// Followed inside the root (a dangling link is fine). The read above
	// has just set the link's atime; following it sets the same.
	if _, err := f.root.Stat(name); err != nil {
		if err := mapErr(path, err); errors.Is(err, backend.ErrPath) {
			return "", err
		}
	}
	return t, nil
}

// Setattr applies the attribute changes a names (lchown, chmod, utimes,
// in that order: chown clears setuid and setgid, which a mode given with
// the owner sets again).
func (f *FS) Setattr(path string, a backend.Attr) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	if a.UID != nil || a.GID != nil {
		uid, gid := -1, -1
		if a.UID != nil {
			uid = int(*a.UID)
		}
		if a.GID != nil {
			gid = int(*a.GID)
		}
		if err := f.root.Lchown(name, uid, gid); err != nil {
			return mapErr(path, err)
		}
	}
	if a.Mode != nil {
		if err := f.root.Chmod(name, a.Mode.Perm()|*a.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return mapErr(path, err)
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		// utimensat(2) on the name, not following a symbolic link: the
		// mount asks for a link's own times (utimensat with
		// AT_SYMLINK_NOFOLLOW); it resolves links itself otherwise.
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Atime != nil {
			ts[0] = unix.NsecToTimespec(a.Atime.UnixNano())
		}
		if a.Mtime != nil {
			ts[1] = unix.NsecToTimespec(a.Mtime.UnixNano())
		}
		d, base, err := f.parent(path, name)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := unix.UtimesNanoAt(int(d.Fd()), base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "utimensat", Path: path, Err: err}
		}
	}
	return nil
}

// Statfs reports the usage of the file system holding the root.
func (f *FS) Statfs() (backend.FSInfo, error) {
	d, err := f.root.Open(".")
	if err != nil {
		return backend.FSInfo{}, err
	}
	defer d.Close()
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(d.Fd()), &st); err != nil {
		return backend.FSInfo{}, err
	}
	return backend.FSInfo{BlockSize: uint32(st.Bsize), Blocks: st.Blocks, Free: st.Bfree, Avail: st.Bavail,
		Files: st.Files, FreeFiles: st.Ffree, NameLen: uint32(st.Namelen)}, nil
}

// ReadFile returns a small file's contents (layout files).
func (f *FS) ReadFile(path string) ([]byte, error) {
	name, err := Clean(path)
	if err != nil {
		return nil, err
	}
	b, err := f.root.ReadFile(name)
	return b, mapErr(path, err)
}

// WriteFile replaces a small file's contents.
func (f *FS) WriteFile(path string, data []byte, mode fs.FileMode) error {
	name, err := Clean(path)
	if err != nil {
		return err
	}
	f.forget(name)
	return mapErr(path, f.root.WriteFile(name, data, mode))
}

// Close closes every cached file and the root; in-flight operations finish
// on their handles first.
func (f *FS) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	for f.lru.Len() > 0 {
		f.evictLocked(f.lru.Back().Value.(*handle))
	}
	f.mu.Unlock()
	return f.root.Close()
}
