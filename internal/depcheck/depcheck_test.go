package depcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/adaptio/adaptio/"

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Imports    []string // direct imports
	Deps       []string // everything it links, transitively
}

// list runs `go list -json -deps` on the module's packages patterns and
// returns every package it printed (the patterns' and their
// dependencies'), by import path.
func list(t *testing.T, patterns ...string) map[string]pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	args := append([]string{"list", "-e", "-json=ImportPath,Imports,Deps", "-deps"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// rule: package from must not link (deps) or import directly (direct)
// any of banned; a banned entry ending in "/..." bans the tree below it.
type rule struct {
	from   string
	direct bool
	banned []string
	why    string
}

var rules = []rule{
	{from: "fwd", banned: []string{"tune", "tune/lustre", "tune/tunerun", "pfs", "dataserver", "disk", "demo/..."},
		why: "the daemon links the knob types (tune/knob) but no tuner, and the emulated PFS's client but no server"},
	{from: "fusemount", banned: []string{"tune", "tune/lustre", "tune/tunerun", "fwd", "github.com/nats-io/nats.go", "github.com/prometheus/client_golang/prometheus"},
		why: "the mount links the client library and the knob types, neither tuners nor the daemon, NATS or Prometheus"},
	{from: "fwd/client", banned: []string{"fwd", "github.com/nats-io/nats.go", "github.com/prometheus/client_golang/prometheus"},
		why: "the client library links neither the daemon nor NATS nor Prometheus"},
	{from: "sched", banned: []string{"backend", "backend/..."},
		why: "schedulers place pieces with package layout, not the backends"},
	{from: "sim", banned: []string{"backend", "backend/...", "dataset"},
		why: "the simulator links the cores, not the backends or the dataset files"},
	{from: "sim", direct: true, banned: []string{"os", "sync"},
		why: "the simulator is one deterministic loop: no files, no locks (sim/experiment writes the grid)"},
	{from: "eval", banned: []string{"demo", "demo/..."},
		why: "offline evaluations share label accuracy through package labels, not the demo"},
	{from: "labels", banned: []string{mod + "..."},
		why: "label accuracy is a leaf"},
	{from: "layout", banned: []string{mod + "..."},
		why: "striping is a leaf"},
	{from: "tune/knob", banned: []string{mod + "..."},
		why: "the knob types are a leaf"},
	{from: "tune", banned: []string{"tune/lustre", "tune/tunerun", "github.com/prometheus/client_golang/prometheus"},
		why: "the tuners are pure cores; their shells live in tune/tunerun and tune/lustre"},
	{from: "tune", direct: true, banned: []string{"os", "io/fs", "path/filepath", "context", "log/slog"},
		why: "the tuners take time and observations as arguments: no files, no contexts, no logging"},
	{from: "pfs/pfsclient", banned: []string{"pfs", "dataserver", "disk", "github.com/prometheus/client_golang/prometheus"},
		why: "the emulated PFS's client links no server, disk model or server metrics"},
	{from: "council", banned: []string{"github.com/nats-io/nats.go", "github.com/nats-io/nats-server/v2/server", "github.com/prometheus/client_golang/prometheus", "dataset"},
		why: "the Council core is pure: the service wraps it"},
	{from: "council", direct: true, banned: []string{"os", "net", "sync"},
		why: "the Council core takes time and randomness as arguments: no files, sockets or locks"},
}

// full is the import path of a rule's package name: the module's own are
// written without the module prefix.
func full(p string) string {
	if strings.HasPrefix(p, mod) || isStd(p) || strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
		return p
	}
	return mod + p
}

// std lists the standard-library names rules use bare.
var std = []string{"os", "io/fs", "path/filepath", "context", "log/slog", "sync", "net"}

func isStd(p string) bool { return slices.Contains(std, p) }

// matches reports whether import path p is banned by b (b full; a
// trailing "/..." matches the tree below, not the root itself).
func matches(p, b string) bool {
	if root, ok := strings.CutSuffix(b, "/..."); ok {
		return strings.HasPrefix(p, root+"/")
	}
	return p == b
}

func TestDependencyRules(t *testing.T) {
	var patterns []string
	for _, r := range rules {
		if p := "./" + r.from; !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	pkgs := list(t, patterns...)
	for _, r := range rules {
		p, ok := pkgs[full(r.from)]
		if !ok {
			t.Errorf("%s: not listed (moved or renamed? update the rules)", r.from)
			continue
		}
		have, kind := p.Deps, "links"
		if r.direct {
			have, kind = p.Imports, "imports"
		}
		for _, b := range r.banned {
			for _, d := range have {
				if matches(d, full(b)) {
					t.Errorf("%s %s %s: %s", r.from, kind, d, r.why)
				}
			}
		}
	}
}

// The matcher and the rules' names: a rule that names a package that does
// not exist, or a pattern that matches nothing it should, would check
// nothing.
func TestRulesMatch(t *testing.T) {
	for _, tt := range []struct {
		p, b string
		want bool
	}{
		{mod + "tune", full("tune"), true},
		{mod + "tune/knob", full("tune"), false},
		{mod + "demo/record", full("demo/..."), true},
		{mod + "demo", full("demo/..."), false},
		{mod + "rw", full(mod + "..."), true},
		{"os", full("os"), true},
		{"github.com/nats-io/nats.go", full("github.com/nats-io/nats.go"), true},
	} {
		if got := matches(tt.p, tt.b); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.p, tt.b, got, tt.want)
		}
	}
	pkgs := list(t, "./...")
	for _, r := range rules {
		for _, b := range r.banned {
			fb := full(b)
			if strings.HasSuffix(fb, "/...") || isStd(b) || !strings.HasPrefix(fb, mod) {
				continue
			}
			if _, ok := pkgs[fb]; !ok {
				t.Errorf("rule for %s bans %s, which is no package of the module", r.from, b)
			}
		}
	}
}
