// Package datadir finds the shared data set that some tests and evaluation
// commands read: FORGE results measured on MareNostrum 4 and Darshan logs from
// public repositories (scripts/fetch-data downloads them; docs/data.md).
//
// The data set is not part of the repository. Its directory is $ADAPTIO_DATA
// when that is set, else shared/data or ../shared/data found from the working
// directory or one of its parents (../shared/data beside the repository):
//
//	logs := datadir.Path("darshan", "release_logs")
//	if _, err := os.Stat(logs); err != nil {
//		t.Skipf("%v (scripts/fetch-data downloads the data set)", err)
//	}
package datadir

import (
	"os"
	"path/filepath"
)

// Env names the environment variable that, when set, is the data directory.
const Env = "ADAPTIO_DATA"

// Dir returns the data directory and whether it exists: $ADAPTIO_DATA when
// set (ok reports whether that directory exists), else the first shared/data
// or ../shared/data directory found from the working directory upwards. When
// none is found it returns ../shared/data relative to the working directory,
// with ok false.
func Dir() (dir string, ok bool) {
	if d := os.Getenv(Env); d != "" {
		return d, isDir(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data"), false
	}
	for d := wd; ; {
		for _, rel := range []string{"shared/data", "../shared/data"} {
			if p := filepath.Join(d, rel); isDir(p) {
				return p, true
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return filepath.Join("..", "shared", "data"), false
		}
		d = parent
	}
}

// Path is elem joined under Dir. The path may not exist: callers that need
// the file skip or fail with a message naming it.
func Path(elem ...string) string {
	d, _ := Dir()
	return filepath.Join(append([]string{d}, elem...)...)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
