package access

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/sched"
)

// TestAccumulatorMemoryBound: the offsets kept across intervals are those
// of the files and (process, file) pairs seen in the last closed interval,
// however many came before.
func TestAccumulatorMemoryBound(t *testing.T) {
	var a Accumulator
	// Interval 1: 1,000 processes on 10 files each.
	for p := range 1000 {
		for f := range 10 {
			a.Request(0, uint64(p), uint64(f), int64(p), 1, sched.Read)
		}
	}
	a.Close(0, 0, time.Second, 1, 0)
	if len(a.procs) != 10000 || len(a.files) != 10 {
		t.Fatalf("after interval 1: %d (process, file) and %d file offsets kept, want 10000 and 10", len(a.procs), len(a.files))
	}
	// Interval 2: 3 processes on file 0 only.
	for p := range 3 {
		a.Request(0, uint64(p), 0, 0, 1, sched.Read)
	}
	a.Close(0, time.Second, time.Second, 1, 0)
	if len(a.procs) != 3 || len(a.files) != 1 {
		t.Fatalf("after interval 2: %d (process, file) and %d file offsets kept, want 3 and 1", len(a.procs), len(a.files))
	}
	if len(a.clients) != 0 || len(a.processes) != 0 || a.nFiles != 0 {
		t.Fatalf("per-interval sets not cleared: %d, %d, %d", len(a.clients), len(a.processes), a.nFiles)
	}
	for _, ps := range a.procs {
		if ps.seen {
			t.Fatal("a (process, file) pair still marked seen after Close")
		}
	}
	// An idle interval forgets everything.
	a.Close(0, 2*time.Second, time.Second, 1, 0)
	if len(a.procs) != 0 || len(a.files) != 0 {
		t.Fatalf("after an idle interval: %d and %d offsets kept, want none", len(a.procs), len(a.files))
	}
}

func TestFeatureIndex(t *testing.T) {
	for i, n := range FeatureNames {
		if FeatureIndex(n) != i {
			t.Errorf("FeatureIndex(%q) = %d, want %d", n, FeatureIndex(n), i)
		}
	}
	if FeatureIndex("nope") != -1 {
		t.Error("FeatureIndex of an unknown name")
	}
}
