package dataserver_test

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/rw"
)

// Two I/O nodes interleaving at a server pay the switch cost at every
// change of node.
func Example() {
	s, _ := dataserver.New(dataserver.Config{ReadAheadBytes: -1}, disk.None{}, disk.DefaultPlacement(1<<40), nil)
	var now time.Duration
	for i, node := range []int{0, 1, 1, 0} {
		s.Arrive(dataserver.Access{Node: node, File: 1, Op: rw.Write, Offset: int64(i) << 16, Length: 1 << 16})
		_, d, _ := s.Start(now)
		s.Done()
		now += d
		fmt.Printf("node %d: %v\n", node, d)
	}
	// Output:
	// node 0: 30µs
	// node 1: 330µs
	// node 1: 30µs
	// node 0: 330µs
}
