package sched

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time consumed by the calling OS thread (the
// caller locks itself to it), so that benchmarks on a busy machine can
// report cost apart from waiting for a core.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
