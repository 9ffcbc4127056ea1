package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/internal/datadir"
)

// adaptio darshan summary on an IOR log: the job, the file's pattern as
// the command line implies, the HTML report; a file that is not a log is
// refused by name.
func TestDarshanSummaryCommand(t *testing.T) {
	log := datadir.Path("darshan") + "/ior-cmdline-labelled/dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan"
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
	log := datadir.Path("darshan") + "/ior-cmdline-labelled/dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan"
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

// adaptio darshan replay of a DXT log: the trace replayed access by
// access (how many accesses and ranks said), every setting run, the
// advice and the report; --from counters takes the counters' pattern
// instead; --from dxt on a log without a trace is refused.
func TestDarshanReplayDXTCommand(t *testing.T) {
	dxt := datadir.Path("darshan") + "/mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
	ior := datadir.Path("darshan") + "/ior-cmdline-labelled/dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan"
	for _, p := range []string{dxt, ior} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s: %v (the shared data set is not beside the repository)", p, err)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := newRootCmd()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"darshan", "replay"}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	html := filepath.Join(t.TempDir(), "r.html")
	out, err := run(dxt, "--repeat", "1", "--io-nodes", "2", "--no-think", "--html", html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replaying the DXT trace (DXT_POSIX) access by access: 320 accesses of 32 ranks", "2.0 GiB written, 2.0 GiB read",
		"no think time", "x 1, on 2 I/O nodes", "fifo", "8ms", "learning", "advice: this job: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("this job: ")) {
		t.Errorf("report: %v, want the advice and a plot", err)
	}
	out, err = run(dxt, "--repeat", "1", "--from", "counters", "--max-bytes", "64MiB")
	if err != nil || !strings.Contains(out, "replayed as: 32p-") || strings.Contains(out, "DXT") {
		t.Errorf("--from counters: %v\n%s", err, out)
	}
	if _, err := run(ior, "--from", "dxt"); err == nil || !strings.Contains(err.Error(), "no usable DXT trace") {
		t.Errorf("--from dxt without a trace: got %v", err)
	}
	// adaptio replay is the same command at the top level.
	top := newRootCmd()
	var topOut bytes.Buffer
	top.SetOut(&topOut)
	top.SetErr(&topOut)
	top.SetArgs([]string{"replay", dxt, "--repeat", "1", "--io-nodes", "2", "--no-think"})
	if err := top.Execute(); err != nil || !strings.Contains(topOut.String(), "320 accesses of 32 ranks") {
		t.Errorf("adaptio replay: %v\n%s", err, topOut.String())
	}
}

// adaptio darshan replay --real: the same trace through a running
// forwarder, every byte read checked; refused for a counters replay.
func TestDarshanReplayReal(t *testing.T) {
	log := datadir.Path("darshan") + "/pydarshan-samples/ior_hdf5_example.darshan"
	if _, err := os.Stat(log); err != nil {
		t.Skipf("%s: %v (the shared data set is not beside the repository)", log, err)
	}
	d := posixForwarder(t, fwd.Options{})
	run := func(args ...string) (string, error) {
		return runStdout(append([]string{"darshan", "replay", log, "--repeat", "1"}, args...)...)
	}
	out, err := run("--real", d.Addr(), "--real-time-scale", "0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"advice: this job: ", "real (" + d.Addr() + ", one repetition)", "59 requests of 4 processes", "4.0 MiB written, 4.0 MiB read and verified"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := run("--real", d.Addr(), "--from", "counters"); err == nil || !strings.Contains(err.Error(), "--real replays a DXT trace") {
		t.Errorf("--real with counters: %v", err)
	}
}
