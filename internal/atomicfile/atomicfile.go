// Package atomicfile writes a file so that readers see either its old
// content or the whole new one, also after a crash or a power loss: the
// content goes to a temporary file in the same directory, which is flushed
// to stable storage (fsync) before it replaces the file by rename, and the
// directory is flushed after the rename so that the new name survives too.
// A failed write leaves the old file as it was.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultMode is the permission of a file Write creates; a file it replaces
// keeps its own.
const DefaultMode fs.FileMode = 0o644

// Hooks for fault injection in tests: the flush of the temporary file
// before the rename, and of the directory after it.
var (
	syncFile = (*os.File).Sync
	syncDir  = func(dir string) error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
)

// Write calls fill with a buffered writer to a temporary file beside path,
// flushes it to stable storage, renames it to path and flushes the
// directory. The file keeps the permission bits of the file it replaces
// (DefaultMode if there was none). On an error before the rename the
// temporary file is removed and path is untouched; an error flushing the
// directory after the rename leaves path with the new content, whose name
// may not survive a crash.
func Write(path string, fill func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	mode := DefaultMode
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = fill(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = syncFile(f); err != nil {
		return fmt.Errorf("atomicfile: flushing %s: %w", f.Name(), err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("atomicfile: %s written, but flushing its directory failed (the new name may not survive a crash): %w", path, err)
	}
	return nil
}

// CheckCreate reports whether Write could create path: its folder exists
// and takes a new file (a probe file, removed at once). Commands call it
// before long work whose result goes to path, so that a bad path fails at
// once rather than after the work.
func CheckCreate(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".adaptio-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
