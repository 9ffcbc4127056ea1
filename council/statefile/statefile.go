// Package statefile keeps a Council core's learned state in a file, for
// the runs that have no JetStream: "adaptio demo --sim" and "adaptio sim
// run --learn". The file is the core's Snapshot; it is written to a
// temporary file and renamed, so a crash never leaves half a state.
package statefile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/internal/atomicfile"
)

// Load restores core from the file at path and reports whether there was
// one; a missing file is not an error (learning starts afresh).
func Load(core *council.Council, path string) (bool, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("learned state: %w", err)
	}
	if err := core.Restore(data); err != nil {
		return false, fmt.Errorf("learned state in %s: %w (remove the file to start afresh)", path, err)
	}
	return true, nil
}

// Save writes core's learned state to path.
func Save(core *council.Council, path string) error {
	data, err := core.Snapshot()
	if err != nil {
		return fmt.Errorf("learned state: %w", err)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("learned state: %w", err)
	}
	return nil
}
