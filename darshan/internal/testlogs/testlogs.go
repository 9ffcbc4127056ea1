// Package testlogs opens the real Darshan logs of the shared data set
// (../shared/data/darshan from the repository root, see its README) for
// the tests of the darshan packages, which skip when the set is absent.
package testlogs

import (
	"os"
	"testing"

	"github.com/adaptio/adaptio/darshan"
)

// Open opens the log at path, closed when the test ends, or skips the test
// when the file is not there (the shared data set is not beside the
// repository).
func Open(t testing.TB, path string) *darshan.Log {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%v (the shared data set is not beside the repository)", err)
	}
	l, c, err := darshan.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return l
}
