// Package testnet holds network helpers for tests.
package testnet

import (
	"net"
	"testing"
)

// FreePorts returns n TCP ports of 127.0.0.1 free at the time of the call
// (all held at once, so they differ).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}
