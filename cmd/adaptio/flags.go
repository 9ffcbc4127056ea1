package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/internal/atomicfile"
)

// requirePositive refuses any of the named int or duration flags that the
// user set to zero or less: the packages read a zero as "use the default",
// which on the command line would silently replace the value typed.
func requirePositive(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		fl := cmd.Flags().Lookup(name)
		if fl == nil || !fl.Changed {
			continue
		}
		switch fl.Value.Type() {
		case "int":
			if n, err := cmd.Flags().GetInt(name); err == nil && n < 1 {
				return fmt.Errorf("--%s %d: want a positive count", name, n)
			}
		case "duration":
			if d, err := cmd.Flags().GetDuration(name); err == nil && d <= 0 {
				return fmt.Errorf("--%s %v: want a positive duration", name, d)
			}
		}
	}
	return nil
}

// requireWritableFile checks, before any work, that the file named by flag
// can be created, so that a run that would fail only when writing its
// output fails at once instead.
func requireWritableFile(flag, path string) error {
	if err := atomicfile.CheckCreate(path); err != nil {
		return fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return nil
}
