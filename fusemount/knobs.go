package fusemount

import (
	"errors"
	"fmt"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/tune/knob"
)

// The mount's knobs, changeable while it serves (SetKnob) by a tuner
// (package tune: adaptio mount --tune): Lustre's two client knobs as the
// mount has them, the largest request sent to the forwarder
// (max_pages_per_rpc) and the requests in flight to it
// (max_rpcs_in_flight). They are the client library's
// (client.Client.SetMaxIO, SetMaxInFlight).
const (
	// KnobMaxIO is the largest read or write sent to the forwarder in one
	// request, in bytes: from client.MinMaxIO to Options.MaxWrite (the
	// kernel sends nothing larger).
	KnobMaxIO = "max_io_bytes"
	// KnobInFlight is the most reads and writes in flight to the
	// forwarder, 1 to MaxInFlight; with no limit set (the default) it
	// shows as MaxInFlight.
	KnobInFlight = "max_in_flight"
	// MaxInFlight is the largest value of KnobInFlight.
	MaxInFlight = 256
)

// ErrKnob is returned by SetKnob for an unknown knob or a value outside
// its range.
var ErrKnob = errors.New("fusemount: bad knob setting")

// Knobs returns the mount's knobs with their current values and ranges.
func (m *Server) Knobs() []knob.Knob {
	inflight := m.c.MaxInFlight()
	if inflight == 0 || inflight > MaxInFlight {
		inflight = MaxInFlight
	}
	return []knob.Knob{
		{Name: KnobMaxIO, Value: min(max(m.c.MaxIO(), client.MinMaxIO), m.maxWrite), Min: client.MinMaxIO, Max: max(m.maxWrite, client.MinMaxIO)},
		{Name: KnobInFlight, Value: inflight, Min: 1, Max: MaxInFlight},
	}
}

// SetKnob sets knob name to v for the requests made from now on; requests
// in flight and writes already acknowledged are not affected. Safe for
// concurrent use.
func (m *Server) SetKnob(name string, v int) error {
	for _, k := range m.Knobs() {
		if k.Name != name {
			continue
		}
		if v < k.Min || v > k.Max {
			return fmt.Errorf("%w: %s = %d outside [%d, %d]", ErrKnob, name, v, k.Min, k.Max)
		}
		if name == KnobMaxIO {
			return m.c.SetMaxIO(v)
		}
		return m.c.SetMaxInFlight(v)
	}
	return fmt.Errorf("%w: unknown knob %q (known: %s, %s)", ErrKnob, name, KnobMaxIO, KnobInFlight)
}

// Sample returns the mount's counters for a tuner (knob.Target): bytes
// the forwarder has read and acknowledged as written, the requests sent,
// and as the queued bytes the writes acknowledged to applications and not
// yet to the mount (the write-behind bytes, Lustre's dirty pages), or
// without write-behind the bytes of requests waiting for room in flight.
// Entered is taken as the bytes moved plus the queued ones.
func (m *Server) Sample() knob.Sample {
	st := m.c.Stats()
	s := knob.Sample{Bytes: st.ReadBytes + st.WriteBytes, Requests: st.Requests, Queued: st.WaitingBytes}
	if m.wb != nil {
		s.Queued = m.wb.inUse()
	}
	s.Entered = s.Bytes + s.Queued
	return s
}

// inUse is the bytes of the writes acknowledged and not yet confirmed.
func (w *writeBehind) inUse() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}

var _ knob.Target = (*Server)(nil)
