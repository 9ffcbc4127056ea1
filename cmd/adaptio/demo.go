package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDemoCmd is a placeholder until its package lands; it fails clearly.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the whole stack end to end and watch it learn (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("demo: not built yet")
		},
	}
}
