// Command adaptio is the adaptive I/O forwarding layer: one binary whose
// subcommands run the forwarding daemon, the Council, the emulated PFS, the
// simulator, the learning tools and the end-to-end demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
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
		Version:       version(),
	}
	root.SetVersionTemplate("adaptio {{.Version}}\n")
	var profile cpuProfile
	root.PersistentFlags().StringVar(&profile.path, "cpuprofile", "", "write this process's CPU profile to this file (read it with go tool pprof)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return profile.start() }
	root.PersistentPostRun = func(*cobra.Command, []string) { profile.stop() }
	// The one place where commands are registered.
	root.AddCommand(
		newDemoCmd(),
		newSchedCmd(),
		newSimCmd(),
		newDetectCmd(),
		newEvalCmd(),
		newCouncilCmd(),
		newNATSCmd(),
		newKeysCmd(),
		newPFSCmd(),
		newForwardCmd(),
		newMountCmd(),
		newBenchCmd(),
		newDarshanCmd(),
		newReplayCmd(),
		newTuneCmd(),
		newDocsCmd(),
	)
	return root
}

// cpuProfile writes the process's CPU profile while a command runs.
type cpuProfile struct {
	path string
	file *os.File
}

func (p *cpuProfile) start() error {
	if p.path == "" {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.file = f
	return nil
}

func (p *cpuProfile) stop() {
	if p.file == nil {
		return
	}
	pprof.StopCPUProfile()
	p.file.Close()
	p.file = nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	pprof.StopCPUProfile() // a command that failed did not stop its --cpuprofile
	if err != nil {
		fmt.Fprintln(os.Stderr, "adaptio:", err)
		os.Exit(1)
	}
}
