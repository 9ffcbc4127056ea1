package posix

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/layout"
)

// Layouts is a layout kind: it tells, for each file of the export, which
// data server (OST, chunk server, ...) holds each byte range, and so which
// scheduler queue each piece of a request joins. The Backend asks it for
// every request; implementations cache what they read and are safe for
// concurrent use.
//
// Names are clean, slash-separated and relative to the export root
// (rootfs.Clean). Server indices are 0..Servers()-1 and are the file
// system's own numbering where it has one (a Lustre OST index), so that
// TWINS's per-server windows are the real servers' turns.
//
// Adding a kind takes one file, layout_KIND.go, with a Factory, and one
// line in kinds (below) naming it; Detect maps a file system type to the
// kind's name so that --layout auto picks it.
type Layouts interface {
	// Servers is the number of data servers, fixed for the Backend's life.
	Servers() int
	// Split appends to dst the pieces of bytes [off, off+n) of file name in
	// file order, a piece ending wherever the layout moves to another
	// server; adjacent bytes on one server form one piece.
	Split(dst []layout.Piece, name string, off, n int64) ([]layout.Piece, error)
	// Check reports whether bytes [off, off+n) of name may be moved by
	// server's queue: they lie on server, or the file's layout changed
	// since they were split (the bytes land in the one real file whatever
	// the queue; a request is never refused because a file system
	// instantiated or moved its layout under it). A wrong server for a
	// layout that has not changed is backend.ErrBadArgument.
	Check(name string, server int, off, n int64) error
	// Opened tells the kind that name was just described by the file
	// system (every open through the daemon stats the file): fi is that
	// description. A kind caching per-file layouts drops its entry when fi
	// shows another file (inode) or a change since (ctime), so that a file
	// re-striped between two opens is read again.
	Opened(name string, fi backend.FileInfo)
	// Forget drops what is cached about name and the names below it (it
	// was removed or renamed, or its layout settings changed); "" forgets
	// everything.
	Forget(name string)
}

// XattrFunc reads extended attribute attr of the file name (relative to
// the export root), as getxattr(2): the value, or an error wrapping
// unix.ENODATA when the file has no such attribute.
type XattrFunc func(name, attr string) ([]byte, error)

// Env is what a layout kind is built from.
type Env struct {
	Root   string        // the export root directory, as given to Open
	FS     *rootfs.FS    // the export, confined to Root
	Static layout.Layout // the static kind's layout (--stripe-size, --stripe-count)
	// Servers is the number of data servers a site configured (--servers);
	// 0 lets the kind find out from the file system.
	Servers int
	// Xattr reads a file's extended attributes; nil reads them from the
	// file itself (FileXattr).
	Xattr XattrFunc
	// XattrNames, for kinds that read a layout from an extended attribute,
	// overrides the attribute names tried in order (nil: the kind's own,
	// such as "lustre.lov" then "trusted.lov"); tests point it at a user.
	// attribute, the only kind tmpfs stores.
	XattrNames []string
	// MooseFS configures the moosefs kind (adaptio forward's --moosefs-*
	// flags); other kinds ignore it.
	MooseFS MooseFSOptions
	Logger  *slog.Logger // nil: discard
}

// Factory builds a layout kind for an export.
type Factory func(Env) (Layouts, error)

// Layout kind names for Options.Layout (--layout).
const (
	LayoutStatic = "static" // layout.Layout round robin, .adaptio-layout files: the default
	LayoutLustre = "lustre" // each file's lustre.lov extended attribute
	LayoutAuto   = "auto"   // Detect's choice for the export's file system
)

// kinds is the registry of layout kinds, built here in one place: a new
// kind adds its line.
func kinds() map[string]Factory {
	return map[string]Factory{
		LayoutStatic:  newStatic,
		LayoutLustre:  newLustre,
		LayoutMooseFS: newMooseFS,
	}
}

