package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newCouncilCmd is a placeholder until its package lands; it fails clearly.
func newCouncilCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "council",
		Short: "Run the Council: pattern detection and window decisions over NATS (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("council: not built yet")
		},
	}
}
