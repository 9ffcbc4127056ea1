package summary

import (
	"fmt"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Workload turns the job into the simulator's workload: for each of its
// operations (writes, then reads), the pattern that moved most of its
// bytes, as MPI-IO Test would issue it: the job's processes (at most
// maxProcs), its mean request size, its bytes (at most maxBytes), file per
// process or one shared file, contiguous or 1D-strided (random counts as
// strided: non-contiguous accesses to a shared file).
func (s *Summary) Workload(maxBytes int64, maxProcs int) ([]workload.Pattern, error) {
	var out []workload.Pattern
	for _, op := range []rw.Op{rw.Write, rw.Read} {
		bytes := map[Pattern]int64{}
		var ops, total int64
		for _, f := range s.Files {
			o := f.Write
			if op == rw.Read {
				o = f.Read
			}
			bytes[o.Pattern] += o.Bytes
			ops += o.Ops
			total += o.Bytes
		}
		if total == 0 || ops == 0 {
			continue
		}
		best := FPP
		for _, p := range []Pattern{SC, SS, Random} {
			if bytes[p] > bytes[best] {
				best = p
			}
		}
		p := workload.Pattern{Processes: int(min(max(s.Procs, 1), int64(maxProcs))), Op: op, Layout: workload.Shared, Spatiality: workload.Contiguous}
		switch best {
		case FPP:
			p.Layout = workload.FilePerProcess
		case SS, Random:
			p.Spatiality = workload.Strided
		}
		p.RequestSize = max(total/ops, 1)
		per := p.RequestSize * int64(p.Processes)
		p.TotalBytes = max(min(total, maxBytes)/per, 1) * per
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("summary: %s pattern: %w", op, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("summary: the log has no POSIX read or write to replay")
	}
	return out, nil
}
