// Command testsummary reads "go test -json" output on stdin and prints what
// a reader of a test run needs: one line per package, the output of every
// failed test (and of a package that failed to build), and at the end every
// skipped test with the reason it gave, so a test that skipped because a
// tool (fuse3, fio, chromium, MPI) is missing cannot pass unnoticed.
//
//	go test -json ./... | go run ./internal/cmd/testsummary
//
// It exits 1 if a test or package failed, 2 on unreadable input.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type key struct{ pkg, test string }

// summary accumulates a run.
type summary struct {
	out     map[key][]string // output lines of tests and packages
	skipped []key
	failed  []key
	pkgs    []string // package result lines, in order
}

func main() {
	s, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if !s.write(os.Stdout) {
		os.Exit(1)
	}
}

func read(r io.Reader) (*summary, error) {
	s := &summary{out: map[key][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			// Not an event (a build error printed by go itself): keep it.
			s.out[key{}] = append(s.out[key{}], string(b)+"\n")
			continue
		}
		var e event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			s.out[k] = append(s.out[k], e.Output)
		case "skip":
			if e.Test != "" {
				s.skipped = append(s.skipped, k)
			} else {
				s.pkgs = append(s.pkgs, fmt.Sprintf("?   \t%s\t[no test files]", e.Package))
			}
		case "fail":
			s.failed = append(s.failed, k)
			if e.Test == "" {
				s.pkgs = append(s.pkgs, fmt.Sprintf("FAIL\t%s\t%.3fs", e.Package, e.Elapsed))
			}
		case "pass":
			if e.Test == "" {
				s.pkgs = append(s.pkgs, fmt.Sprintf("ok  \t%s\t%.3fs", e.Package, e.Elapsed))
			}
		}
	}
	return s, sc.Err()
}

// reason is the message a skipped test printed: its output lines other than
// the "=== RUN" and "--- SKIP" markers, trimmed and joined.
func (s *summary) reason(k key) string {
	var parts []string
	for _, l := range s.out[k] {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}

// write prints the summary and reports whether the run passed.
func (s *summary) write(w io.Writer) bool {
	for _, l := range s.out[key{}] {
		fmt.Fprint(w, l)
	}
	for _, k := range s.failed {
		if k.test == "" && len(s.failedTestsOf(k.pkg)) > 0 {
			continue // its tests' output is printed below
		}
		fmt.Fprintf(w, "=== output of %s %s\n", k.pkg, k.test)
		for _, l := range s.out[k] {
			fmt.Fprint(w, l)
		}
	}
	for _, l := range s.pkgs {
		fmt.Fprintln(w, l)
	}
	if len(s.skipped) > 0 {
		sort.Slice(s.skipped, func(i, j int) bool {
			a, b := s.skipped[i], s.skipped[j]
			return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
		})
		fmt.Fprintf(w, "\n%d skipped test(s):\n", len(s.skipped))
		for _, k := range s.skipped {
			fmt.Fprintf(w, "  SKIP %s %s: %s\n", strings.TrimPrefix(k.pkg, "github.com/adaptio/adaptio/"), k.test, s.reason(k))
		}
	} else {
		fmt.Fprintln(w, "\nno test skipped")
	}
	if len(s.failed) > 0 {
		fmt.Fprintf(w, "\n%d failure(s)\n", len(s.failed))
		return false
	}
	return true
}

func (s *summary) failedTestsOf(pkg string) []key {
	var out []key
	for _, k := range s.failed {
		if k.pkg == pkg && k.test != "" {
			out = append(out, k)
		}
	}
	return out
}
