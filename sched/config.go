package sched

import (
	"fmt"
	"time"
)

// Config configures a scheduler. Zero fields take the defaults listed; New
// validates the result and returns ErrBadConfig with the offending field.
// Every field except Servers, Node and Nodes can be changed at run time with
// a Tunable scheduler's SetParams, without losing requests: the same struct
// carries the construction-time and the run-time parameters, so each field
// lives once.
type Config struct {
	Servers int // number of queues (PFS data servers), >= 1; required
	Node    int // this I/O node's index, >= 0 (TWINS translation rule: node k starts at server k mod Servers)
	Nodes   int // number of I/O nodes, >= 1 and > Node (default Node+1)

	Window    time.Duration // TWINS time window (default 1 ms)
	SkipEmpty bool          // TWINS: move on when the current server's queue is empty (ours; default false, the reference behaviour)
	IdleStart bool          // TWINS: a request reaching an idle I/O node (nothing queued or in flight) starts a window at its server at once (ours; default false, the reference behaviour)
	// Aligned (TWINS, ours): windows are fixed slots of the clock, [k*Window,
	// (k+1)*Window), and node n serves server (k + n) mod Servers in slot k,
	// so I/O nodes whose clocks agree serve different servers at every
	// instant however late each calls Next (default false: the reference,
	// where each window starts at the first Next after the previous one
	// ended and the nodes drift apart).
	Aligned bool

	MaxAggregate int64         // largest aggregated batch in bytes for aggregating algorithms (default 1 MiB)
	MaxBatch     int           // most requests in one batch (default 16, IOFSL's)
	Quantum      int64         // HBRR / WFQ / aIOLi / MLF quantum in bytes (default 1 MiB)
	Weights      []float64     // WFQ weight per queue, len 0 or Servers, each > 0 (default all 1)
	Timeslice    time.Duration // aIOLi / MLF: time after which a waiting request's quantum grows by Quantum; aIOLi's initial per-stream time quantum (default 1 ms)
	SWWindow     time.Duration // SW (static windows): requests are grouped by arrival into consecutive windows of this length (default 1 ms)
}

// Defaults of the Config fields.
const (
	DefaultWindow       = time.Millisecond
	DefaultMaxAggregate = 1 << 20
	DefaultMaxBatch     = 16
	DefaultQuantum      = 1 << 20
	DefaultTimeslice    = time.Millisecond
	DefaultSWWindow     = time.Millisecond
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Nodes == 0 {
		c.Nodes = c.Node + 1
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MaxAggregate == 0 {
		c.MaxAggregate = DefaultMaxAggregate
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Quantum == 0 {
		c.Quantum = DefaultQuantum
	}
	if c.Timeslice == 0 {
		c.Timeslice = DefaultTimeslice
	}
	if c.SWWindow == 0 {
		c.SWWindow = DefaultSWWindow
	}
	return c
}

// Validate checks a Config after defaults; the error wraps ErrBadConfig.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Servers < 1:
		return bad("Servers = %d, want >= 1", c.Servers)
	case c.Node < 0:
		return bad("Node = %d, want >= 0", c.Node)
	case c.Nodes < 1 || c.Node >= c.Nodes:
		return bad("Nodes = %d with Node = %d, want Nodes >= 1 and Node < Nodes", c.Nodes, c.Node)
	case c.Window <= 0:
		return bad("Window = %v, want > 0", c.Window)
	case c.MaxAggregate <= 0:
		return bad("MaxAggregate = %d, want > 0 bytes", c.MaxAggregate)
	case c.MaxBatch < 1:
		return bad("MaxBatch = %d, want >= 1", c.MaxBatch)
	case c.Quantum <= 0:
		return bad("Quantum = %d, want > 0 bytes", c.Quantum)
	case c.Timeslice <= 0:
		return bad("Timeslice = %v, want > 0", c.Timeslice)
	case c.SWWindow <= 0:
		return bad("SWWindow = %v, want > 0", c.SWWindow)
	case len(c.Weights) != 0 && len(c.Weights) != c.Servers:
		return bad("len(Weights) = %d, want 0 or Servers = %d", len(c.Weights), c.Servers)
	}
	for i, w := range c.Weights {
		if !(w > 0) || w > 1e12 {
			return bad("Weights[%d] = %v, want a finite value > 0", i, w)
		}
	}
	return nil
}
