// Package backend is where the forwarding daemon's dispatched requests land:
// the emulated PFS (adaptio pfs) or a POSIX directory on a mounted parallel
// file system with a striping layout. Both split a file range into pieces, one
// per PFS data server, which become the scheduler's queues.
//
// Paths are slash-separated and relative to the export root; a Backend
// refuses (ErrPath) any path that is absolute, contains "..", or resolves
// through a symlink outside the root.
package backend

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/adaptio/adaptio/layout"
)

// Errors shared by backends; wrapped with detail, tested with errors.Is.
var (
	ErrPath        = errors.New("backend: path outside the export root")
	ErrNotExist    = fs.ErrNotExist
	ErrExist       = fs.ErrExist
	ErrServerDown  = errors.New("backend: data server unavailable")
	ErrClosed      = errors.New("backend: closed")
	ErrBadArgument = layout.ErrBadArgument // one sentinel with the layout's errors
	ErrUnsupported = errors.ErrUnsupported
)

// FileInfo is the metadata the protocol's stat returns.
type FileInfo struct {
	Name    string
	Size    int64
	Mode    fs.FileMode // permission and type bits (fs.ModeDir, fs.ModeSymlink)
	ModTime time.Time
	IsDir   bool
	// As stat(2) has them; zero where the backend does not know.
	Atime, Ctime time.Time
	Blocks       int64 // 512-byte blocks allocated (a sparse file has fewer than its size)
	Ino          uint64
	Nlink        uint32
	UID, GID     uint32
	Rdev         uint64 // device number of a block or character device
}

// Attr is an attribute change (chmod, chown, utimes); nil fields stay.
type Attr struct {
	Mode         *fs.FileMode // permission bits
	UID, GID     *uint32
	Atime, Mtime *time.Time
}

// FSInfo is file-system usage, as statfs(2) has it.
type FSInfo struct {
	BlockSize                             uint32
	Blocks, Free, Avail, Files, FreeFiles uint64
	NameLen                               uint32
}

// Namespace is implemented by backends that support the rest of POSIX's
// namespace and attributes, as applications expect them through the mount.
// Paths are checked as for Backend: a link or rename never reaches outside
// the export root, and a symbolic link's target must stay inside it too.
// Backends without it answer these operations with ErrUnsupported.
type Namespace interface {
	// Rename moves oldPath to newPath atomically, replacing newPath as
	// rename(2) does.
	Rename(ctx context.Context, oldPath, newPath string) error
	// Link makes newPath a hard link to the existing oldPath.
	Link(ctx context.Context, oldPath, newPath string) error
	// Symlink makes path a symbolic link to target, a relative path that
	// resolves inside the root (ErrPath otherwise).
	Symlink(ctx context.Context, target, path string) error
	// Readlink returns a symbolic link's target.
	Readlink(ctx context.Context, path string) (string, error)
	// Setattr changes the attributes a's non-nil fields name.
	Setattr(ctx context.Context, path string, a Attr) error
	// Statfs reports the file system's usage.
	Statfs(ctx context.Context) (FSInfo, error)
	// Mknod creates a FIFO (fs.ModeNamedPipe), a Unix socket's file
	// (fs.ModeSocket), a block (fs.ModeDevice) or character device
	// (fs.ModeDevice|fs.ModeCharDevice) numbered dev, or an empty regular
	// file (no type bits), as mknod(2); mode's permission, setuid, setgid
	// and sticky bits apply. Other types are ErrBadArgument; a device node
	// the file system or the daemon's privileges refuse fails as mknod(2)
	// did (EPERM).
	Mknod(ctx context.Context, path string, mode fs.FileMode, dev uint64) error
}

