package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version describes this build: the module version (a tagged release, or
// "(devel)" for a build from a work tree), the VCS revision and time when
// the build recorded them, and the Go toolchain.
func version() string {
	v, rev, at, dirty := "(devel)", "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " " + rev
		if dirty {
			out += "+modified"
		}
		if at != "" {
			out += " (" + at + ")"
		}
	}
	return fmt.Sprintf("%s %s %s/%s", out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
