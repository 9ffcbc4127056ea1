package tunerun

import (
	"context"
	"testing"
	"time"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
)

// countingTuner is IOPathTune, counting the steps that decided something.
type countingTuner struct {
	*tune.IOPathTune
	decisions []time.Duration
}

func (c *countingTuner) Step(now time.Duration, o tune.Observation) []tune.Setting {
	s := c.IOPathTune.Step(now, o)
	if len(s) > 0 {
		c.decisions = append(c.decisions, now)
	}
	return s
}

// risingTarget moves more bytes every time it is sampled.
type risingTarget struct {
	fakeTarget
	samples int64
}

func (r *risingTarget) Sample() knob.Sample {
	r.samples++
	r.bytes += r.samples << 20
	return knob.Sample{Bytes: r.bytes, Entered: r.bytes}
}

// A ticker's ticks arrive late by varying amounts, so two can be a little
// less than the interval apart; none may be dropped: one decision per
// tick, each one interval after the last.
func TestRunDecidesOnEveryJitteredTick(t *testing.T) {
	tg := &risingTarget{fakeTarget: fakeTarget{knobs: tune.LustreKnobs()}}
	in, _ := tune.NewIOPathTune(tune.Config{Interval: time.Second})
	tn := &countingTuner{IOPathTune: in}
	start := time.Now()
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, tn, tg, time.Second, nil, start, ticks) }()
	// Late by 5 ms, then on time, and so on: gaps of 995 ms and 1005 ms.
	for k := 1; k <= 10; k++ {
		late := time.Duration(k%2) * 5 * time.Millisecond
		ticks <- start.Add(time.Duration(k)*time.Second + late)
	}
	cancel()
	<-done
	if len(tn.decisions) != 9 {
		t.Fatalf("decisions at %v: want 9 (every tick after the first)", tn.decisions)
	}
	for i := 1; i < len(tn.decisions); i++ {
		if gap := tn.decisions[i] - tn.decisions[i-1]; gap != time.Second {
			t.Errorf("decisions %v and %v: %v apart, want 1s", tn.decisions[i-1], tn.decisions[i], gap)
		}
	}
}

func TestTickSnapsToTheSchedule(t *testing.T) {
	start := time.Now()
	for _, tt := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{1005 * time.Millisecond, time.Second},
		{1999 * time.Millisecond, 2 * time.Second},
		{2400 * time.Millisecond, 2 * time.Second},
		{2600 * time.Millisecond, 3 * time.Second},
	} {
		if got := Tick(start.Add(tt.at), start, time.Second); got != tt.want {
			t.Errorf("Tick at %v: %v, want %v", tt.at, got, tt.want)
		}
	}
}
