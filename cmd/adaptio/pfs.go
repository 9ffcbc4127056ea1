package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newPFSCmd is a placeholder until its package lands; it fails clearly.
func newPFSCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pfs",
		Short: "Run an emulated parallel file system of N data servers (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("pfs: not built yet")
		},
	}
}
