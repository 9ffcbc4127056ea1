package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSimCmd is a placeholder until its package lands; it fails clearly.
func newSimCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sim",
		Short: "Deterministic simulator of the forwarding stack (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("sim: not built yet")
		},
	}
}
