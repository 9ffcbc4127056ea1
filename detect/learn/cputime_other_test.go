//go:build !unix

package learn

import "time"

func processCPU() time.Duration { return -1 }
