package client

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// Attr is an attribute change for Setattr; nil fields stay as they are.
type Attr = backend.Attr

// FSInfo is the usage of the file system behind the daemon.
type FSInfo = fwdproto.FS

// Rename moves oldPath to newPath, replacing newPath as rename(2) does;
// handles open on the file (or below the directory) follow it, on the
// daemon and in this Client (a File reopened after a reconnect is reopened
// by its new name). On a backend without renames it fails with a
// not-supported error.
func (c *Client) Rename(oldPath, newPath string) error {
	if _, err := c.do(&fwdproto.Msg{Op: fwdproto.OpRename, Path: oldPath, Path2: newPath}, nil, nil); err != nil {
		return fmt.Errorf("rename %s to %s: %w", oldPath, newPath, err)
	}
	c.renamed(oldPath, newPath)
	return nil
}

// renamed gives the open files at from, or below it, their names under to.
func (c *Client) renamed(from, to string) {
	from, to = cleanName(from), cleanName(to)
	c.filesMu.Lock()
	defer c.filesMu.Unlock()
	for f := range c.files {
		f.mu.Lock()
		switch p := cleanName(f.path); {
		case p == from:
			f.path = to
		case strings.HasPrefix(p, from+"/"):
			f.path = to + p[len(from):]
		}
		f.mu.Unlock()
	}
}

// cleanName is a path as the daemon resolves it in the export ("" and
// "/" name the root, as ".").
func cleanName(p string) string { return path.Clean("/" + p)[1:] }

// Link makes newPath a hard link to oldPath.
func (c *Client) Link(oldPath, newPath string) error {
	if _, err := c.do(&fwdproto.Msg{Op: fwdproto.OpLink, Path: oldPath, Path2: newPath}, nil, nil); err != nil {
		return fmt.Errorf("link %s to %s: %w", newPath, oldPath, err)
	}
	return nil
}

// Symlink makes path a symbolic link to target, which must be relative
// and stay inside the export.
func (c *Client) Symlink(target, path string) error {
	if _, err := c.do(&fwdproto.Msg{Op: fwdproto.OpSymlink, Path: path, Path2: target}, nil, nil); err != nil {
		return fmt.Errorf("symlink %s -> %s: %w", path, target, err)
	}
	return nil
}

// Mknod creates a FIFO (fs.ModeNamedPipe), a socket's file
// (fs.ModeSocket), a block (fs.ModeDevice) or character device
// (fs.ModeDevice|fs.ModeCharDevice) numbered dev, or an empty regular file
// (no type bits) at path, with mode's permission bits, as mknod(2). On a
// backend without namespace operations it fails with a not-supported
// error; a device node the backend's file system or the daemon's
// privileges refuse fails with a permission error.
func (c *Client) Mknod(path string, mode fs.FileMode, dev uint64) error {
	m := &fwdproto.Msg{Op: fwdproto.OpMknod, Path: path, Mode: fwdproto.UnixType(mode) | fwdproto.UnixMode(mode), Rdev: dev}
	if _, err := c.do(m, nil, nil); err != nil {
		return fmt.Errorf("mknod %s: %w", path, err)
	}
	return nil
}

// Readlink returns the target of the symbolic link path.
func (c *Client) Readlink(path string) (string, error) {
	cl, err := c.do(&fwdproto.Msg{Op: fwdproto.OpReadlink, Path: path}, nil, nil)
	if err != nil {
		return "", fmt.Errorf("readlink %s: %w", path, err)
	}
	return cl.resp.Path2, nil
}

// Setattr changes path's mode, owner or times (the non-nil fields of a).
func (c *Client) Setattr(path string, a Attr) error {
	m := &fwdproto.Msg{Op: fwdproto.OpSetattr, Path: path}
	if a.Mode != nil {
		m.Flags |= fwdproto.SetMode
		m.Mode = fwdproto.UnixMode(*a.Mode)
	}
	if a.UID != nil {
		m.Flags |= fwdproto.SetUID
		m.UID = *a.UID
	}
	if a.GID != nil {
		m.Flags |= fwdproto.SetGID
		m.GID = *a.GID
	}
	if a.Atime != nil {
		m.Flags |= fwdproto.SetAtime
		m.Atime = a.Atime.UnixNano()
	}
	if a.Mtime != nil {
		m.Flags |= fwdproto.SetMtime
		m.Mtime = a.Mtime.UnixNano()
	}
	if _, err := c.do(m, nil, nil); err != nil {
		return fmt.Errorf("setattr %s: %w", path, err)
	}
	return nil
}

// Statfs reports the usage of the file system behind the daemon.
func (c *Client) Statfs() (FSInfo, error) {
	cl, err := c.do(&fwdproto.Msg{Op: fwdproto.OpStatfs, Path: "."}, nil, nil)
	if err != nil {
		return FSInfo{}, fmt.Errorf("statfs: %w", err)
	}
	return cl.resp.FS, nil
}
