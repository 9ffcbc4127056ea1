package rootfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenLockFile opens the regular file at path, read-write where the
// daemon may write it (read-only otherwise), as a descriptor of its own:
// an open file description that holds OFD and flock locks apart from
// every other. The caller closes it, which drops its locks.
func (f *FS) OpenLockFile(path string) (*os.File, error) {
	name, err := Clean(path)
	if err != nil {
		return nil, err
	}
	file, err := f.root.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		file, err = f.root.OpenFile(name, os.O_RDONLY, 0)
	}
	return file, mapErr(path, err)
}

// Allocate reserves bytes [off, off+n) of the file at path with
// fallocate(2) mode 0: the size grows to cover them if it is smaller.
// A file system without fallocate answers EOPNOTSUPP.
func (f *FS) Allocate(path string, off, n int64) error {
	h, err := f.acquire(path)
	if err != nil {
		return err
	}
	defer f.release(h)
	for {
		err = unix.Fallocate(int(h.f.Fd()), 0, off, n)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: "fallocate", Path: path, Err: err}
	}
	return nil
}
