package tune

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

// runDQN drives a DQN tuner on the synthetic client for steps intervals
// and returns its mean bandwidth over the last 200 and its final knobs.
func runDQN(t *testing.T, seed uint64, steps int) (float64, []knob.Knob) {
	d, err := NewDQN(DQNConfig{EpsilonSteps: steps / 2}, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var late float64
	for i := range steps {
		bw := response(d.Knobs())
		d.Step(time.Duration(i)*time.Second, Observation{Bandwidth: bw})
		if i >= steps-200 {
			late += bw / 200
		}
	}
	return late, d.Knobs()
}

// The DQN learns to move the knobs toward the synthetic client's peak:
// over its last 200 of 3,000 one-second steps (epsilon annealed over the
// first half), averaged over three seeds, it reaches at least 80% of the
// peak (Lustre's defaults: 30%); the same seed gives the same run.
func TestDQNLearnsTowardThePeak(t *testing.T) {
	var mean float64
	for seed := range uint64(3) {
		late, knobs := runDQN(t, seed, 3000)
		t.Logf("seed %d: mean bandwidth over the last 200 steps %.0f of 1000; knobs %+v", seed, late, knobs)
		mean += late / 3
	}
	t.Logf("DQN: %.0f of 1000 over three seeds (Lustre defaults %.0f)", mean, response(LustreKnobs()))
	if mean < 800 {
		t.Errorf("DQN late bandwidth %.0f over three seeds, want >= 800", mean)
	}
	late, knobs := runDQN(t, 1, 3000)
	late2, knobs2 := runDQN(t, 1, 3000)
	if late2 != late || !reflect.DeepEqual(knobs, knobs2) {
		t.Errorf("same seed, different runs: %.3f %+v and %.3f %+v", late, knobs, late2, knobs2)
	}
}

var _ Tuner = (*DQN)(nil)

func TestDQNConfigErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []DQNConfig{{Gamma: 1}, {Replay: 4, Batch: 8}, {Knobs: []knob.Knob{{Name: "x", Value: 9, Min: 1, Max: 8}}}} {
		if _, err := NewDQN(c, rng); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	if _, err := NewDQN(DQNConfig{}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("no random source: %v, want ErrConfig", err)
	}
}
