package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchCmd is a placeholder until its package lands; it fails clearly.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "MPI-IO Test / IOR-style benchmark client through the forwarder (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("bench: not built yet")
		},
	}
}
