package tune

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
	sets    []Setting
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
	f.sets = append(f.sets, Setting{name, v})
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
		tg := &fakeTarget{knobs: LustreKnobs(), busy: true, refuse: 128}
		tn, err := New("iopathtune", Options{Knobs: tg.Knobs()})
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
		sets := append([]Setting(nil), tg.sets...)
		tg.mu.Unlock()
		want := []Setting{{"max_pages_per_rpc", 512}, {"max_rpcs_in_flight", 16}}
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

func TestObserve(t *testing.T) {
	o := Observe(knob.Sample{Bytes: 100, Entered: 300, Requests: 2}, knob.Sample{Bytes: 2100, Entered: 4300, Requests: 12, Queued: 77}, 2*time.Second)
	if o != (Observation{Bandwidth: 1000, DirtyBytes: 77, CacheRate: 2000, RPCRate: 5}) {
		t.Errorf("Observe: %+v", o)
	}
	if o := Observe(knob.Sample{}, knob.Sample{Queued: 5}, 0); o != (Observation{DirtyBytes: 5}) {
		t.Errorf("Observe over no time: %+v", o)
	}
}

func TestNewRefusesUnknownTunersAndNoKnobs(t *testing.T) {
	if _, err := New("capes", Options{Knobs: LustreKnobs()}); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown tuner: %v, want ErrConfig", err)
	}
	if _, err := New("iopathtune", Options{}); !errors.Is(err, ErrConfig) {
		t.Errorf("no knobs: %v, want ErrConfig", err)
	}
	for _, name := range Names() {
		tn, err := New(name, Options{Knobs: LustreKnobs(), Interval: time.Second})
		if err != nil || len(tn.Knobs()) != 2 {
			t.Errorf("New(%q): %v", name, err)
		}
	}
}
