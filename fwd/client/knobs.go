package client

import (
	"fmt"
	"io/fs"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// Bounds of SetMaxIO.
const (
	// MinMaxIO is the smallest request size SetMaxIO accepts.
	MinMaxIO = 4 << 10
	// MaxMaxIO is the largest request size a client sends (a frame of the
	// protocol's default size, with room for its header and fields).
	MaxMaxIO = fwdproto.DefaultMaxFrame - 4096
)

// MaxIO returns the largest read or write the client sends in one request
// now: the size asked for (Options.MaxIO, SetMaxIO), within what the
// daemon's frames carry.
func (c *Client) MaxIO() int { return c.maxIO() }

// SetMaxIO sets the largest read or write sent in one request (MinMaxIO to
// MaxMaxIO bytes; a daemon with smaller frames bounds it further). It
// applies to calls made from now on: requests already split keep their
// size. Safe for concurrent use with I/O.
func (c *Client) SetMaxIO(n int) error {
	if n < MinMaxIO || n > MaxMaxIO {
		return fmt.Errorf("fwd: request size %d outside [%d, %d]: %w", n, MinMaxIO, MaxMaxIO, fs.ErrInvalid)
	}
	c.wantIO.Store(int64(n))
	return nil
}

// MaxInFlight returns the most reads and writes the client keeps
// outstanding (0: no limit).
func (c *Client) MaxInFlight() int {
	l, _, _, _ := c.gate.state()
	return l
}

// SetMaxInFlight sets the most reads and writes outstanding at once
// (n >= 0; 0: no limit). Requests already sent are not affected; lowering
// the limit makes new ones wait until enough of them are answered, raising
// it sends waiting ones at once, in their order of arrival. Safe for
// concurrent use with I/O.
func (c *Client) SetMaxInFlight(n int) error {
	if n < 0 {
		return fmt.Errorf("fwd: requests in flight %d: %w", n, fs.ErrInvalid)
	}
	c.gate.setLimit(n)
	return nil
}

// Stats are a client's counters of reads and writes.
type Stats struct {
	ReadBytes  int64 // bytes read, since Dial
	WriteBytes int64 // bytes the daemon acknowledged as written, since Dial
	Requests   int64 // reads and writes sent (after splitting at MaxIO), since Dial
	InFlight   int   // reads and writes outstanding now
	Waiting    int   // reads and writes waiting for room under MaxInFlight now
	// WaitingBytes is the bytes of the waiting requests: what the
	// application has handed the client and the daemon has not received.
	WaitingBytes int64
}

// Stats returns the client's counters. Safe for concurrent use.
func (c *Client) Stats() Stats {
	_, inflight, waiting, wb := c.gate.state()
	return Stats{ReadBytes: c.readBytes.Load(), WriteBytes: c.writeBytes.Load(), Requests: c.sent.Load(),
		InFlight: inflight, Waiting: waiting, WaitingBytes: wb}
}

// begin waits for room to send a read or write of n bytes.
func (c *Client) begin(n int) {
	c.gate.acquire(int64(n))
	c.sent.Add(1)
}

// end records that a read or write begun has been answered, moving n bytes.
func (c *Client) end(n int, write bool) {
	c.gate.release()
	if write {
		c.writeBytes.Add(int64(n))
	} else {
		c.readBytes.Add(int64(n))
	}
}
