package tune

import (
	"fmt"
	"math"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// Pattern is a workload as an I/O node sees it in one interval: Key names
// it, Features place it among the others (a pattern not met before starts
// from what was learnt on the nearest ones). The zero Pattern is unknown.
type Pattern struct {
	Key      string
	Features [4]float64
}

// PatternOf is the pattern of an I/O node's interval (access.Observation):
// the operation, one file per process or shared files, the request size
// (to the nearest power of two) and whether client nodes run one process
// or several. The number of processes is not part of it beyond that: an
// interval of large requests sees only the processes whose requests
// completed in it, which the knobs themselves change. An idle interval has
// the zero Pattern.
func PatternOf(o access.Observation) Pattern {
	if o.Idle() || o.ReqAvg <= 0 {
		return Pattern{}
	}
	op, layout, procs := "read", "shared", "1"
	var f [4]float64
	if o.Op == rw.Write {
		op, f[0] = "write", 2
	}
	if o.FileHandles > 1 && o.FileHandles >= o.Processes {
		layout, f[1] = "fpp", 1
	}
	size := math.Round(math.Log2(o.ReqAvg))
	f[2] = size / 2
	if o.Processes > max(o.Clients, 1) {
		procs, f[3] = "n", 1
	}
	return Pattern{Key: fmt.Sprintf("%s-%s-%s-%sppc", op, layout, sizeName(int64(math.Exp2(size))), procs), Features: f}
}

// sizeName writes a power-of-two size in KiB, MiB or GiB.
func sizeName(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%dg", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%dm", b>>20)
	case b >= 1<<10:
		return fmt.Sprintf("%dk", b>>10)
	}
	return fmt.Sprintf("%d", b)
}
