package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The real stack forwards to a directory through posix backends (one per
// I/O node, here the static layout over 4 queues) instead of the emulated
// PFS: the phases run, every byte read back is checked by the clients,
// and the shared file, made in DIR/demo, is removed at the iteration's end.
func TestRealDemoOnPosixBackend(t *testing.T) {
	dir := t.TempDir()
	const phase = 8 << 20
	cfg := Config{Iterations: 1, Processes: 8, PhaseBytes: phase, StateDir: t.TempDir(), Compare: -1, Report: "-", Seed: 3,
		Backend: dir, Layout: "static"}
	rec, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Iterations) != 2 {
		t.Fatalf("%d phases completed, want 2 (shared strided write and read)", len(rec.Iterations))
	}
	if n := strings.Join(rec.Meta.Notes, " "); !strings.Contains(n, dir) || !strings.Contains(n, "static layout, 4 data servers") {
		t.Errorf("the notes do not name the backend: %q", n)
	}
	for _, it := range rec.Iterations {
		if want := int64(phase); (it.Phase == "SS write" && it.Bytes != want) || it.Seconds <= 0 {
			t.Errorf("%s: %d bytes in %v s", it.Phase, it.Bytes, it.Seconds)
		}
	}
	// The shared file was made in DIR/demo through the daemons, read back
	// and checked, and removed at the iteration's end.
	left, err := os.ReadDir(filepath.Join(dir, "demo"))
	if err != nil || len(left) != 0 {
		t.Errorf("DIR/demo after the run: %v, %v; want the folder, empty", left, err)
	}
}

// A posix backend is refused with the simulator, and with the
// simulator's static-window comparison (which models the emulated PFS).
func TestPosixBackendNeedsRealComparison(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Sim: true, Backend: t.TempDir(), Report: "-"}, "real stack only"},
		{Config{Backend: t.TempDir(), Compare: 2, Report: "-", StateDir: t.TempDir()}, "--compare-real"},
	} {
		_, err := Run(context.Background(), tt.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v): %v, want ErrBadConfig about %q", tt.cfg, err, tt.want)
		}
	}
}
