package posix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"
	"syscall"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
)

// Backend is a directory tree, typically on a mounted parallel file system,
// presented as a file system striped over Servers() data servers. Safe for
// concurrent use.
type Backend struct {
	fs      *rootfs.FS
	def     backend.Layout
	servers int
	local   bool // the root is on a local file system (see Local)

	mu      sync.RWMutex
	layouts map[string]layoutEntry // directory -> layout in force there
}

type layoutEntry struct {
	l   backend.Layout
	err error
}

var (
	_ backend.Backend   = (*Backend)(nil)
	_ backend.Spanner   = (*Backend)(nil)
	_ backend.Local     = (*Backend)(nil)
	_ backend.Namespace = (*Backend)(nil)
)

// New opens the directory root as a backend whose files are striped per
// layout unless a LayoutFile says otherwise; layout.StripeCount is the
// number of data servers (scheduler queues). A zero layout means
// backend.DefaultLayout(4).
func New(root string, layout backend.Layout) (*Backend, error) {
	if layout == (backend.Layout{}) {
		layout = backend.DefaultLayout(4)
	}
	if err := layout.Validate(layout.StripeCount); err != nil {
		return nil, fmt.Errorf("posix: %w", err)
	}
	st, err := rootfs.Open(root, 0)
	if err != nil {
		return nil, fmt.Errorf("posix: open export root: %w", err)
	}
	var sfs syscall.Statfs_t
	local := syscall.Statfs(root, &sfs) == nil && localFS(int64(sfs.Type))
	return &Backend{fs: st, def: layout, servers: layout.StripeCount, local: local, layouts: make(map[string]layoutEntry)}, nil
}

// Local reports whether the export root is on a local file system: a
// memory one (tmpfs, ramfs) or a local disk one (ext2/3/4, XFS, Btrfs, F2FS,
// ZFS, or an overlay of them). A network or parallel file system (Lustre,
// GPFS, BeeGFS, CephFS, NFS), a FUSE mount or an unknown type is not.
func (b *Backend) Local() bool { return b.local }

// localFS reports whether a statfs f_type (linux/magic.h) is a local file
// system.
func localFS(fsType int64) bool {
	switch uint32(fsType) {
	case 0x01021994, // tmpfs
		0x858458f6, // ramfs
		0xef53,     // ext2, ext3, ext4
		0x58465342, // XFS
		0x9123683e, // Btrfs
		0xf2f52010, // F2FS
		0x2fc12fc1, // ZFS
		0x794c7630: // overlayfs
		return true
	}
	return false
}

// Servers is the number of data servers.
func (b *Backend) Servers() int { return b.servers }

// Layout returns the layout in force for files in directory dir: that of
// the nearest LayoutFile in dir or above it, else the default.
func (b *Backend) Layout(dir string) (backend.Layout, error) {
	name, err := rootfs.Clean(dir)
	if err != nil {
		return backend.Layout{}, err
	}
	return b.layout(name)
}

func (b *Backend) layout(dir string) (backend.Layout, error) {
	b.mu.RLock()
	e, ok := b.layouts[dir]
	b.mu.RUnlock()
	if ok {
		return e.l, e.err
	}
	data, err := b.fs.ReadFile(path.Join(dir, backend.LayoutFile))
	switch {
	case err == nil:
		e.l, e.err = backend.ParseLayout(data, b.def)
		if e.err == nil {
			e.err = e.l.Validate(b.servers)
		}
		if e.err != nil {
			e.err = fmt.Errorf("posix: %s: %w", path.Join(dir, backend.LayoutFile), e.err)
		}
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, backend.ErrBadArgument) || isNotDir(err):
		if dir == "." {
			e.l = b.def
		} else {
			e.l, e.err = b.layout(path.Dir(dir))
		}
	default:
		return backend.Layout{}, err // transient: do not cache
	}
	b.mu.Lock()
	b.layouts[dir] = e
	b.mu.Unlock()
	return e.l, e.err
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "not a directory"
}

// SetLayout writes a LayoutFile in directory dir so that files there (and
// below, unless overridden) use l.
func (b *Backend) SetLayout(dir string, l backend.Layout) error {
	if err := l.Validate(b.servers); err != nil {
		return fmt.Errorf("posix: %w", err)
	}
	name, err := rootfs.Clean(dir)
	if err != nil {
		return err
	}
	data, _ := l.MarshalText()
	if err := b.fs.WriteFile(path.Join(name, backend.LayoutFile), data, 0o644); err != nil {
		return fmt.Errorf("posix: set layout: %w", err)
	}
	b.mu.Lock()
	clear(b.layouts)
	b.mu.Unlock()
	return nil
}

// fileLayout resolves the layout of file p and the server of its stripe 0.
func (b *Backend) fileLayout(p string) (backend.Layout, int, error) {
	name, err := rootfs.Clean(p)
	if err != nil {
		return backend.Layout{}, 0, err
	}
	l, err := b.layout(path.Dir(name))
	if err != nil {
		return l, 0, err
	}
	return l, l.FirstServer(name, b.servers), nil
}

// Split appends the pieces of file bytes [off, off+n) in file order.
func (b *Backend) Split(dst []backend.Piece, p string, off, n int64) ([]backend.Piece, error) {
	if off < 0 || n < 0 {
		return dst, fmt.Errorf("posix: split %q: %w: range [%d, +%d)", p, backend.ErrBadArgument, off, n)
	}
	l, first, err := b.fileLayout(p)
	if err != nil {
		return dst, err
	}
	return l.Split(dst, b.servers, first, off, n), nil
}

