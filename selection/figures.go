package selection

import (
	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// FiguresOf returns what an I/O node's observation of one interval tells a
// Driver: the bytes completed, those of them read (the majority
// operation's bytes when it read, else the rest), and the requests
// completed. An observation that does not count them (a report to the
// Council does not carry them) counts one when it completed bytes, so a
// period with bytes is judged (DriverConfig.MinRequests 1). The simulator's
// one choice for every node and the Council's choice for the group sum
// these over the nodes (Add).
func FiguresOf(o access.Observation) Figures {
	op := min(max(o.OpBytes, 0), o.Bytes)
	read := o.Bytes - op
	if o.Op == rw.Read {
		read = op
	}
	f := Figures{Bytes: o.Bytes, ReadBytes: read, Served: o.Completed}
	if f.Served == 0 && f.Bytes > 0 {
		f.Served = 1
	}
	return f
}

// Add returns the sum of f and g: two nodes' figures of one interval, or
// one node's of two.
func (f Figures) Add(g Figures) Figures {
	return Figures{Bytes: f.Bytes + g.Bytes, ReadBytes: f.ReadBytes + g.ReadBytes, Served: f.Served + g.Served}
}
