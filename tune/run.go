package tune

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

// Observe is the observation of the interval of length dt between two
// samples.
func Observe(prev, cur knob.Sample, dt time.Duration) Observation {
	if dt <= 0 {
		return Observation{DirtyBytes: cur.Queued}
	}
	s := dt.Seconds()
	return Observation{
		Bandwidth:  float64(cur.Bytes-prev.Bytes) / s,
		DirtyBytes: cur.Queued,
		CacheRate:  float64(cur.Entered-prev.Entered) / s,
		RPCRate:    float64(cur.Requests-prev.Requests) / s,
	}
}

// Options configure New.
type Options struct {
	Knobs    []knob.Knob   // the target's knobs at their current values (required)
	Interval time.Duration // one decision per interval (default 10 s, IOPathTune's)
	Seed     uint64        // random source of the tuners that draw (the DQN)
}

// Names lists the tuners New builds.
func Names() []string { return []string{"iopathtune", "dqn"} }

// New returns the tuner called name over o.Knobs: "iopathtune" (IOPathTune's
// heuristic) or "dqn" (the CAPES-style deep Q-network, one action per
// interval).
func New(name string, o Options) (Tuner, error) {
	if len(o.Knobs) == 0 {
		return nil, fmt.Errorf("%w: no knobs", ErrConfig)
	}
	if o.Interval == 0 {
		o.Interval = 10 * time.Second
	}
	switch name {
	case "iopathtune":
		return NewIOPathTune(Config{Knobs: o.Knobs, Interval: o.Interval})
	case "dqn":
		return NewDQN(DQNConfig{Knobs: o.Knobs, Interval: o.Interval}, rand.New(rand.NewPCG(o.Seed, 0xd9)))
	}
	return nil, fmt.Errorf("%w: unknown tuner %q (known: %v)", ErrConfig, name, Names())
}
