package fwd

import (
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// A directory that is not empty is not "exists" to the client: Go's
// ENOTEMPTY also matches fs.ErrExist, and rmdir's error must keep its own
// code.
func TestCodeKeepsNotEmpty(t *testing.T) {
	for err, want := range map[error]fwdproto.Code{
		&os.PathError{Op: "rmdir", Path: "d", Err: syscall.ENOTEMPTY}: fwdproto.CodeNotEmpty,
		&os.PathError{Op: "mkdir", Path: "d", Err: syscall.EEXIST}:    fwdproto.CodeExist,
		fs.ErrNotExist: fwdproto.CodeNotExist,
	} {
		if got := code(err); got != want {
			t.Errorf("code(%v) = %v, want %v", err, got, want)
		}
	}
}
