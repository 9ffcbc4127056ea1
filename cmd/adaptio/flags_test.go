package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council"
)

func TestZeroIsRefusedWhereItWouldMeanDefault(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--processes", "0"}, "--processes 0"},
		{[]string{"demo", "--iterations", "-1"}, "--iterations -1"},
		{[]string{"demo", "--interval", "1ms"}, "interval 1ms"},
		{[]string{"forward", "--backend", "posix:" + t.TempDir(), "--interval", "0s"}, "--interval 0s"},
		{[]string{"sim", "run", "--servers", "0"}, "--servers 0"},
		{[]string{"sim", "grid", "--out", t.TempDir(), "--clients", "0"}, "--clients 0"},
		{[]string{"pfs", "--dir", t.TempDir(), "--servers", "0"}, "--servers 0"},
		{[]string{"eval", "forge", "--data", "flags_test.go", "--steps", "0"}, "--steps 0"},
		{[]string{"eval", "forge", "--data", "flags_test.go", "--neighbors", "0"}, "--neighbors 0"},
		{[]string{"sim", "run", "--window", "0s"}, "--window 0s"},
		{[]string{"sim", "run", "--write-read", "-1"}, "--write-read -1"},
		{[]string{"council", "--replicas", "0"}, "--replicas 0"},
		{[]string{"darshan", "summary", "--files", "-1", "no-such.darshan"}, "--files -1"},
		{[]string{"eval", "select", "--repeat", "-1", "--out", t.TempDir()}, "--repeat -1"},
		{[]string{"detect", "train", "--data", "synthetic-small", "--out", filepath.Join(t.TempDir(), "no", "such", "m.json")}, "--out"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := newRootCmd()
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(strings.Builder))
			cmd.SetErr(new(strings.Builder))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("adaptio %v: %v, want an error naming %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestCPUProfileFlag(t *testing.T) {
	run := func(args ...string) error {
		cmd := newRootCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(args)
		return cmd.Execute()
	}
	path := filepath.Join(t.TempDir(), "cpu.prof")
	if err := run("--cpuprofile", path, "sched", "list"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile not written: %v", err)
	}
	err := run("--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof"), "sched", "list")
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("unwritable profile path: %v, want an error naming --cpuprofile", err)
	}
}

// A lone forwarder's TWINS moves on from an empty server's queue unless told
// otherwise; with several I/O nodes it waits, as the reference.
func TestForwardSkipEmptyDefault(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--nodes", "4"}, false},
		{[]string{"--skip-empty=false"}, false},
		{[]string{"--nodes", "4", "--skip-empty"}, true},
	} {
		cmd := newForwardCmd()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		set, _ := cmd.Flags().GetBool("skip-empty")
		nodes, _ := cmd.Flags().GetInt("nodes")
		if got := skipEmpty(cmd.Flags(), set, nodes); got != tt.want {
			t.Errorf("forward %v: skip-empty %v, want %v", tt.args, got, tt.want)
		}
	}
}

// --credit takes phase (the default), round or node; --node-credit and the
// deprecated --round-credit are its shorthands.
func TestCreditFlags(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		maxPull time.Duration
	}{
		{nil, "phase", council.DefaultMaxPull},
		{[]string{"--credit", "round"}, "round", council.DefaultMaxPull},
		{[]string{"--node-credit"}, "node", council.DefaultMaxPull},
		{[]string{"--round-credit"}, "round", council.DefaultMaxPull},
		{[]string{"--node-credit=false"}, "phase", council.DefaultMaxPull},
		{[]string{"--max-pull", "3s"}, "phase", 3 * time.Second},
	} {
		cmd := &cobra.Command{}
		var credit string
		var maxPull time.Duration
		addCreditFlags(cmd.Flags(), &credit, &maxPull, council.DefaultMaxPull, "")
		addRoundCreditFlag(cmd.Flags(), &credit)
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if credit != tt.want || maxPull != tt.maxPull {
			t.Errorf("%v: credit %q, max pull %v; want %q, %v", tt.args, credit, maxPull, tt.want, tt.maxPull)
		}
	}
}
