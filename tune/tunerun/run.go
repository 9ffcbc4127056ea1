package tunerun

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
)

// Run drives tn against tg until ctx ends, then returns ctx's error: every
// interval it samples tg, passes the interval's observation to tn.Step
// (the tick's place on the schedule, k intervals since Run started, as
// now: Tick) and applies the settings returned, logging each change with
// the observation that led to it. An interval in which nothing entered,
// moved or waited is not shown to the tuner: an idle target would only
// make it move at random. A setting tg refuses is logged and skipped. log
// may be nil.
func Run(ctx context.Context, tn tune.Tuner, tg knob.Target, interval time.Duration, log *slog.Logger) error {
	if interval <= 0 {
		return fmt.Errorf("%w: interval %v", tune.ErrConfig, interval)
	}
	start := time.Now()
	t := time.NewTicker(interval)
	defer t.Stop()
	return run(ctx, tn, tg, interval, log, start, t.C)
}

// Tick is the time a tick that arrived at at stands for: the multiple of
// interval since start nearest to it. A ticker's ticks arrive a little
// late, by varying amounts, so the time between two can be a little less
// than the interval; a tuner given the arrival times would take the
// second for early and skip it (decisions 1 and 2 intervals apart).
func Tick(at, start time.Time, interval time.Duration) time.Duration {
	k := (at.Sub(start) + interval/2) / interval
	return k * interval
}

// run is Run on the ticks of ticks.
func run(ctx context.Context, tn tune.Tuner, tg knob.Target, interval time.Duration, log *slog.Logger, start time.Time, ticks <-chan time.Time) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prev, prevAt := tg.Sample(), start
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case at := <-ticks:
			cur := tg.Sample()
			o := tune.Observe(prev, cur, at.Sub(prevAt))
			idle := cur.Bytes == prev.Bytes && cur.Entered == prev.Entered && cur.Queued == 0
			prev, prevAt = cur, at
			if idle {
				continue
			}
			for _, s := range tn.Step(Tick(at, start, interval), o) {
				old := knobValue(tg.Knobs(), s.Knob)
				if err := tg.SetKnob(s.Knob, s.Value); err != nil {
					log.Warn("tune: setting refused", "knob", s.Knob, "value", s.Value, "err", err)
					continue
				}
				log.Info("tune", "knob", s.Knob, "from", old, "to", s.Value,
					"bandwidth_bytes_per_second", int64(o.Bandwidth), "queued_bytes", o.DirtyBytes)
			}
		}
	}
}

// knobValue is the value of knob name among ks (0 if absent).
func knobValue(ks []knob.Knob, name string) int {
	if i := slices.IndexFunc(ks, func(k knob.Knob) bool { return k.Name == name }); i >= 0 {
		return ks[i].Value
	}
	return 0
}
