// Command adaptio is the adaptive I/O forwarding layer: one binary whose
// subcommands run the forwarding daemon, the Council, the emulated PFS, the
// simulator, the learning tools and the end-to-end demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "adaptio",
		Short: "Adaptive I/O forwarding for HPC: schedulers that learn their parameters",
		Long: `adaptio is an I/O forwarding layer for HPC systems. Forwarding daemons on I/O nodes
schedule requests to the parallel file system (TWINS, FIFO, HBRR, the AGIOS family);
a central Council detects each I/O node's access pattern and learns, with contextual
bandits, which TWINS time window serves it best. A deterministic simulator of the
whole stack reproduces the experiments behind it in minutes.

Start with "adaptio demo".`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// The one place where commands are registered.
	root.AddCommand(
		newDemoCmd(),
		newSchedCmd(),
		newSimCmd(),
		newDetectCmd(),
		newEvalCmd(),
		newCouncilCmd(),
		newNATSCmd(),
		newPFSCmd(),
		newForwardCmd(),
		newMountCmd(),
		newBenchCmd(),
		newDarshanCmd(),
		newReplayCmd(),
		newTuneCmd(),
	)
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "adaptio:", err)
		os.Exit(1)
	}
}
