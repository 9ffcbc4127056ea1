package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// adaptio darshan summary on an IOR log: the job, the file's pattern as
// the command line implies, the HTML report; a file that is not a log is
// refused by name.
func TestDarshanSummaryCommand(t *testing.T) {
	log := "../../../shared/data/darshan/ior-cmdline-labelled/dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan"
	if _, err := os.Stat(log); err != nil {
		t.Skipf("%s: %v (the shared data set is not beside the repository)", log, err)
	}
	html := filepath.Join(t.TempDir(), "s.html")
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"darshan", "summary", log, "--html", html})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"256 processes", "-s 1024", "SS      -        256.0 MiB", "no DXT trace"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("testfile.66186370.1k")) {
		t.Errorf("report: %v", err)
	}
	notALog := filepath.Join(t.TempDir(), "x.darshan")
	os.WriteFile(notALog, []byte("hello, world, not a log"), 0o644)
	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"darshan", "summary", notALog})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "x.darshan") || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("not a log: %v, want an error naming the file", err)
	}
}

// adaptio darshan replay: the job as the simulator's workload, every
// setting run, and advice naming the best.
func TestDarshanReplayCommand(t *testing.T) {
	log := "../../../shared/data/darshan/ior-cmdline-labelled/dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan"
	if _, err := os.Stat(log); err != nil {
		t.Skipf("%s: %v (the shared data set is not beside the repository)", log, err)
	}
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"darshan", "replay", log, "--repeat", "1", "--max-bytes", "8MiB", "--max-processes", "64"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replayed as: 64p-shared-strided-write-1k-8m", "fifo", "8ms", "advice: this job: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
