package ionode_test

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// BenchmarkNextBehindPerServerLimit dispatches large requests through a
// per-server limit, the case that holds thousands of batches: 64 files
// written in 16 MiB requests of 64 KiB pieces striped over 4 data servers
// (16,384 pieces queued), at most 2 accesses in flight per server, up to 64
// pieces joined per access; one op is one access dispatched and completed.
func BenchmarkNextBehindPerServerLimit(b *testing.B) {
	const piece, files, perFile = 64 << 10, 64, 256
	sw, err := sched.NewSwitcher("fifo", sched.Config{Servers: 4})
	if err != nil {
		b.Fatal(err)
	}
	n := ionode.New(sw, ionode.Config{Aggregate: 64, PerServer: 2})
	var id uint64
	refill := func(now time.Duration) {
		for f := range files {
			for p := range perFile {
				id++
				q := p % 4
				if err := n.Add(now, sched.Request{ID: id, Queue: q, File: uint64(f + 1), Offset: int64(p/4) * piece, Length: piece, Op: rw.Write}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	var inflight []ionode.Access
	now := time.Duration(0)
	for b.Loop() {
		now += time.Microsecond
		if !n.Pending() && len(inflight) == 0 {
			refill(now)
		}
		a, ok, _ := n.Next(now, nil)
		if ok {
			inflight = append(inflight, a)
			continue
		}
		a = inflight[0]
		inflight = inflight[1:]
		if err := n.Done(now, a, a.Length, time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}
