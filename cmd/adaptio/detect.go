package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDetectCmd is a placeholder until its package lands; it fails clearly.
func newDetectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "detect",
		Short: "Train, evaluate and apply access-pattern detectors (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("detect: not built yet")
		},
	}
}