// Backend stores files striped over Servers() data servers. Implementations
// are safe for concurrent use.
type Backend interface {
	// Servers is the number of data servers (scheduler queues).
	Servers() int
	// Split appends to dst the pieces of file bytes [off, off+n) in file
	// order, per the file's striping layout.
	Split(dst []layout.Piece, path string, off, n int64) ([]layout.Piece, error)
	// ReadAt reads len(p) bytes at file offset off from one data server;
	// the range lies within pieces Split assigned to that server. Bytes
	// beyond the end of file read as a short count, not an error.
	ReadAt(ctx context.Context, path string, server int, p []byte, off int64) (int, error)
	// WriteAt writes p at file offset off on one data server and returns
	// only when the server holds the bytes (write-through).
	WriteAt(ctx context.Context, path string, server int, p []byte, off int64) (int, error)

	Create(ctx context.Context, path string, mode fs.FileMode) error // create if absent (no error if it exists)
	Stat(ctx context.Context, path string) (FileInfo, error)
	Truncate(ctx context.Context, path string, size int64) error
	Unlink(ctx context.Context, path string) error
	Mkdir(ctx context.Context, path string, mode fs.FileMode) error
	ReadDir(ctx context.Context, path string) ([]FileInfo, error)
	Fsync(ctx context.Context, path string) error
	Close() error
}

// Local is implemented by backends that can tell whether their calls run on
// this node's CPUs, with no network between: a POSIX directory on tmpfs or
// on a local disk file system, where a buffered read or write is a copy to
// or from the page cache. Calls that rarely block keep every worker of the
// forwarder runnable at once, so on a node with few CPUs the forwarder runs
// fewer workers (fwd.Options.Workers).
type Local interface {
	// Local reports whether the backend is such a local file system.
	Local() bool
}

// Spanner is implemented by backends that keep each file whole in one
// place (a POSIX directory: a mounted parallel file system stripes it
// itself), so a range spanning several data servers' pieces can be moved
// with one call. The forwarder uses it to execute, as one access,
// contiguous batches of one request the scheduler has already released
// together; the pieces remain the unit of scheduling.
type Spanner interface {
	// ReadSpan reads len(p) bytes at file offset off; bytes beyond the end
	// of file read as a short count.
	ReadSpan(ctx context.Context, path string, p []byte, off int64) (int, error)
	// WriteSpan writes p at file offset off and returns once the file
	// system has the bytes.
	WriteSpan(ctx context.Context, path string, p []byte, off int64) (int, error)
}

// ObjectStore is a backend that keeps each data server's share of a file
// as one object, its stripes back to back (PVFS datafiles): bytes that are
// contiguous in a server's local offsets move in one access there, as a
// data server sees them, though they come from stripes apart in the file.
// The forwarder schedules such a backend's pieces by local offset and
// merges the batches released one after another that continue each other
// on one server (the simulator's aggregation, the same rule).
type ObjectStore interface {
	// Local maps file offset off, which lies on server, to its offset in
	// that server's object of the file.
	Local(path string, server int, off int64) (int64, error)
	// ReadLocal reads len(p) bytes of server's object at local offset;
	// the count is short where the object ends.
	ReadLocal(ctx context.Context, path string, server int, p []byte, local int64) (int, error)
	// WriteLocal writes p to server's object at local offset and returns
	// once the server has the bytes.
	WriteLocal(ctx context.Context, path string, server int, p []byte, local int64) (int, error)
}

// ErrLocked is a lock another holder of the backend's file keeps (another
// forwarder over the same file system).
var ErrLocked = errors.New("backend: locked by another holder")

// Lock types for Locker, as fcntl's F_UNLCK, F_RDLCK and F_WRLCK.
const (
	LockUnlock uint8 = 0
	LockRead   uint8 = 1
	LockWrite  uint8 = 2
)

// Locker is implemented by backends that can lock ranges of their files,
// so that forwarders sharing one file system exclude each other as the
// clients of one forwarder do through its lock table. The forwarder calls
// it with the union of what its clients hold: one holder per key (the
// forwarder's handle of the file) and kind.
type Locker interface {
	// Lock sets typ on bytes [start, end] of path (end inclusive,
	// math.MaxInt64: to the end of the file) for holder key, replacing
	// what key held there; flock locks the whole file as flock(2) does,
	// apart from the byte-range locks. It never waits: a conflict with
	// another holder is ErrLocked.
	Lock(ctx context.Context, path string, key uint64, flock bool, typ uint8, start, end int64) error
	// Unlock drops every lock of key of that kind.
	Unlock(key uint64, flock bool)
}

// Allocator is implemented by backends that can reserve space for a
// range of a file (fallocate(2) mode 0: the size grows to cover it, the
// bytes read as zeros), so that later writes there cannot fail for space.
type Allocator interface {
	Allocate(ctx context.Context, path string, off, n int64) error
}
