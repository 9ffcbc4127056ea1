//go:build !linux

package sched

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
