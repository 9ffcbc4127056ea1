package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newMountCmd is a placeholder until its package lands; it fails clearly.
func newMountCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mount",
		Short: "Mount the forwarder with FUSE for unmodified applications (not built yet)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("mount: not built yet")
		},
	}
}
