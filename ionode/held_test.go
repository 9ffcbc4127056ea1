package ionode_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// Property: the held batches' index (by data server, and by where each
// batch starts and ends) finds the same batches as asking the join rule
// of every held batch in order: a Node with the default rule and one given
// that rule as its own Continues make the same accesses, whatever the
// requests, limits and completions, and knob changes between them.
func TestHeldIndexMatchesAScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		agg := rapid.IntRange(1, 8).Draw(t, "aggregate")
		per := rapid.IntRange(0, 3).Draw(t, "per-server")
		hold := rapid.IntRange(0, 2).Draw(t, "hold")
		algo := rapid.SampledFrom([]string{"fifo", "twins", "to-agg"}).Draw(t, "scheduler")
		mk := func(rule func(ionode.Access, sched.Batch) bool) *ionode.Node {
			sw, err := sched.NewSwitcher(algo, sched.Config{Servers: 3})
			if err != nil {
				t.Fatal(err)
			}
			return ionode.New(sw, ionode.Config{Aggregate: agg, PerServer: per, Hold: hold, Continues: rule})
		}
		indexed := mk(nil)
		scanned := mk(func(a ionode.Access, b sched.Batch) bool {
			return a.Continues(b, len(b.Requests), a.Requests+len(b.Requests))
		})
		var inflight []ionode.Access
		now := time.Duration(0)
		id := uint64(0)
		for step := range rapid.IntRange(1, 400).Draw(t, "steps") {
			now += time.Duration(rapid.IntRange(0, 300).Draw(t, "dt")) * time.Microsecond
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0, 1, 2, 3:
				id++
				r := sched.Request{ID: id, Queue: rapid.IntRange(0, 2).Draw(t, "queue"), File: uint64(rapid.IntRange(1, 2).Draw(t, "file")),
					Offset: int64(rapid.IntRange(0, 12).Draw(t, "block")) << 12, Length: 4 << 10,
					Op: rw.Op(rapid.IntRange(0, 1).Draw(t, "rw"))}
				e1, e2 := indexed.Add(now, r), scanned.Add(now, r)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("step %d: Add: %v vs %v", step, e1, e2)
				}
			case 4, 5, 6:
				a1, ok1, r1 := indexed.Next(now, nil)
				a2, ok2, r2 := scanned.Next(now, nil)
				if ok1 != ok2 || r1 != r2 || ids(a1) != ids(a2) || fmt.Sprint(a1.Access) != fmt.Sprint(a2.Access) {
					t.Fatalf("step %d: Next: %q %v %v (%+v) vs %q %v %v (%+v)", step, ids(a1), ok1, r1, a1.Access, ids(a2), ok2, r2, a2.Access)
				}
				if ok1 {
					inflight = append(inflight, a1)
				}
			case 7, 8:
				if len(inflight) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(inflight)-1).Draw(t, "done")
				a := inflight[i]
				inflight = append(inflight[:i], inflight[i+1:]...)
				// Both nodes complete the same batches (their Batches are
				// equal, request for request).
				e1, e2 := indexed.Done(now, a, a.Length, time.Millisecond), scanned.Done(now, a, a.Length, time.Millisecond)
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("step %d: Done: %v vs %v", step, e1, e2)
				}
			case 9:
				k := rapid.IntRange(0, 8).Draw(t, "knob")
				if rapid.Bool().Draw(t, "which") {
					indexed.SetAggregate(k)
					scanned.SetAggregate(k)
				} else {
					indexed.SetPerServer(k)
					scanned.SetPerServer(k)
				}
			}
			if indexed.Held() != scanned.Held() {
				t.Fatalf("step %d: %d held vs %d", step, indexed.Held(), scanned.Held())
			}
		}
	})
}
