//go:build !unix

package detect

import "time"

func processCPU() time.Duration { return -1 }
