package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newSchedCmd is a placeholder until its package lands; it fails clearly.
func newSchedCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sched",
		Short: "Request schedulers: list them, benchmark them (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("sched: not built yet")
		},
	}
}