// Kinds lists the layout kinds Options.Layout accepts, sorted, with "auto".
func Kinds() []string {
	names := []string{LayoutAuto}
	for k := range kinds() {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// ErrUnknownLayout is returned for a layout kind no factory is registered
// for.
var ErrUnknownLayout = errors.New("posix: unknown layout kind")

// newLayouts builds the layout kind named kind ("" is static; "auto"
// detects the export's file system).
func newLayouts(kind string, env Env) (Layouts, string, error) {
	if kind == "" {
		kind = LayoutStatic
	}
	if kind == LayoutAuto {
		detected, why := Detect(env.Root)
		kind = detected
		if _, ok := kinds()[kind]; !ok {
			env.Logger.Info("posix: no layout kind for the detected file system: static layout", "detected", kind, "why", why)
			kind = LayoutStatic
		} else {
			env.Logger.Info("posix: layout detected", "kind", kind, "why", why)
		}
	}
	f, ok := kinds()[kind]
	if !ok {
		return nil, "", fmt.Errorf("%w %q (want one of %s)", ErrUnknownLayout, kind, strings.Join(Kinds(), ", "))
	}
	l, err := f(env)
	if err != nil {
		return nil, "", fmt.Errorf("posix: %s layout: %w", kind, err)
	}
	return l, kind, nil
}

// File-system magic numbers of statfs(2)'s f_type (linux/magic.h, Lustre's
// lustre_user.h).
const (
	lustreSuperMagic = 0x0BD00BD0
	fuseSuperMagic   = 0x65735546
)

// Detect names the layout kind for the file system holding dir: "lustre"
// for Lustre (statfs magic LL_SUPER_MAGIC), "moosefs" for a FUSE mount
// that the mount table shows as MooseFS (type fuse.mfs or fuse.moosefs, or
// type fuse with the source mfs#HOST:PORT, as Debian's mfsmount 3.0
// mounts), else "static". why says what it saw. A kind it names may not be
// built into this binary; the caller falls back to static then.
func Detect(dir string) (kind, why string) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return LayoutStatic, fmt.Sprintf("statfs %s: %v", dir, err)
	}
	var m mountEntry
	if uint32(st.Type) == fuseSuperMagic {
		if f, err := os.Open("/proc/self/mountinfo"); err == nil {
			abs, _ := filepath.EvalSymlinks(dir)
			if abs, err = filepath.Abs(abs); err == nil {
				m = mountOf(f, abs)
			}
			f.Close()
		}
	}
	return detectKind(int64(st.Type), m)
}

// mountEntry is the part of a mount table entry Detect reads.
type mountEntry struct {
	Type   string // file system type: "ext4", "fuse.mfs", "fuse"
	Source string // mount source: "/dev/vda", "mfs#10.0.0.1:9421"
}

// isMooseFS reports whether a FUSE mount is MooseFS's: its type names
// MooseFS, or it is plain "fuse" with mfsmount's source mfs#HOST:PORT.
func (m mountEntry) isMooseFS() bool {
	switch m.Type {
	case "fuse.mfs", "fuse.moosefs":
		return true
	case "fuse", "fuseblk":
		return strings.HasPrefix(m.Source, "mfs#")
	}
	return false
}

// detectKind is Detect's rule on a statfs f_type and, for FUSE, the mount
// table's entry of the mount.
func detectKind(magic int64, m mountEntry) (kind, why string) {
	switch {
	case uint32(magic) == lustreSuperMagic:
		return LayoutLustre, "statfs type 0x0bd00bd0 (Lustre)"
	case uint32(magic) == fuseSuperMagic && m.isMooseFS():
		return LayoutMooseFS, fmt.Sprintf("FUSE mount of type %q from %q (MooseFS)", m.Type, m.Source)
	case uint32(magic) == fuseSuperMagic:
		return LayoutStatic, fmt.Sprintf("FUSE mount of type %q from %q", m.Type, m.Source)
	}
	return LayoutStatic, fmt.Sprintf("statfs type %#x", uint32(magic))
}

// mountOf returns the entry of the mount holding the absolute path abs,
// from a /proc/self/mountinfo listing (proc(5)): the entry with the
// longest mount point that contains abs, the last one mounted among
// equals; escapes (\040 for a space, \043 for #) undone.
func mountOf(mountinfo io.Reader, abs string) mountEntry {
	var best mountEntry
	bestLen := -1
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 1 {
			continue
		}
		mp := unescapeMount(fields[4])
		if !within(abs, mp) || len(mp) < bestLen {
			continue
		}
		best, bestLen = mountEntry{Type: unescapeMount(tail[0])}, len(mp)
		if len(tail) > 1 {
			best.Source = unescapeMount(tail[1])
		}
	}
	return best
}

// within reports whether abs is mount point mp or lies below it.
func within(abs, mp string) bool {
	if mp == "/" || abs == mp {
		return true
	}
	return strings.HasPrefix(abs, mp+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, ok := octal(s[i+1 : i+4]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// FileXattr returns an XattrFunc reading attributes of the files under
// root, confined to it as the backend's I/O is (os.Root: no "..", no
// symbolic link leaving the root): each call opens the file read-only and
// reads the attribute from the descriptor. Close the returned root when
// done.
func FileXattr(root string) (XattrFunc, *os.Root, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, err
	}
	return func(name, attr string) ([]byte, error) {
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return fgetxattr(int(f.Fd()), attr)
	}, r, nil
}

// fgetxattr reads a whole attribute, growing the buffer if it changed size
// between the size query and the read.
func fgetxattr(fd int, attr string) ([]byte, error) {
	buf := make([]byte, 4096)
	for range 4 {
		n, err := unix.Fgetxattr(fd, attr, buf)
		if err == nil {
			return buf[:n], nil
		}
		if !errors.Is(err, unix.ERANGE) {
			return nil, &os.PathError{Op: "getxattr " + attr, Path: fmt.Sprintf("fd %d", fd), Err: err}
		}
		size, err := unix.Fgetxattr(fd, attr, nil)
		if err != nil {
			return nil, &os.PathError{Op: "getxattr " + attr, Path: fmt.Sprintf("fd %d", fd), Err: err}
		}
		buf = make([]byte, size+64)
	}
	return nil, fmt.Errorf("getxattr %s: the attribute keeps growing", attr)
}
