package tunerun

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
)

// fakeTarget moves bandwidth(knobs) bytes per second of fake time while
// busy, and refuses values it is told to refuse.
type fakeTarget struct {
	mu      sync.Mutex
	knobs   []knob.Knob
	bytes   int64
	busy    bool
	refuse  int // a value SetKnob refuses
	sets    []tune.Setting
	lastAdv time.Time
}

func (f *fakeTarget) advance() {
	now := time.Now()
	if f.busy && !f.lastAdv.IsZero() {
		f.bytes += int64(response(f.knobs) * now.Sub(f.lastAdv).Seconds())
	}
	f.lastAdv = now
}

func (f *fakeTarget) Knobs() []knob.Knob {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]knob.Knob(nil), f.knobs...)
}

func (f *fakeTarget) SetKnob(name string, v int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v == f.refuse {
		return errors.New("refused")
	}
	f.advance()
	for i := range f.knobs {
		if f.knobs[i].Name == name {
			f.knobs[i].Value = v
		}
	}
	f.sets = append(f.sets, tune.Setting{Knob: name, Value: v})
	return nil
}

func (f *fakeTarget) Sample() knob.Sample {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	return knob.Sample{Bytes: f.bytes, Entered: f.bytes}
}

func (f *fakeTarget) setBusy(b bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	f.busy = b
}

// Run steps the tuner once per interval with the interval's bandwidth,
// applies and logs its settings, skips idle intervals and refused values,
// and stops with its context.
func TestRunDrivesATarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := &fakeTarget{knobs: tune.LustreKnobs(), busy: true, refuse: 128}
		tn, err := tune.New("iopathtune", tune.Options{Knobs: tg.Knobs()})
		if err != nil {
			t.Fatal(err)
		}
		var logBuf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logBuf, nil))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, tn, tg, 10*time.Second, log) }()
		defer cancel()
		time.Sleep(35 * time.Second) // ticks at 10, 20, 30 s: the first watches, two decide
		synctest.Wait()
		tg.mu.Lock()
		sets := append([]tune.Setting(nil), tg.sets...)
		tg.mu.Unlock()
		want := []tune.Setting{{Knob: "max_pages_per_rpc", Value: 512}, {Knob: "max_rpcs_in_flight", Value: 16}}
		if len(sets) != 2 || sets[0] != want[0] || sets[1] != want[1] {
			t.Fatalf("settings applied %v, want %v", sets, want)
		}
		tg.setBusy(false)
		time.Sleep(10 * time.Second) // the tick at 40 s still sees 30-35 s busy
		synctest.Wait()
		count := func() int {
			tg.mu.Lock()
			defer tg.mu.Unlock()
			return len(tg.sets)
		}
		n := count()
		time.Sleep(60 * time.Second) // idle: the tuner sees nothing
		synctest.Wait()
		if count() != n {
			t.Fatalf("%d settings after a minute idle, want still %d", count(), n)
		}
		tg.setBusy(true)
		time.Sleep(60 * time.Second) // pages halved to 128 in this minute: refused, and logged
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
		out := logBuf.String()
		if !strings.Contains(out, "knob=max_pages_per_rpc from=256 to=512") || !strings.Contains(out, "setting refused") {
			t.Errorf("log lacks the change or the refusal:\n%s", out)
		}
	})
}

// response is a synthetic client: bandwidth peaks at 64 pages per RPC and
// 32 RPCs in flight, falling with the distance in doublings.
func response(k []knob.Knob) float64 {
	d := func(v, best int) float64 { x := math.Log2(float64(v) / float64(best)); return x * x }
	return 1000 * math.Exp(-0.15*(d(k[0].Value, 64)+d(k[1].Value, 32)))
}
