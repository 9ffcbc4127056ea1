// Package tune adjusts client-side I/O path parameters at run time
// (IOPathTune: Rashid, Bao, He and Dai, "IOPathTune: Adaptive Online
// Parameter Tuning for Parallel File System I/O Path"): every Interval it
// doubles or halves one knob,
// alternating between the knobs, keeps the direction that raised the
// bandwidth and reverses one that did not, and reverts the last change
// when contention shows. The cores are pure state machines: the caller
// passes each interval's observation and applies the settings returned
// (to Lustre's osc parameters, to adaptio's own client, or in the
// simulator). The shells that do so on the wall clock live apart:
// tune/tunerun drives a tuner against a knob.Target (the daemon, the
// mount), tune/lustre reads and sets a Lustre client's parameters.
package tune

import (
	"errors"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/tune/knob"
)

// ErrConfig is returned for an invalid configuration.
var ErrConfig = errors.New("tune: invalid configuration")

// Observation is one interval's client statistics (per-target figures
// summed over the targets).
type Observation struct {
	Bandwidth  float64 // bytes per second moved by the client's RPCs
	DirtyBytes int64   // dirty pages waiting in the client's cache at the end
	CacheRate  float64 // bytes per second entering the cache (the application's write speed)
	RPCRate    float64 // RPCs per second the client generated
	// Pattern is the workload the interval showed, for the tuners that
	// key on it (PatternBandit; zero: unknown).
	Pattern Pattern
}

// Setting is a knob's new value.
type Setting struct {
	Knob  string
	Value int
}

// Tuner is a run-time tuner: Step takes the observation of the interval
// that ended at now and returns the settings to apply (none: keep).
type Tuner interface {
	Step(now time.Duration, o Observation) []Setting
	Knobs() []knob.Knob
}

// Config tunes IOPathTune.
type Config struct {
	Knobs    []knob.Knob   // default LustreKnobs()
	Interval time.Duration // how often a knob changes (default 10 s, IOPathTune's)
	// Contention: the cache fills while the bandwidth falls — dirty bytes
	// up by more than this share of the last interval's, and the
	// bandwidth down (default 0.2).
	DirtyGrowth float64
}

// IOPathTune is the heuristic of Rashid, Bao, He and Dai, "IOPathTune:
// Adaptive Online Parameter Tuning for Parallel File System I/O Path".
type IOPathTune struct {
	cfg      Config
	knobs    []knob.Knob
	dir      []int // per knob, the direction of its last change: +1 doubled, -1 halved, 0 none yet
	turn     int   // the knob changed next
	last     int   // the knob changed last (-1: none)
	lastAt   time.Duration
	lastObs  Observation
	haveLast bool
	judged   []Reason // per knob, how its last move was judged
	Reverts  int      // changes reverted for contention
}

// NewIOPathTune returns the heuristic at the knobs' initial values.
func NewIOPathTune(cfg Config) (*IOPathTune, error) {
	if cfg.Knobs == nil {
		cfg.Knobs = LustreKnobs()
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.DirtyGrowth == 0 {
		cfg.DirtyGrowth = 0.2
	}
	if len(cfg.Knobs) == 0 || cfg.Interval < 0 || cfg.DirtyGrowth < 0 {
		return nil, fmt.Errorf("%w: %d knobs, interval %v", ErrConfig, len(cfg.Knobs), cfg.Interval)
	}
	if err := validKnobs(cfg.Knobs); err != nil {
		return nil, err
	}
	t := &IOPathTune{cfg: cfg, knobs: append([]knob.Knob(nil), cfg.Knobs...), dir: make([]int, len(cfg.Knobs)), last: -1}
	return t, nil
}

// validKnobs checks every knob's value lies in its range, bounds >= 1.
func validKnobs(knobs []knob.Knob) error {
	for _, k := range knobs {
		if k.Min < 1 || k.Max < k.Min || k.Value < k.Min || k.Value > k.Max {
			return fmt.Errorf("%w: knob %s: value %d outside [%d, %d] (or a bound below 1)", ErrConfig, k.Name, k.Value, k.Min, k.Max)
		}
	}
	return nil
}

// Knobs returns the knobs at their current values.
func (t *IOPathTune) Knobs() []knob.Knob { return append([]knob.Knob(nil), t.knobs...) }

// set moves knob i by direction d within its range (knob.Knob.Step).
func (t *IOPathTune) set(i, d int) bool { return t.knobs[i].Step(d) }

// Reason says why IOPathTune moved a knob (the label of
// adaptio_lustre_changes_total and of the log).
type Reason string

// The reasons of IOPathTune's moves.
const (
	ReasonFirst      Reason = "first_move"        // the knob's first move: doubled
	ReasonRose       Reason = "bandwidth_rose"    // its last move raised the bandwidth: the same way again
	ReasonFell       Reason = "bandwidth_fell"    // its last move did not: the other way
	ReasonBound      Reason = "at_bound"          // at a bound of its range: turned back
	ReasonContention Reason = "contention_revert" // the cache filled while the bandwidth fell: the last move undone
)

// Change is a Setting with the reason for it.
type Change struct {
	Setting
	From   int // the knob's value before
	Reason Reason
}

// Step decides at the end of an interval (Decide, without the reasons).
func (t *IOPathTune) Step(now time.Duration, o Observation) []Setting {
	var out []Setting
	for _, c := range t.Decide(now, o) {
		out = append(out, c.Setting)
	}
	return out
}

// Decide decides at the end of an interval. Before Interval has passed
// since the last decision it only watches. Then the last change is judged
// by the bandwidth of the interval that followed it: under contention (the
// cache filling while the bandwidth falls) it is reverted at once; if the
// bandwidth rose, that knob will move the same way next time, otherwise
// the other way. Then the knob whose turn it is moves (doubling first; a
// knob at a bound turns back). Each change carries its reason.
func (t *IOPathTune) Decide(now time.Duration, o Observation) []Change {
	if !t.haveLast {
		t.lastObs, t.haveLast, t.lastAt = o, true, now
		return nil
	}
	if now-t.lastAt < t.cfg.Interval {
		return nil
	}
	if t.judged == nil {
		t.judged = make([]Reason, len(t.knobs))
	}
	prev := t.lastObs
	t.lastObs, t.lastAt = o, now
	improved := o.Bandwidth > prev.Bandwidth
	if t.last >= 0 {
		i := t.last
		contention := !improved && float64(o.DirtyBytes) > (1+t.cfg.DirtyGrowth)*float64(max(prev.DirtyBytes, 1))
		t.judged[i] = ReasonRose
		if !improved {
			t.dir[i] = -t.dir[i]
			t.judged[i] = ReasonFell
		}
		if contention {
			t.last = -1
			from := t.knobs[i].Value
			if t.set(i, t.dir[i]) {
				t.Reverts++
				return []Change{{Setting{t.knobs[i].Name, t.knobs[i].Value}, from, ReasonContention}}
			}
		}
	}
	i := t.turn
	t.turn = (t.turn + 1) % len(t.knobs)
	d := t.dir[i]
	why := t.judged[i]
	if d == 0 {
		d, why = +1, ReasonFirst
	}
	from := t.knobs[i].Value
	if !t.set(i, d) {
		d, why = -d, ReasonBound // at a bound: turn back
		if !t.set(i, d) {
			t.last = -1
			return nil
		}
	}
	t.dir[i], t.last = d, i
	return []Change{{Setting{t.knobs[i].Name, t.knobs[i].Value}, from, why}}
}
