package statelock

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSecondAcquireIsRefusedUntilRelease(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: %v, want ErrHeld", err)
	}
	if want := "process " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the holder (%s)", err, want)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	again.Release()
}

func TestAcquireCreatesTheDirectory(t *testing.T) {
	dir := t.TempDir() + "/a/b"
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("state directory not created: %v", err)
	}
}

// A directory inside one that another process holds is refused: the
// demo's Council keeps its JetStream store in a subfolder of its state
// directory, and a second Council there would share that store.
func TestDirectoryInsideAHeldOneIsRefused(t *testing.T) {
	if os.Getenv("STATELOCK_HOLD") != "" {
		l, err := Acquire(os.Getenv("STATELOCK_HOLD"))
		if err != nil {
			os.Exit(3)
		}
		defer l.Release()
		os.Stdout.WriteString("held\n")
		os.Stdin.Read(make([]byte, 1)) // until the parent closes stdin
		return
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDirectoryInsideAHeldOneIsRefused$")
	cmd.Env = append(os.Environ(), "STATELOCK_HOLD="+parent)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder did not start: %q %v", buf, err)
	}
	_, err := Acquire(filepath.Join(parent, "council"))
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "process "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Acquire inside a held directory: %v, want ErrHeld naming process %d", err, cmd.Process.Pid)
	}
	// The same process may lock a folder inside its own.
	own := t.TempDir()
	l, err := Acquire(own)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	inner, err := Acquire(filepath.Join(own, "council"))
	if err != nil {
		t.Fatalf("Acquire inside this process's own directory: %v", err)
	}
	inner.Release()
}
