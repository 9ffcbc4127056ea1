package fwd

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/tune/knob"
)

// The daemon's dispatch knobs, changeable while it runs (SetKnob) by an
// operator or a tuner (package tune: adaptio forward --tune). They are
// Lustre's two client knobs as the forwarder has them: the requests
// merged into one access to a data server stand for the pages of one RPC
// (max_pages_per_rpc), the accesses in flight to one data server for the
// RPCs in flight to one target (max_rpcs_in_flight).
const (
	// KnobAggregate is the most requests one access to a data server
	// carries (ionode.Config.Aggregate): MaxMerge on a backend of
	// per-server objects, up to 64 pieces of one request on a local file
	// system, 1 otherwise.
	KnobAggregate = "aggregate"
	// KnobPerServer is the most accesses in flight to one data server
	// (ionode.Config.PerServer), at most Workers: ionode.PerServerLimit on
	// a backend of per-server objects, Workers (no limit but the workers)
	// otherwise.
	KnobPerServer = "per_server_in_flight"

	// MaxAggregate is the largest aggregation limit SetKnob accepts.
	MaxAggregate = 256
)

// ErrKnob is returned by SetKnob for an unknown knob or a value outside
// its range.
var ErrKnob = errors.New("fwd: bad knob setting")

// Knobs returns the daemon's knobs with their current values and ranges.
func (d *Daemon) Knobs() []knob.Knob {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	return d.knobsLocked()
}

func (d *Daemon) knobsLocked() []knob.Knob {
	ps := d.q.node.PerServer()
	if ps == 0 {
		ps = d.opts.Workers
	}
	return []knob.Knob{
		{Name: KnobAggregate, Value: d.q.node.Aggregate(), Min: 1, Max: MaxAggregate},
		{Name: KnobPerServer, Value: min(ps, d.opts.Workers), Min: 1, Max: max(d.opts.Workers, 1)},
	}
}

// SetKnob sets knob name to v from the next dispatch on. Requests already
// received stay queued in their order and accesses in flight run as they
// were formed; raising a limit lets waiting requests go at once. Safe for
// concurrent use.
func (d *Daemon) SetKnob(name string, v int) error {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	var old knob.Knob
	for _, k := range d.knobsLocked() {
		if k.Name == name {
			old = k
		}
	}
	switch {
	case old.Name == "":
		return fmt.Errorf("%w: unknown knob %q (known: %s, %s)", ErrKnob, name, KnobAggregate, KnobPerServer)
	case v < old.Min || v > old.Max:
		return fmt.Errorf("%w: %s = %d outside [%d, %d]", ErrKnob, name, v, old.Min, old.Max)
	case v == old.Value:
		return nil
	}
	if name == KnobAggregate {
		q.node.SetAggregate(v)
	} else {
		q.node.SetPerServer(v)
	}
	d.m.knobChanges.WithLabelValues(name).Inc()
	d.log.Info("knob changed", "knob", name, "from", old.Value, "to", v)
	q.work.Broadcast() // held batches may go now
	return nil
}

// Sample returns the daemon's counters for a tuner (knob.Target): bytes
// acknowledged and received so far, accesses dispatched so far, and the
// bytes of the requests waiting to be dispatched now (queued in the
// scheduler or held), the forwarder's counterpart of a client's dirty
// pages.
func (d *Daemon) Sample() knob.Sample {
	q := &d.q
	q.mu.Lock()
	_, queued := q.node.Queued()
	s := knob.Sample{Entered: q.entered, Requests: q.dispatched, Queued: queued}
	q.mu.Unlock()
	s.Bytes = d.m.bytesTotal()
	return s
}

var _ knob.Target = (*Daemon)(nil)

// registerKnobMetrics exports the knobs' values (adaptio_fwd_knob) and
// their changes (adaptio_fwd_knob_changes_total).
func (d *Daemon) registerKnobMetrics(reg prometheus.Registerer) error {
	d.m.knobChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "adaptio_fwd_knob_changes_total", Help: "Changes of the daemon's dispatch knobs (by an operator or adaptio forward --tune), by knob.",
	}, []string{"knob"})
	cs := []prometheus.Collector{d.m.knobChanges}
	for i, name := range []string{KnobAggregate, KnobPerServer} {
		d.m.knobChanges.WithLabelValues(name)
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "adaptio_fwd_knob", Help: "Current value of the daemon's dispatch knobs: aggregate (most requests merged into one access to a data server), per_server_in_flight (most accesses in flight to one data server).",
			ConstLabels: prometheus.Labels{"knob": name},
		}, func() float64 { return float64(d.Knobs()[i].Value) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
