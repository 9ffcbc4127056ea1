package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliDocPath is the CLI reference generated from the command tree, relative
// to the repository root.
const cliDocPath = "docs/cli.md"

// newDocsCmd is the hidden "adaptio docs cli" command that writes the CLI
// reference, so the reference is made from the commands themselves and
// TestCLIReferenceCurrent can tell when it has drifted.
func newDocsCmd() *cobra.Command {
	docs := &cobra.Command{
		Use:    "docs",
		Short:  "Write the documentation generated from the commands",
		Hidden: true,
	}
	docs.AddCommand(&cobra.Command{
		Use:   "cli [FILE]",
		Short: "Write the CLI reference (docs/cli.md) from the command tree",
		Long: `Writes the reference of every command: its description, usage, examples and flags
with their defaults, as Markdown, to FILE (default: standard output). From the
repository root: adaptio docs cli docs/cli.md`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var b bytes.Buffer
			if err := writeCLIReference(&b, newRootCmd()); err != nil {
				return err
			}
			if len(args) == 0 {
				_, err := cmd.OutOrStdout().Write(b.Bytes())
				return err
			}
			return os.WriteFile(args[0], b.Bytes(), 0o644)
		},
	})
	return docs
}

// writeCLIReference writes the Markdown reference of root and every visible
// command under it, depth first in the order "adaptio --help" lists them.
// Defaults that depend on the machine (the number of CPUs) are written as
// words, so the reference is the same wherever it is generated.
func writeCLIReference(w io.Writer, root *cobra.Command) error {
	root.InitDefaultHelpCmd()
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)

	var b strings.Builder
	b.WriteString("# CLI reference\n\n")
	b.WriteString("Every command of `adaptio`, with its flags and their defaults. This file is generated from the\n")
	b.WriteString("commands (`go run ./cmd/adaptio docs cli docs/cli.md`); a test fails when it differs from them.\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", strings.Repeat("  ", depth(c)), c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	b.WriteString("\n")
	if g := root.PersistentFlags(); g.HasAvailableFlags() {
		b.WriteString("Global flags, accepted by every command:\n\n")
		writeFlags(&b, g)
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", c.CommandPath(), c.Short)
		if c.Runnable() {
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		}
		if long := strings.TrimSpace(c.Long); long != "" && long != c.Short {
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", long)
		}
		if ex := strings.TrimRight(c.Example, " \n"); ex != "" {
			fmt.Fprintf(&b, "Examples:\n\n```sh\n%s\n```\n\n", ex)
		}
		if subs := availableSubcommands(c); len(subs) > 0 {
			b.WriteString("Subcommands: ")
			for i, s := range subs {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "[%s](#%s)", s.Name(), anchor(s.CommandPath()))
			}
			b.WriteString(".\n\n")
		}
		if c.HasParent() && c.HasAvailableLocalFlags() {
			writeFlags(&b, c.LocalFlags())
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func depth(c *cobra.Command) int {
	d := 0
	for p := c.Parent(); p != nil; p = p.Parent() {
		d++
	}
	return d
}

func availableSubcommands(c *cobra.Command) []*cobra.Command {
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			subs = append(subs, s)
		}
	}
	return subs
}

// anchor is the GitHub heading anchor of "## path".
func anchor(path string) string {
	return strings.ReplaceAll(strings.ToLower(path), " ", "-")
}

// writeFlags writes the visible flags of fs as a table, sorted by name.
func writeFlags(b *strings.Builder, fs *pflag.FlagSet) {
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if t := f.Value.Type(); t != "bool" {
			name += " " + t
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, flagDefault(f), cell(f.Usage))
	})
	b.WriteString("\n")
}

// flagDefault is f's default as the reference writes it: machine-dependent
// worker counts as words, empty values as a dash.
func flagDefault(f *pflag.Flag) string {
	d := f.DefValue
	if f.Name == "workers" {
		switch d {
		case strconv.Itoa(runtime.NumCPU()), strconv.Itoa(runtime.GOMAXPROCS(0)):
			return "the number of CPUs"
		}
	}
	switch d {
	case "", "[]":
		return "-"
	}
	return "`" + cell(strings.ReplaceAll(d, "`", "'")) + "`"
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
