package main

import (
	"fmt"

	"github.com/spf13/cobra"
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
