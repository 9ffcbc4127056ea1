package posix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"syscall"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/layout"
)

// Backend is a directory tree, typically on a mounted parallel file system,
// presented as a file system striped over Servers() data servers by its
// layout kind (Layouts). Safe for concurrent use.
type Backend struct {
	fs      *rootfs.FS
	layouts Layouts
	kind    string    // the layout kind's name
	closer  io.Closer // what the layout kind holds open, or nil
	local   bool      // the root is on a local file system (see Local)
}

var (
	_ backend.Backend   = (*Backend)(nil)
	_ backend.Spanner   = (*Backend)(nil)
	_ backend.Local     = (*Backend)(nil)
	_ backend.Namespace = (*Backend)(nil)
)

// Options configures Open.
type Options struct {
	// Root is the export's directory.
	Root string
	// Layout names the layout kind (Kinds): "static" (the default: Static
	// and layout.File files), "lustre" (each file's own striping),
	// or "auto" (Detect's choice for Root's file system).
	Layout string
	// Static is the static kind's layout; its StripeCount is the number
	// of data servers unless Servers is set. Zero: layout.Default(4).
	Static layout.Layout
	// Servers is the number of data servers (scheduler queues); 0 lets
	// the layout kind decide (static: Static.StripeCount; lustre: the
	// file system's OST count).
	Servers int
	// Xattr reads extended attributes (nil: from the files); XattrNames
	// overrides the attribute names a kind reads its layout from. Both
	// are for tests on file systems without the real attributes.
	Xattr      XattrFunc
	XattrNames []string
	// MooseFS configures the moosefs layout kind (the master, the chunk
	// servers, the prefix its tools run with); other kinds ignore it.
	MooseFS MooseFSOptions
	// Logger receives what the layout kind decided; nil discards.
	Logger *slog.Logger
}

// New opens the directory root as a backend whose files are striped per
// layout unless a LayoutFile says otherwise (the static layout kind);
// layout.StripeCount is the number of data servers (scheduler queues). A
// zero layout means layout.Default(4).
func New(root string, layout layout.Layout) (*Backend, error) {
	return Open(Options{Root: root, Static: layout})
}

// Open opens opts.Root as a backend with the layout kind opts.Layout.
func Open(opts Options) (*Backend, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	st, err := rootfs.Open(opts.Root, 0)
	if err != nil {
		return nil, fmt.Errorf("posix: open export root: %w", err)
	}
	b := &Backend{fs: st}
	env := Env{Root: opts.Root, FS: st, Static: opts.Static, Servers: opts.Servers, Xattr: opts.Xattr, XattrNames: opts.XattrNames, MooseFS: opts.MooseFS, Logger: opts.Logger}
	if env.Xattr == nil {
		x, r, err := FileXattr(opts.Root)
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("posix: open export root: %w", err)
		}
		env.Xattr, b.closer = x, r
	}
	if b.layouts, b.kind, err = newLayouts(opts.Layout, env); err != nil {
		b.Close()
		return nil, err
	}
	var sfs syscall.Statfs_t
	b.local = syscall.Statfs(opts.Root, &sfs) == nil && localFS(int64(sfs.Type))
	return b, nil
}

// LayoutKind names the backend's layout kind ("static", "lustre", ...).
func (b *Backend) LayoutKind() string { return b.kind }

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
func (b *Backend) Servers() int { return b.layouts.Servers() }

// ErrNotStatic is returned by Layout and SetLayout when the backend's
// layout kind is not static: the file system's layouts are set with its
// own tools (lfs setstripe on Lustre).
var ErrNotStatic = errors.New("posix: layout files apply to the static layout kind only")

// Layout returns the layout in force for files in directory dir under the
// static layout kind: that of the nearest LayoutFile in dir or above it,
// else the default.
func (b *Backend) Layout(dir string) (layout.Layout, error) {
	s, ok := b.layouts.(*static)
	if !ok {
		return layout.Layout{}, fmt.Errorf("%w (this backend's is %s)", ErrNotStatic, b.kind)
	}
	name, err := rootfs.Clean(dir)
	if err != nil {
		return layout.Layout{}, err
	}
	return s.layout(name)
}

// SetLayout writes a LayoutFile in directory dir so that files there (and
// below, unless overridden) use l; static layout kind only.
func (b *Backend) SetLayout(dir string, l layout.Layout) error {
	s, ok := b.layouts.(*static)
	if !ok {
		return fmt.Errorf("%w (this backend's is %s)", ErrNotStatic, b.kind)
	}
	name, err := rootfs.Clean(dir)
	if err != nil {
		return err
	}
	return s.set(name, l)
}

// Split appends the pieces of file bytes [off, off+n) in file order.
func (b *Backend) Split(dst []layout.Piece, p string, off, n int64) ([]layout.Piece, error) {
	if off < 0 || n < 0 {
		return dst, fmt.Errorf("posix: split %q: %w: range [%d, +%d)", p, backend.ErrBadArgument, off, n)
	}
	name, err := rootfs.Clean(p)
	if err != nil {
		return dst, err
	}
	return b.layouts.Split(dst, name, off, n)
}

func (b *Backend) check(p string, server int, off, n int64) error {
	if server < 0 || server >= b.layouts.Servers() {
		return fmt.Errorf("posix: %w: server %d of %d", backend.ErrBadArgument, server, b.layouts.Servers())
	}
	if off < 0 || n < 0 {
		return fmt.Errorf("posix: %w: range [%d, +%d)", backend.ErrBadArgument, off, n)
	}
	name, err := rootfs.Clean(p)
	if err != nil {
		return err
	}
	if err := b.layouts.Check(name, server, off, n); err != nil {
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
	name, err := rootfs.Clean(p)
	if err != nil {
		return err
	}
	if _, err := b.layouts.Split(nil, name, off, 0); err != nil {
		return err
	}
	return ctx.Err()
}

// Create creates a regular file if absent.
func (b *Backend) Create(ctx context.Context, p string, mode fs.FileMode) error {
	return b.fs.Create(p, mode)
}

// Stat describes a file or directory; a regular file's description goes
// to the layout kind (Layouts.Opened), which reads the file's layout again
// if it is another file or changed since.
func (b *Backend) Stat(ctx context.Context, p string) (backend.FileInfo, error) {
	fi, err := b.fs.Stat(p)
	if err == nil && fi.Mode.IsRegular() {
		if name, err := rootfs.Clean(p); err == nil {
			b.layouts.Opened(name, fi)
		}
	}
	return fi, err
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
			b.layouts.Forget(name)
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
		if e.Name != layout.File {
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
	if c, ok := b.layouts.(io.Closer); ok {
		c.Close() // a kind's background reads (moosefs)
	}
	err := b.fs.Close()
	if b.closer != nil {
		if cerr := b.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Rename moves a file or directory inside the export, atomically (one
// rename(2) on the file system below). Layouts found under the old name
// are looked up again.
func (b *Backend) Rename(ctx context.Context, oldPath, newPath string) error {
	if err := b.fs.Rename(oldPath, newPath); err != nil {
		return err
	}
	b.layouts.Forget("")
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
