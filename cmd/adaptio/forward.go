package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newForwardCmd is a placeholder until its package lands; it fails clearly.
func newForwardCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "forward",
		Short: "Run the forwarding daemon on an I/O node (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("forward: not built yet")
		},
	}
}
