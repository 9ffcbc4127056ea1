// Package knob is what a tunable component and a tuner share: a knob and
// its range, the counters a tuner samples, and the Target interface a
// daemon (fwd.Daemon) or a mount (fusemount.Server) implements. It is a
// leaf: the components import it without linking the tuners of package
// tune.
//
//	ks := tg.Knobs()         // current values and ranges
//	s := tg.Sample()         // counters now; tune.Observe turns two into an observation
//	err := tg.SetKnob(ks[0].Name, ks[0].Value*2)
package knob

// Knob is one tunable parameter and its allowed range.
type Knob struct {
	Name     string
	Value    int
	Min, Max int
}

// Step doubles the knob's value (d > 0) or halves it (d < 0), within its
// range; it reports whether the value changed.
func (k *Knob) Step(d int) bool {
	v := k.Value * 2
	if d < 0 {
		v = k.Value / 2
	}
	v = min(max(v, k.Min), k.Max)
	if v == k.Value {
		return false
	}
	k.Value = v
	return true
}

// Sample is a tuning target's counters at one instant: totals since it
// started (Bytes, Entered, Requests) and a level (Queued).
type Sample struct {
	Bytes    int64 // bytes moved (acknowledged by the next stage)
	Entered  int64 // bytes accepted from the application
	Requests int64 // requests sent on (RPCs, accesses to data servers)
	Queued   int64 // bytes accepted and not yet sent on, now: Lustre's dirty pages
}

// Target is what a tuner's shell tunes: a daemon (fwd.Daemon), a FUSE
// mount (fusemount.Server). Its methods are safe for concurrent use with
// its I/O.
type Target interface {
	// Knobs returns the knobs with their current values and ranges.
	Knobs() []Knob
	// SetKnob sets a knob; it takes effect for new requests.
	SetKnob(name string, v int) error
	// Sample returns the counters now.
	Sample() Sample
}
