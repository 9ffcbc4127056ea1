package sched

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkSteadyState measures one request in and (on average) one request
// out, dispatch and completion included, with 10,000 requests queued over
// 1,000 files and 8 servers. ns/op and allocs/op are per request; cpu-ns/op
// is the CPU time of the benchmarking thread per request (Linux), which stays
// meaningful when other work competes for the cores.
func BenchmarkSteadyState(b *testing.B) {
	const backlog, files, servers = 10000, 1000, 8
	stream := Stream(StreamConfig{Requests: 1 << 16, Files: files, Servers: servers, Seed: 1})
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			s, err := New(name, Config{Servers: servers})
			if err != nil {
				b.Fatal(err)
			}
			d := &Driver{S: s, Backlog: backlog, Tick: time.Microsecond}
			id := uint64(0)
			push := func(i int) {
				r := stream[i&(len(stream)-1)]
				id++
				r.ID = id
				// Offsets keep growing across laps of the stream so requests stay distinct.
				r.Offset += int64(i/len(stream)) * (1 << 36)
				if err := d.Push(r); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 4 * backlog { // warm up: fill the backlog, reach steady state
				push(i)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, ok := threadCPU()
			for i := range b.N {
				push(4*backlog + i)
			}
			if cpu1, ok1 := threadCPU(); ok && ok1 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
