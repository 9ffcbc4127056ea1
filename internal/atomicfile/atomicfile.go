// Package atomicfile writes a file so that readers see either its old
// content or the whole new one: the content goes to a temporary file in the
// same directory, which replaces the file by rename once written and
// closed. A failed write leaves the old file as it was.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
)

// Write calls fill with a buffered writer to a temporary file beside path,
// then renames it to path. On any error the temporary file is removed and
// path is untouched.
func Write(path string, fill func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
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
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
