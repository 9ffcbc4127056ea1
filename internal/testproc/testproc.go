// Package testproc runs a service of a test binary (a Council, a
// forwarding daemon) in a child process of its own, as it is deployed, so
// that it shares no Go scheduler with the benchmark that drives it. The
// child is the test binary itself, started with an environment variable
// that TestMain hands to Serve:
//
//	const daemonEnv = "ADAPTIO_..._DAEMON"
//
//	func TestMain(m *testing.M) {
//		testproc.Serve(daemonEnv, startDaemon) // returns at once unless this is the child
//		os.Exit(m.Run())
//	}
//
//	addr := testproc.Start(b, daemonEnv, dir, "the daemon") // in the benchmark
package testproc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/internal/atomicfile"
)

// published is the file, in the directory Start is given, where the child
// writes what its service publishes (an address, a URL).
const published = "published"

// Serve, in a child started by Start with env set, starts the service in
// the directory Start was given, publishes the string start returns (its
// address, say), serves until SIGTERM or SIGINT, stops it and exits the
// process. Without env in the environment it returns at once.
func Serve(env string, start func(dir string) (publish string, stop func(), err error)) {
	file := os.Getenv(env)
	if file == "" {
		return
	}
	os.Exit(serve(file, start))
}

func serve(file string, start func(dir string) (string, func(), error)) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "test service (%s): %v\n", file, err)
		return 1
	}
	// Watch for the signal before publishing: the parent may stop the
	// child as soon as it has read the file.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	value, stop, err := start(filepath.Dir(file))
	if err != nil {
		return fail(err)
	}
	defer stop()
	// Whole or not at all: the parent polls for the file.
	if err := atomicfile.Write(file, func(w io.Writer) error { _, err := io.WriteString(w, value); return err }); err != nil {
		return fail(err)
	}
	<-sig
	return 0
}

// Start runs this test binary as a child serving what TestMain's Serve
// call for env starts, in dir, and returns what the service published; it
// fails tb, naming what, if the child exits first or publishes nothing
// within 20 s. The child is stopped (SIGTERM) and waited for when tb ends.
func Start(tb testing.TB, env, dir, what string) string {
	tb.Helper()
	return StartProc(tb, env, dir, what).Published
}

// Proc is a service running in a child process (StartProc).
type Proc struct {
	Published string // what the service published
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Kill ends the child at once with SIGKILL, as a crash would (no shutdown
// code runs), and waits for it to exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// StartProc is Start returning the child, so that a test can kill it; a
// later StartProc in the same dir starts a new child there (the previous
// one's published value is removed first).
func StartProc(tb testing.TB, env, dir, what string) *Proc {
	tb.Helper()
	file := filepath.Join(dir, published)
	_ = os.Remove(file)
	cmd := exec.Command(os.Args[0], "-test.run", "^$", "-test.bench", "^$")
	cmd.Env = append(os.Environ(), env+"="+file)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(file); err == nil {
			if v := strings.TrimSpace(string(b)); v != "" {
				return &Proc{Published: v, cmd: cmd, exited: exited}
			}
		}
		select {
		case <-exited:
			tb.Fatalf("%s in a child process exited before it started: %v", what, waitErr)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after 20s waiting for %s in a child process to start", what)
		}
	}
}
