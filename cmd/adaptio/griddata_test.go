package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/sim/experiment"
)

// Without --data the evaluations use the simulator's grid from the user's
// cache directory (generated there once); with --data, that directory.
func TestGridDirDefaultsToTheCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	var msg strings.Builder
	if got, err := gridDir(context.Background(), "given", false, &msg); err != nil || got != "given" || msg.Len() != 0 {
		t.Fatalf("explicit --data: %q, %v, %q", got, err, msg.String())
	}
	want := filepath.Join(cache, "adaptio", "validation")
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(want, experiment.ReadyFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := gridDir(context.Background(), "", true, &msg)
	if err != nil || got != want || !strings.Contains(msg.String(), "using the simulator's validation dataset in "+want) {
		t.Fatalf("no --data, dataset ready: %q, %v, %q; want %s", got, err, msg.String(), want)
	}
	// A cancelled first use generates nothing and says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gridDir(ctx, "", false, &msg); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "generating the grid dataset") {
		t.Errorf("cancelled generation: %v, want context.Canceled", err)
	}
}
