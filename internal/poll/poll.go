// Package poll waits in tests for a condition, polling with a deadline
// rather than sleeping a fixed time.
package poll

import (
	"testing"
	"time"
)

// Until polls cond every 5 ms until it holds; the test fails, naming what it
// waited for, if timeout passes first.
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
