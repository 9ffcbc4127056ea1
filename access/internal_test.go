package access

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// TestAccumulatorMemoryBound: the offsets kept across intervals are those
// of the files and (process, file) pairs seen in the last closed interval,
// however many came before.
func TestAccumulatorMemoryBound(t *testing.T) {
	var acc Accumulator
	a := &acc.ops[rw.Read]
	// Interval 1: 1,000 processes on 10 files each.
	for p := range 1000 {
		for f := range 10 {
			acc.Request(0, uint64(p), uint64(f), int64(p), 1, rw.Read)
		}
	}
	acc.Close(0, 0, time.Second, 1, 0)
	if len(a.procs) != 10000 || len(a.files) != 10 {
		t.Fatalf("after interval 1: %d (process, file) and %d file offsets kept, want 10000 and 10", len(a.procs), len(a.files))
	}
	// Interval 2: 3 processes on file 0 only.
	for p := range 3 {
		acc.Request(0, uint64(p), 0, 0, 1, rw.Read)
	}
	acc.Close(0, time.Second, time.Second, 1, 0)
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
	acc.Close(0, 2*time.Second, time.Second, 1, 0)
	if len(a.procs) != 0 || len(a.files) != 0 {
		t.Fatalf("after an idle interval: %d and %d offsets kept, want none", len(a.procs), len(a.files))
	}
	// The files' sharers are kept for SharerMemory, then forgotten.
	if n := len(a.share); n != 10 {
		t.Fatalf("sharers remembered for %d files, want 10", n)
	}
	acc.Close(0, SharerMemory, time.Second, 1, 0)
	if n := len(a.share); n != 1 || len(a.share[0]) != 3 {
		t.Fatalf("after SharerMemory: sharers of %d files (file 0: %d), want 1 file of 3", n, len(a.share[0]))
	}
	acc.Close(0, SharerMemory+time.Second, time.Second, 1, 0)
	if n := len(a.share); n != 0 {
		t.Fatalf("sharers of %d files kept after SharerMemory with no access, want none", n)
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

// An interval that spans the end of a phase and the start of the next
// describes the phase that moved more bytes in it, not a mix of both: the
// second of a shared-file read that also saw the first file-per-process
// writes of the next phase has one file handle.
func TestIntervalDescribesItsMajorityOperation(t *testing.T) {
	var a Accumulator
	const req = 32 << 10
	// Shared 1D-strided read of 16 processes, 8 rounds: most of the bytes.
	for round := range 8 {
		for p := range 16 {
			a.Request(0, uint64(p), 1, int64(round*16+p)*req, req, rw.Read)
		}
	}
	// The next phase starts: 16 processes each write their own file once.
	for p := range 16 {
		a.Request(0, uint64(p), uint64(100+p), 0, req, rw.Write)
	}
	o := a.Close(0, 0, time.Second, 4, 0)
	if o.Op != rw.Read || o.FileHandles != 1 || o.ProcDist != 16*req || o.Requests != 8*16+16 {
		t.Errorf("mixed interval: op %v, %d file handles, per-process distance %v, %d requests; want read, 1, %d, %d",
			o.Op, o.FileHandles, o.ProcDist, o.Requests, 16*req, 8*16+16)
	}
	// The following interval, all writes, is the writes' alone, with the
	// offsets each file's previous write left.
	for p := range 16 {
		a.Request(0, uint64(p), uint64(100+p), req, req, rw.Write)
	}
	if o := a.Close(0, time.Second, time.Second, 4, 0); o.Op != rw.Write || o.FileHandles != 16 || o.ProcDist != req {
		t.Errorf("write interval: op %v, %d file handles, per-process distance %v; want write, 16, %d", o.Op, o.FileHandles, o.ProcDist, req)
	}
}
