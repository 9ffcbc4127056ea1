package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newEvalCmd is a placeholder until its package lands; it fails clearly.
func newEvalCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "eval",
		Short: "Offline evaluations of detection and bandits, with reports (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("eval: not built yet")
		},
	}
}
