package sim

import (
	"context"
	"testing"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

func benchRun(b *testing.B, cfg Config) {
	b.Helper()
	var events uint64
	for b.Loop() {
		res, err := Run(context.Background(), cfg, Hooks{})
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkExperiment512p8ION is one of the grid's largest experiments:
// 512 processes, 8 I/O nodes, 4 GiB in 32 KiB 1D-strided reads of a shared
// file (target: <= 2 s).
func BenchmarkExperiment512p8ION(b *testing.B) {
	benchRun(b, Config{Patterns: []workload.Pattern{{Processes: 512, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 4 << 30}}, IONodes: 8})
}

// BenchmarkEventsFPPWrite measures events per second on file-per-process writes.
func BenchmarkEventsFPPWrite(b *testing.B) {
	benchRun(b, Config{Patterns: []workload.Pattern{{Processes: 256, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 1 << 30}}, IONodes: 4, Scheduler: "fifo"})
}

// BenchmarkScale is the scale mode: 768 I/O nodes and 49,152 processes
// (Bez et al., FGCS 2020, Table I, Sequoia), 6,144 client nodes, 64 data servers, 8
// requests of 32 KiB per process.
func BenchmarkScale(b *testing.B) {
	benchRun(b, Config{Patterns: []workload.Pattern{{Processes: 49152, Layout: workload.Shared, Spatiality: workload.Strided,
		Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 49152 * 8 * 32 << 10}}, IONodes: 768, ClientNodes: 6144, Servers: 64})
}
