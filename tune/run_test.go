package tune

import (
	"errors"
	"testing"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

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
