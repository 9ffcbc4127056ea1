package ionode

import (
	"time"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/sched"
)

// DefaultGateDepth is the most requests a Node with a QoS gate lets wait in
// its scheduler (queued or held) before the gate holds the rest back by job.
const DefaultGateDepth = 256

// gate is the QoS gate in front of a Node's scheduler (SetGate).
type gate struct {
	g     *qos.Gate
	depth int
}

// SetGate puts g in front of the scheduler from now on: AddJob (and Add,
// as job "") queue pieces in g, which releases them into the scheduler by
// its rules while fewer than depth requests wait there (depth <= 0:
// DefaultGateDepth). Under that depth the scheduler sees every request the
// buckets let through; above it, the node is saturated and the gate shares
// it between jobs by weight. A nil g removes the gate: what it holds goes to
// the scheduler at once.
func (n *Node) SetGate(now time.Duration, g *qos.Gate, depth int) {
	if n.gate.g != nil && n.gate.g != g {
		n.drainThrottled(now)
	}
	if depth <= 0 {
		depth = DefaultGateDepth
	}
	n.gate = gate{g: g, depth: depth}
}

// drainThrottled moves every request still in the gate to the scheduler,
// in the gate's order but ignoring its buckets (when the gate is replaced).
func (n *Node) drainThrottled(now time.Duration) {
	g := n.gate.g
	for far := now; ; {
		_, r, ok, retry := g.Next(far)
		if !ok {
			if retry == 0 {
				return
			}
			far = retry
			continue
		}
		n.admit(now, r)
	}
}

// Gate is the QoS gate in front of the scheduler, nil without one.
func (n *Node) Gate() *qos.Gate { return n.gate.g }

// AddJob queues one piece of a request of job at time now: in the gate if
// the Node has one, else in the scheduler as Add does.
func (n *Node) AddJob(now time.Duration, job string, r sched.Request) error {
	if n.gate.g == nil {
		return n.Add(now, r)
	}
	if r.Arrival == 0 {
		r.Arrival = now
	}
	if err := n.gate.g.Add(now, job, r); err != nil {
		return err
	}
	n.follow(now, r)
	n.pump(now)
	return nil
}

// admit adds a request the gate released to the scheduler.
func (n *Node) admit(now time.Duration, r sched.Request) {
	if err := n.sw.Add(now, r); err != nil {
		// The gate checked length and operation; what the scheduler
		// refuses here (a queue out of range, a duplicate id) the caller
		// could not learn from AddJob: it is a programming error.
		panic("ionode: scheduler refused a request the QoS gate released: " + err.Error())
	}
	n.queued++
	n.queuedBytes += r.Length
}

// pump releases requests from the gate into the scheduler while it has
// room, and returns the gate's retry time (0: none).
func (n *Node) pump(now time.Duration) time.Duration {
	if n.gate.g == nil {
		return 0
	}
	for n.queued < n.gate.depth {
		_, r, ok, retry := n.gate.g.Next(now)
		if !ok {
			return retry
		}
		n.admit(now, r)
	}
	return 0
}

func (n *Node) gateLen() (int, int64) {
	if n.gate.g == nil {
		return 0, 0
	}
	return n.gate.g.Len()
}

// charge tells the gate, if any, how long access a (dispatched took before
// now) occupied its data server: the time since the later of its dispatch
// and the previous completion on that server, as a server that serves one
// access at a time is busy with an access from the end of the one before
// it (or from its arrival) to its end. Each piece is charged its share by
// bytes. With several I/O nodes in front of a server, the time also holds
// the other nodes' accesses served in between; a server that serves
// several accesses at once is charged less than each took.
func (n *Node) charge(now time.Duration, a Access, took time.Duration) {
	q := a.Queue
	for len(n.lastDone) <= q {
		n.lastDone = append(n.lastDone, 0)
	}
	from := max(now-took, n.lastDone[q])
	n.lastDone[q] = max(now, n.lastDone[q])
	g := n.gate.g
	if g == nil || g.Share() != qos.ShareTime {
		return
	}
	var total int64
	for _, b := range a.Batches {
		for _, r := range b.Requests {
			total += r.Length
		}
	}
	busy := float64(max(now-from, 0))
	for _, b := range a.Batches {
		for _, r := range b.Requests {
			g.Done(r.ID, time.Duration(busy*float64(r.Length)/float64(total)))
		}
	}
}