func (b *Backend) check(p string, server int, off, n int64) error {
	if server < 0 || server >= b.servers {
		return fmt.Errorf("posix: %w: server %d of %d", backend.ErrBadArgument, server, b.servers)
	}
	l, first, err := b.fileLayout(p)
	if err != nil {
		return err
	}
	if err := l.Check(l.Slot(server, first, b.servers), off, n); err != nil {
		return fmt.Errorf("posix: %q on server %d: %w", p, server, err)
	}
	return nil
}

// ReadAt reads file bytes [off, off+len(p)), which must lie on server, with
// one pread; a short count means end of file.
func (b *Backend) ReadAt(ctx context.Context, p string, server int, buf []byte, off int64) (int, error) {
	if err := b.check(p, server, off, int64(len(buf))); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.fs.ReadAt(p, buf, off)
}

// WriteAt writes buf at off with one pwrite; the bytes are in the file
// system when it returns (Fsync makes them durable).
func (b *Backend) WriteAt(ctx context.Context, p string, server int, buf []byte, off int64) (int, error) {
	if err := b.check(p, server, off, int64(len(buf))); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.fs.WriteAt(p, buf, off)
}

// ReadSpan reads file bytes [off, off+len(p)) whatever data servers they
// lie on, with one pread (backend.Spanner).
func (b *Backend) ReadSpan(ctx context.Context, p string, buf []byte, off int64) (int, error) {
	if err := b.checkSpan(ctx, p, off); err != nil {
		return 0, err
	}
	return b.fs.ReadAt(p, buf, off)
}

// WriteSpan writes buf at off whatever data servers the range lies on,
// with one pwrite (backend.Spanner).
func (b *Backend) WriteSpan(ctx context.Context, p string, buf []byte, off int64) (int, error) {
	if err := b.checkSpan(ctx, p, off); err != nil {
		return 0, err
	}
	return b.fs.WriteAt(p, buf, off)
}

func (b *Backend) checkSpan(ctx context.Context, p string, off int64) error {
	if off < 0 {
		return fmt.Errorf("posix: %w: offset %d", backend.ErrBadArgument, off)
	}
	if _, _, err := b.fileLayout(p); err != nil {
		return err
	}
	return ctx.Err()
}

// Create creates a regular file if absent.
func (b *Backend) Create(ctx context.Context, p string, mode fs.FileMode) error {
	return b.fs.Create(p, mode)
}

// Stat describes a file or directory.
func (b *Backend) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	return b.fs.Stat(p)
}

// Truncate sets a file's size.
func (b *Backend) Truncate(ctx context.Context, p string, size int64) error {
	return b.fs.Truncate(p, size)
}

// Unlink removes a file or an empty directory.
func (b *Backend) Unlink(ctx context.Context, p string) error {
	err := b.fs.Unlink(p)
	if err == nil {
		if name, _ := rootfs.Clean(p); name != "" {
			b.mu.Lock()
			delete(b.layouts, name)
			b.mu.Unlock()
		}
	}
	return err
}

// Mkdir creates a directory.
func (b *Backend) Mkdir(ctx context.Context, p string, mode fs.FileMode) error {
	return b.fs.Mkdir(p, mode)
}

// ReadDir lists a directory in name order, without layout files.
func (b *Backend) ReadDir(ctx context.Context, p string) ([]backend.FileInfo, error) {
	ents, err := b.fs.ReadDir(p)
	out := ents[:0]
	for _, e := range ents {
		if e.Name != backend.LayoutFile {
			out = append(out, e)
		}
	}
	return out, err
}

// Fsync flushes a file to stable storage.
func (b *Backend) Fsync(ctx context.Context, p string) error {
	return b.fs.Fsync(p)
}

// Close releases the open files; later calls fail with backend.ErrClosed.
func (b *Backend) Close() error {
	return b.fs.Close()
}

// Rename moves a file or directory inside the export, atomically (one
// rename(2) on the file system below). Layouts found under the old name
// are looked up again.
func (b *Backend) Rename(ctx context.Context, oldPath, newPath string) error {
	if err := b.fs.Rename(oldPath, newPath); err != nil {
		return err
	}
	b.mu.Lock()
	clear(b.layouts)
	b.mu.Unlock()
	return nil
}

// Link makes newPath a hard link to oldPath.
func (b *Backend) Link(ctx context.Context, oldPath, newPath string) error {
	return b.fs.Link(oldPath, newPath)
}

// Symlink makes path a symbolic link to target (relative, inside the export).
func (b *Backend) Symlink(ctx context.Context, target, path string) error {
	return b.fs.Symlink(target, path)
}

// Readlink returns a symbolic link's target.
func (b *Backend) Readlink(ctx context.Context, path string) (string, error) {
	return b.fs.Readlink(path)
}

// Setattr applies chmod, chown and utimes changes.
func (b *Backend) Setattr(ctx context.Context, path string, a backend.Attr) error {
	return b.fs.Setattr(path, a)
}

// Mknod creates a FIFO, socket, device node or empty regular file
// (mknod(2) in the directory, which must lie inside the export).
func (b *Backend) Mknod(ctx context.Context, path string, mode fs.FileMode, dev uint64) error {
	return b.fs.Mknod(path, mode, dev)
}

// Statfs reports the usage of the file system holding the export.
func (b *Backend) Statfs(ctx context.Context) (backend.FSInfo, error) { return b.fs.Statfs() }
