package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
	"github.com/adaptio/adaptio/tune/tunerun"
)

// tuneConfig is --tune and --tune-interval of adaptio forward and adaptio
// mount.
type tuneConfig struct {
	Tuner    string
	Interval time.Duration
}

func (c *tuneConfig) flags(f *pflag.FlagSet, what string) {
	f.StringVar(&c.Tuner, "tune", "off", "tune "+what+" while it runs: "+strings.Join(tune.Names(), ", ")+" or off (docs/tuning.md); every change is logged")
	f.DurationVar(&c.Interval, "tune-interval", 10*time.Second, "with --tune: one tuning decision per interval (IOPathTune's 10 s; CAPES acts every 1s)")
}

// check validates the flags.
func (c tuneConfig) check() error {
	if c.Tuner != "off" && !slices.Contains(tune.Names(), c.Tuner) {
		return fmt.Errorf("--tune %q: want %s or off", c.Tuner, strings.Join(tune.Names(), ", "))
	}
	if c.Tuner != "off" && c.Interval <= 0 {
		return fmt.Errorf("--tune-interval %v: want a positive duration", c.Interval)
	}
	return nil
}

// start runs the tuner against tg until ctx ends (nothing with --tune off).
// The DQN's random source is seeded from the clock.
func (c tuneConfig) start(ctx context.Context, tg knob.Target, log *slog.Logger, w io.Writer, prefix string) error {
	if c.Tuner == "off" {
		return nil
	}
	knobs := tg.Knobs()
	tn, err := tune.New(c.Tuner, tune.Options{Knobs: knobs, Interval: c.Interval, Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		return err
	}
	var parts []string
	for _, k := range knobs {
		parts = append(parts, fmt.Sprintf("%s=%d [%d, %d]", k.Name, k.Value, k.Min, k.Max))
	}
	fmt.Fprintf(w, "%s: tuning %s with %s every %v\n", prefix, strings.Join(parts, ", "), c.Tuner, c.Interval)
	go func() { _ = tunerun.Run(ctx, tn, tg, c.Interval, log) }()
	return nil
}
