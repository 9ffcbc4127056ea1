package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
)

// "adaptio bench --compare" runs the workload through a forwarder and
// directly, alternately, and prints a ratio per round and their medians;
// conflicting flags are refused before anything runs.
func TestBenchCompare(t *testing.T) {
	d := posixForwarder(t, fwd.Options{Scheduler: "fifo"})
	run := func(args ...string) (string, error) { return runStdout(append([]string{"bench"}, args...)...) }
	out, err := run("--forwarder", d.Addr(), "--compare", t.TempDir(), "--rounds", "2", "--procs", "2",
		"--layout", "fpp", "--request-size", "4KiB", "--total", "64KiB", "--conns", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rounds     : 2", "write        2", "read         2", "write   fwd/direct median", "every byte read back matched, in every run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--compare", t.TempDir(), "--direct", t.TempDir()}, "drop one of them"},
		{[]string{"--rounds", "2"}, "--rounds applies to --compare"},
		{[]string{"--compare", t.TempDir(), "--rounds", "0"}, "--rounds 0"},
		{[]string{"--direct", t.TempDir(), "--forwarder-metrics", "http://127.0.0.1:1/metrics"}, "--forwarder-metrics applies to the forwarder"},
		{[]string{"--forwarder", d.Addr(), "--forwarder-metrics", "http://127.0.0.1:1/metrics"}, "connection refused (--forwarder-metrics)"},
	} {
		if _, err := run(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("bench %v: %v, want an error about %q", tt.args, err, tt.want)
		}
	}
}

// "adaptio bench --read-only" reads, and checks, the files a run with
// --keep left, --read-passes times, without writing them again; a missing
// file or a bad flag is refused.
func TestBenchReadOnly(t *testing.T) {
	d := posixForwarder(t, fwd.Options{Scheduler: "fifo"})
	run := func(args ...string) (string, error) {
		return runStdout(append([]string{"bench", "--forwarder", d.Addr(), "--procs", "2", "--layout", "fpp", "--request-size", "4KiB", "--total", "64KiB", "--seed", "7"}, args...)...)
	}
	if _, err := run("--read-only"); err == nil {
		t.Fatal("--read-only before any --keep run: no error")
	}
	if _, err := run("--op", "write", "--no-verify", "--keep"); err != nil {
		t.Fatal(err)
	}
	out, err := run("--read-only", "--read-passes", "3")
	if err != nil {
		t.Fatal(err)
	}
	// 64 KiB read 3 times: 0.19 MiB, and no write phase.
	if !strings.Contains(out, "0.19") || strings.Contains(out, "\nwrite ") || !strings.Contains(out, "every byte read back matched") {
		t.Errorf("read-only output:\n%s", out)
	}
	if _, err := run("--read-only", "--seed", "8"); err == nil {
		t.Error("--read-only with another seed than the files': no verification error")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--read-passes", "0"}, "--read-passes 0"},
		{[]string{"--read-only", "--op", "write"}, "--read-only runs the read phase alone"},
		{[]string{"--read-only", "--compare", t.TempDir()}, "--read-only runs the read phase alone"},
	} {
		if _, err := run(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("bench %v: %v, want an error about %q", tt.args, err, tt.want)
		}
	}
}

// posixForwarder starts a forwarder with opts over a POSIX backend of
// 16 KiB stripes on 4 data servers in a temporary directory, listening on
// a Unix socket; both end with the test.
func posixForwarder(t *testing.T, opts fwd.Options) *fwd.Daemon {
	t.Helper()
	be, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 16 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	opts.Backend = be
	opts.Listen = []string{"unix:" + t.TempDir() + "/s"}
	return fwdtest.Start(t, opts)
}

// runStdout runs the adaptio command line args and returns what it wrote
// to its standard output (its standard error, progress and logs, apart).
func runStdout(args ...string) (string, error) {
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}
