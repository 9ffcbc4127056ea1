//go:build unix

package learn

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the process has used. The
// benchmarks report it beside wall time because the wall time of a loaded
// shared machine overstates the cost.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
