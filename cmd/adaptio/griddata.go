package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/adaptio/adaptio/sim/experiment"
)

// gridDir returns dir if it is set; otherwise the simulator's dataset (the
// papers' grid, or with validation the 64/128 KiB set) in the user's cache
// directory, generated there the first time it is needed (about a minute,
// progress on w) and reused afterwards. A fresh clone thus needs no data
// from elsewhere.
func gridDir(ctx context.Context, dir string, validation bool, w io.Writer) (string, error) {
	if dir != "" {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --data given and no cache directory to generate the dataset in (%w): pass --data DIR from adaptio sim grid --out DIR", err)
	}
	name := "grid"
	if validation {
		name = "validation"
	}
	out := filepath.Join(cache, "adaptio", name)
	if _, err := os.Stat(filepath.Join(out, experiment.ReadyFile)); err == nil {
		fmt.Fprintf(w, "no --data given: using the simulator's %s dataset in %s\n", name, out)
		return out, nil
	}
	fmt.Fprintf(w, "no --data given: generating the simulator's %s dataset in %s (once, about a minute; adaptio sim grid does the same)\n", name, out)
	_, err = os.Stat(filepath.Join(out, "summary.csv"))
	resume := err == nil // an interrupted first use goes on where it stopped
	if _, err := experiment.RunGrid(ctx, experiment.GridOptions{Out: out, Validation: validation, Workers: runtime.NumCPU(), Resume: resume, Seed: 1, Progress: w}); err != nil {
		return "", fmt.Errorf("generating the %s dataset in %s: %w", name, out, err)
	}
	return out, nil
}
