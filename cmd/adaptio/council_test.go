package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/internal/statelock"
	"github.com/adaptio/adaptio/sched"
)

// councilCmd is a command whose context ends after d, so a Council that
// does start stops on its own.
func councilCmd(t *testing.T, d time.Duration) *cobra.Command {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	return cmd
}

func testCouncilConfig(t *testing.T) councilConfig {
	return councilConfig{Prefix: "adaptio.test", Listen: "127.0.0.1:0", StateDir: t.TempDir(), Policy: council.DefaultPolicy,
		Windows: sched.Windows, Default: sched.DefaultWindow, Consensus: council.Majority, Reward: council.RewardBandwidth,
		Timeout: 500 * time.Millisecond, Forget: 3, Seed: 1}
}

func TestCouncilListenOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testCouncilConfig(t)
	cfg.Listen = ln.Addr().String()
	start := time.Now()
	err = runCouncil(councilCmd(t, 20*time.Second), cfg)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), cfg.Listen) {
		t.Fatalf("council on a taken port: %v, want EADDRINUSE naming %s", err, cfg.Listen)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the error took %v (the embedded server's start-up deadline?)", took)
	}
}

func TestCouncilStateDirHeld(t *testing.T) {
	cfg := testCouncilConfig(t)
	held, err := statelock.Acquire(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	err = runCouncil(councilCmd(t, 20*time.Second), cfg)
	if !errors.Is(err, statelock.ErrHeld) {
		t.Fatalf("council on a held --state-dir: %v, want statelock.ErrHeld", err)
	}
}

// backgroundCouncil is a Council run by runCouncil on its own goroutine
// until the test ends.
type backgroundCouncil struct {
	done chan struct{}
	err  error // runCouncil's result, once done is closed
}

// startCouncil runs the Council of cfg in the background; at the end of the
// test it is stopped, and an error it returned fails the test.
func startCouncil(t *testing.T, cfg councilConfig) *backgroundCouncil {
	t.Helper()
	cmd := councilCmd(t, 60*time.Second)
	ctx, stop := context.WithCancel(cmd.Context())
	cmd.SetContext(ctx)
	b := &backgroundCouncil{done: make(chan struct{})}
	go func() { b.err = runCouncil(cmd, cfg); close(b.done) }()
	t.Cleanup(func() {
		stop()
		<-b.done
		if b.err != nil {
			t.Errorf("council: %v", b.err)
		}
	})
	return b
}

// stopped reports whether the Council has returned, and its error.
func (b *backgroundCouncil) stopped() (bool, error) {
	select {
	case <-b.done:
		return true, b.err
	default:
		return false, nil
	}
}

// --job-context takes node, mix or dominant: the core's configuration has
// it, and another name is refused before anything starts, naming the flag's
// choices.
func TestCouncilJobContext(t *testing.T) {
	cfg := testCouncilConfig(t)
	cfg.JobContext = council.JobContextMix
	cc, err := cfg.core()
	if err != nil || cc.JobContext != council.JobContextMix {
		t.Fatalf("core() = JobContext %q, %v; want %q", cc.JobContext, err, council.JobContextMix)
	}
	cfg.JobContext = "largest"
	err = runCouncil(councilCmd(t, 20*time.Second), cfg)
	if err == nil || !strings.Contains(err.Error(), "largest") || !strings.Contains(err.Error(), council.JobContextDominant) {
		t.Fatalf("--job-context largest: %v, want an error naming it and the choices", err)
	}
}
