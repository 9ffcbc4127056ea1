package testproc

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const (
	echoEnv = "ADAPTIO_TESTPROC_ECHO"
	failEnv = "ADAPTIO_TESTPROC_FAIL"
)

func TestMain(m *testing.M) {
	// The echo service publishes its directory and, stopped, leaves a
	// file there; the failing one cannot start.
	Serve(echoEnv, func(dir string) (string, func(), error) {
		return "serving in " + dir, func() { _ = os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o644) }, nil
	})
	Serve(failEnv, func(string) (string, func(), error) { return "", nil, errors.New("no such service") })
	os.Exit(m.Run())
}

// The child publishes what its service returns, and is stopped, its
// service with it, when the test ends.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	t.Run("serve", func(t *testing.T) {
		if got, want := Start(t, echoEnv, dir, "the echo service"), "serving in "+dir; got != want {
			t.Errorf("Start = %q, want %q", got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "stopped")); err == nil {
			t.Error("the service stopped before the test ended")
		}
	})
	if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
		t.Errorf("the service was not stopped when the test ended: %v", err)
	}
}

// recorder is a testing.TB whose Fatal ends only the calling goroutine.
type recorder struct {
	testing.TB
	fatal    string
	cleanups []func()
}

func (r *recorder) Helper()           {}
func (r *recorder) Cleanup(f func())  { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Fatal(args ...any) { r.fatal = "fatal"; runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = format
	runtime.Goexit()
}

// A child whose service cannot start fails the test at once, not after
// the 20 s deadline.
func TestStartFails(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r, failEnv, t.TempDir(), "the failing service")
	}()
	<-done
	for _, f := range r.cleanups {
		f()
	}
	if !strings.Contains(r.fatal, "exited before it started") {
		t.Errorf("Start failed with %q, want the child's early exit", r.fatal)
	}
}
