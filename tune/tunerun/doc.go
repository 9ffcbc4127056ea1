// Package tunerun is the shell that drives a pure tuner of package tune
// against a live target (knob.Target: the daemon, the mount) on the wall
// clock: every interval it samples the target, steps the tuner and applies
// its settings (`adaptio forward --tune`, `adaptio mount --tune`).
//
//	tn, _ := tune.New("iopathtune", tune.Options{Knobs: tg.Knobs()})
//	err := tunerun.Run(ctx, tn, tg, 10*time.Second, log) // until ctx ends
package tunerun
