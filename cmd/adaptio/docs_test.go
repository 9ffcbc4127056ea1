package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestCLIReferenceCurrent regenerates docs/cli.md from the command tree in
// memory and fails when the committed file differs, so a changed flag, default
// or help text cannot leave the reference behind.
func TestCLIReferenceCurrent(t *testing.T) {
	var got bytes.Buffer
	if err := writeCLIReference(&got, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", cliDocPath)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `go run ./cmd/adaptio docs cli %s` from the repository root", err, cliDocPath)
	}
	if bytes.Equal(got.Bytes(), want) {
		return
	}
	g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s is out of date with the commands: run `go run ./cmd/adaptio docs cli %s` from the repository root and commit it.\nfirst difference, line %d:\n  file:     %q\n  commands: %q", cliDocPath, cliDocPath, i+1, wl, gl)
		}
	}
}

// TestCLIReferenceComplete checks the generator itself: every visible command
// has its section and every visible flag its row, and hidden ones stay out.
func TestCLIReferenceComplete(t *testing.T) {
	var b bytes.Buffer
	root := newRootCmd()
	if err := writeCLIReference(&b, root); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	if strings.Contains(doc, "## adaptio docs") {
		t.Error("the hidden docs command is in the reference")
	}
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		heading := "\n## " + c.CommandPath() + "\n"
		i := strings.Index(doc, heading)
		if i < 0 {
			t.Errorf("no section %q", strings.TrimSpace(heading))
			return
		}
		section := doc[i+len(heading):]
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		if c.HasParent() {
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				row := "| `--" + f.Name
				if f.Shorthand != "" {
					row = "| `-" + f.Shorthand + ", --" + f.Name
				}
				if has := strings.Contains(section, row); has == f.Hidden {
					t.Errorf("%s: flag --%s hidden=%v, in the reference=%v", c.CommandPath(), f.Name, f.Hidden, has)
				}
			})
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				check(sub)
			}
		}
	}
	check(root)
}

// TestFlagDefaultMachineIndependent: worker counts that follow the machine
// are written as words; other defaults as they are.
func TestFlagDefaultMachineIndependent(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("workers", numCPUForTest(), "")
	fs.Int("servers", numCPUForTest(), "")
	fs.String("out", "", "")
	fs.String("pipe", "a|b", "")
	for _, tt := range []struct{ flag, want string }{
		{"workers", "the number of CPUs"},
		{"out", "-"},
		{"pipe", "`a\\|b`"},
	} {
		if got := flagDefault(fs.Lookup(tt.flag)); got != tt.want {
			t.Errorf("--%s: got %q, want %q", tt.flag, got, tt.want)
		}
	}
	if got := flagDefault(fs.Lookup("servers")); got == "the number of CPUs" {
		t.Errorf("--servers: a flag not named workers was rewritten: %q", got)
	}
}

func numCPUForTest() int { return runtime.NumCPU() }
