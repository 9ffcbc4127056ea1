package demo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/adaptio/adaptio/internal/statelock"
)

// earlierOutputs writes the files an earlier run left and returns a check
// that they are byte for byte as written.
func earlierOutputs(t *testing.T, stateDir, report string) func() {
	t.Helper()
	files := map[string]string{
		filepath.Join(stateDir, SimDecisionLog): `{"t":1}` + "\n",
		filepath.Join(stateDir, SimStateFile):   `{"learned":true}`,
		report:                                  "<html>earlier report</html>",
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		for p, want := range files {
			got, err := os.ReadFile(p)
			if err != nil || string(got) != want {
				t.Errorf("%s: %q (%v), want the earlier run's %q untouched", filepath.Base(p), got, err, want)
			}
		}
	}
}

func TestInvalidOptionTouchesNoOutput(t *testing.T) {
	dir := t.TempDir()
	cfg := smallSim(t, dir)
	cfg.Policy = "nosuch"
	unchanged := earlierOutputs(t, dir, cfg.Report)
	_, err := Run(context.Background(), cfg)
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("Run with an unknown policy: %v, want ErrBadConfig", err)
	}
	unchanged()
}

func TestStateDirectoryHeldByAnotherRun(t *testing.T) {
	dir := t.TempDir()
	cfg := smallSim(t, dir)
	unchanged := earlierOutputs(t, dir, cfg.Report)
	held, err := statelock.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, err = Run(context.Background(), cfg)
	if !errors.Is(err, statelock.ErrHeld) {
		t.Fatalf("Run on a held state directory: %v, want statelock.ErrHeld", err)
	}
	unchanged()
}
