package access_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

func TestAccumulatorInterval(t *testing.T) {
	var a access.Accumulator
	// Two processes on one client, a shared file, 1D-strided 32 KiB requests.
	const sz = 32 << 10
	for i := 0; i < 4; i++ {
		for p := 0; p < 2; p++ {
			a.Request(7, uint64(p), 42, int64(i*2+p)*sz, sz, rw.Read)
			a.Done(sz)
		}
	}
	o := a.Close(3, time.Second, time.Second, 4, 2*time.Millisecond)
	want := access.Observation{
		Node: 3, Start: time.Second, Interval: time.Second, DataServers: 4, Clients: 1, Processes: 2,
		Op: rw.Read, FileHandles: 1, ReqAvg: sz, ReqMin: sz, ReqMax: sz, OffsetDist: sz, ProcDist: 2 * sz,
		Sharers: 2, Bandwidth: 8 * sz, Bytes: 8 * sz, Requests: 8, Completed: 8, Window: 2 * time.Millisecond,
	}
	if o != want {
		t.Fatalf("got  %+v\nwant %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// The next interval starts empty but remembers the last offset per file.
	idle := a.Close(3, 2*time.Second, time.Second, 4, 0)
	if !idle.Idle() || idle.Requests != 0 || idle.Clients != 0 {
		t.Fatalf("second interval not idle: %+v", idle)
	}
}

// TestSharersRememberTheFilesProcesses: the last rank of a shared
// contiguous write, left writing its block alone, still shows the file's
// four writers, where a file per process shows one; a process drops out
// SharerMemory after its last access, and reads do not count writers.
func TestSharersRememberTheFilesProcesses(t *testing.T) {
	const sz = 256 << 10
	var shared, fpp access.Accumulator
	at := func(i int) time.Duration { return time.Duration(i) * time.Second }
	// Second 0: four ranks write their blocks of file 9 (shared) or of
	// their own files 0 to 3 (file per process).
	for r := range 4 {
		for i := range 8 {
			shared.Request(0, uint64(r), 9, int64(r)<<30+int64(i)*sz, sz, rw.Write)
			fpp.Request(0, uint64(r), uint64(r), int64(i)*sz, sz, rw.Write)
		}
	}
	if o := shared.Close(0, at(0), time.Second, 1, 0); o.Sharers != 4 {
		t.Fatalf("shared file, four ranks: Sharers %v, want 4", o.Sharers)
	}
	if o := fpp.Close(0, at(0), time.Second, 1, 0); o.Sharers != 1 || o.FileHandles != 4 {
		t.Fatalf("file per process: Sharers %v, file handles %d, want 1 and 4", o.Sharers, o.FileHandles)
	}
	// Seconds 1 to 10: rank 3 alone, on both.
	var lone, own access.Observation
	for s := 1; s <= 10; s++ {
		for i := range 8 {
			shared.Request(0, 3, 9, 3<<30+int64(8*s+i)*sz, sz, rw.Write)
			fpp.Request(0, 3, 3, int64(8*s+i)*sz, sz, rw.Write)
		}
		lone, own = shared.Close(0, at(s), time.Second, 1, 0), fpp.Close(0, at(s), time.Second, 1, 0)
		if s < 10 && (lone.Sharers != 4 || own.Sharers != 1) {
			t.Fatalf("second %d, rank 3 alone: Sharers %v (shared) and %v (file per process), want 4 and 1", s, lone.Sharers, own.Sharers)
		}
	}
	// Second 10 ends 10 s after second 0: the other ranks are forgotten.
	if lone.Processes != 1 || lone.ProcDist != own.ProcDist || lone.Sharers != 1 {
		t.Fatalf("second 10: processes %d, distances %v and %v, Sharers %v; want 1, equal, 1", lone.Processes, lone.ProcDist, own.ProcDist, lone.Sharers)
	}
	// A reader of the file counts the readers alone.
	shared.Request(0, 5, 9, 0, sz, rw.Read)
	if o := shared.Close(0, at(11), time.Second, 1, 0); o.Op != rw.Read || o.Sharers != 1 {
		t.Fatalf("one reader after the writers: op %v, Sharers %v, want read and 1", o.Op, o.Sharers)
	}
}

func TestAccumulatorDistanceAcrossIntervals(t *testing.T) {
	var a access.Accumulator
	a.Request(0, 0, 1, 0, 100, rw.Write)
	a.Close(0, 0, time.Second, 1, 0)
	a.Request(0, 0, 1, 1000, 100, rw.Write)
	o := a.Close(0, time.Second, time.Second, 1, 0)
	if o.OffsetDist != 1000 {
		t.Fatalf("distance across intervals: got %v, want 1000", o.OffsetDist)
	}
	// A file unseen for a whole interval is forgotten: no distance next time.
	a.Close(0, 2*time.Second, time.Second, 1, 0)
	a.Request(0, 0, 1, 5000, 100, rw.Write)
	if o := a.Close(0, 3*time.Second, time.Second, 1, 0); o.OffsetDist != 0 {
		t.Fatalf("stale distance kept: got %v, want 0", o.OffsetDist)
	}
}

// TestProcDistInterleavings checks the per-(process, file) offset distance:
// the request size for contiguous access and processes x request size for
// 1D-strided access, whatever order the processes' requests arrive in, while
// the per-file distance depends on that order.
func TestProcDistInterleavings(t *testing.T) {
	const (
		sz     = 4096
		procs  = 4
		rounds = 16
	)
	// offset of process p's i-th request in a shared file.
	contiguous := func(p, i int) int64 { return int64(p*rounds+i) * sz }
	strided := func(p, i int) int64 { return int64(i*procs+p) * sz }
	// Orders in which a round's processes arrive.
	inOrder := func(int) []int { return []int{0, 1, 2, 3} }
	reversed := func(int) []int { return []int{3, 2, 1, 0} }
	drifting := func(i int) []int { // process 3 runs a round behind in odd rounds
		if i%2 == 1 {
			return []int{3, 0, 1, 2}
		}
		return []int{0, 1, 2, 3}
	}
	tests := []struct {
		name   string
		offset func(p, i int) int64
		order  func(round int) []int
		want   float64
	}{
		{"contiguous in order", contiguous, inOrder, sz},
		{"contiguous reversed", contiguous, reversed, sz},
		{"contiguous drifting", contiguous, drifting, sz},
		{"strided in order", strided, inOrder, procs * sz},
		{"strided reversed", strided, reversed, procs * sz},
		{"strided drifting", strided, drifting, procs * sz},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a access.Accumulator
			for i := range rounds {
				for _, p := range tt.order(i) {
					a.Request(uint32(p/2), uint64(p), 9, tt.offset(p, i), sz, rw.Write)
				}
			}
			o := a.Close(0, 0, time.Second, 1, 0)
			if o.ProcDist != tt.want {
				t.Errorf("ProcDist %v, want %v (OffsetDist %v)", o.ProcDist, tt.want, o.OffsetDist)
			}
		})
	}
}

// TestProcDistKeyedByProcessAndFile: a process alternating between two
// files measures each file's distance separately, and two processes on one
// file do not mix.
func TestProcDistKeyedByProcessAndFile(t *testing.T) {
	var a access.Accumulator
	for i := range 4 {
		a.Request(0, 1, 10, int64(i)*100, 100, rw.Read)           // file 10: step 100
		a.Request(0, 1, 11, 1_000_000+int64(i)*300, 100, rw.Read) // file 11: step 300
	}
	if o := a.Close(0, 0, time.Second, 1, 0); o.ProcDist != 200 {
		t.Fatalf("ProcDist %v, want 200 (mean of 100 and 300)", o.ProcDist)
	}
}

func TestProcDistAcrossIntervals(t *testing.T) {
	var a access.Accumulator
	a.Request(0, 5, 1, 0, 100, rw.Write)
	a.Close(0, 0, time.Second, 1, 0)
	a.Request(0, 5, 1, 700, 100, rw.Write)
	if o := a.Close(0, time.Second, time.Second, 1, 0); o.ProcDist != 700 {
		t.Fatalf("distance across intervals: got %v, want 700", o.ProcDist)
	}
	// A (process, file) unseen for a whole interval is forgotten.
	a.Close(0, 2*time.Second, time.Second, 1, 0)
	a.Request(0, 5, 1, 5000, 100, rw.Write)
	if o := a.Close(0, 3*time.Second, time.Second, 1, 0); o.ProcDist != 0 {
		t.Fatalf("stale distance kept: got %v, want 0", o.ProcDist)
	}
}

func TestMajorityOpByBytes(t *testing.T) {
	var a access.Accumulator
	a.Request(0, 0, 1, 0, 10, rw.Read)
	a.Request(0, 0, 1, 0, 10, rw.Read)
	a.Request(0, 1, 2, 0, 100, rw.Write)
	if o := a.Close(0, 0, time.Second, 1, 0); o.Op != rw.Write {
		t.Fatalf("majority op: got %v, want write", o.Op)
	}
}

func TestValidateRejects(t *testing.T) {
	good := access.Observation{Requests: 1, Op: rw.Read, ReqMin: 1, ReqMax: 3, ReqAvg: 2}
	if err := good.Validate(); err != nil {
		t.Fatalf("good observation rejected: %v", err)
	}
	tests := []struct {
		name string
		mod  func(*access.Observation)
	}{
		{"negative node", func(o *access.Observation) { o.Node = -1 }},
		{"negative bytes", func(o *access.Observation) { o.Bytes = -1 }},
		{"NaN bandwidth", func(o *access.Observation) { o.Bandwidth = math.NaN() }},
		{"infinite distance", func(o *access.Observation) { o.OffsetDist = math.Inf(1) }},
		{"negative process distance", func(o *access.Observation) { o.ProcDist = -1 }},
		{"NaN process distance", func(o *access.Observation) { o.ProcDist = math.NaN() }},
		{"bad op", func(o *access.Observation) { o.Op = 9 }},
		{"min above max", func(o *access.Observation) { o.ReqMin = 5 }},
		{"avg above max", func(o *access.Observation) { o.ReqAvg = 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.mod(&o)
			if err := o.Validate(); err == nil {
				t.Fatalf("Validate accepted %+v", o)
			}
		})
	}
	bad := good
	bad.Op = 0
	if err := bad.Validate(); !errors.Is(err, rw.ErrBadOp) {
		t.Fatalf("got %v, want ErrBadOp", err)
	}
}

func TestClassRoundTrip(t *testing.T) {
	for i, c := range access.Classes {
		if c.Index() != i {
			t.Errorf("%v.Index() = %d, want %d", c, c.Index(), i)
		}
		got, err := access.ParseClass(c.String())
		if err != nil || got != c {
			t.Errorf("ParseClass(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := access.ParseClass("XX"); err == nil {
		t.Error("ParseClass accepted XX")
	}
	if access.Unknown.Index() != -1 {
		t.Error("Unknown has an index")
	}
}

func ExampleAccumulator() {
	var a access.Accumulator
	a.Request(0, 0, 1, 0, 4096, rw.Write)
	a.Request(0, 0, 1, 4096, 4096, rw.Write)
	a.Done(8192)
	o := a.Close(0, 0, time.Second, 4, time.Millisecond)
	fmt.Println(o.FileHandles, o.ReqAvg, o.OffsetDist, o.Bandwidth, o.Op)
	// Output: 1 4096 4096 8192 write
}

// BenchmarkAccumulatorRequest is the Announcer's cost per request on the
// daemon's data path: one Request (16 processes, each writing its own file
// sequentially) plus a share of one Close per 100,000 requests (about a
// second of 32 KiB requests at 3 GB/s).
func BenchmarkAccumulatorRequest(b *testing.B) {
	var a access.Accumulator
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := uint64(i % 16)
		a.Request(1, p, p, int64(i/16)*32<<10, 32<<10, rw.Write)
		a.Done(32 << 10)
		if i%100000 == 99999 {
			a.Close(0, 0, time.Second, 4, time.Millisecond)
		}
	}
}

// refAccumulator is the definition of an interval's observation, kept
// naive (a set per count, the offsets of every request so far): the
// features are those of the interval's majority operation by bytes
// requested, with offsets remembered per operation; the request count is
// all requests'. The Accumulator must agree with it on every sequence.
type refAccumulator struct {
	reqs     []refReq
	lastFile map[rw.Op]map[uint64]int64
	lastProc map[rw.Op]map[[2]uint64]int64
	history  []refAccess // every request so far, with the end of its interval
}

type refAccess struct {
	end           time.Duration
	op            rw.Op
	process, file uint64
}

// sharers is the mean, over the files the interval ending at end accessed
// with op, of the processes that accessed each with op in an interval
// ending less than SharerMemory before end.
func (r *refAccumulator) sharers(end time.Duration, op rw.Op) float64 {
	procs := map[uint64]map[uint64]bool{}
	for _, h := range r.history {
		if h.op == op && h.end > end-access.SharerMemory {
			if procs[h.file] == nil {
				procs[h.file] = map[uint64]bool{}
			}
			procs[h.file][h.process] = true
		}
	}
	var n, files int
	for f, ps := range procs {
		if slices.ContainsFunc(r.reqs, func(q refReq) bool { return q.op == op && q.file == f }) {
			n += len(ps)
			files++
		}
	}
	if files == 0 {
		return 0
	}
	return float64(n) / float64(files)
}

type refReq struct {
	client         uint32
	process, file  uint64
	offset, length int64
	op             rw.Op
}

func (r *refAccumulator) close(end time.Duration) (clients, processes, files int, dist, pdist, sharers float64, n int64) {
	for _, q := range r.reqs {
		r.history = append(r.history, refAccess{end, q.op, q.process, q.file})
	}
	if r.lastFile == nil {
		r.lastFile, r.lastProc = map[rw.Op]map[uint64]int64{}, map[rw.Op]map[[2]uint64]int64{}
	}
	bytes := map[rw.Op]int64{}
	for _, q := range r.reqs {
		bytes[q.op] += q.length
	}
	var major rw.Op
	switch {
	case bytes[rw.Write] > bytes[rw.Read]:
		major = rw.Write
	case bytes[rw.Read] > 0:
		major = rw.Read
	}
	for _, op := range []rw.Op{rw.Read, rw.Write} {
		cs, ps, fs := map[uint32]bool{}, map[uint64]bool{}, map[uint64]bool{}
		var dSum, pSum float64
		var dN, pN int
		if r.lastFile[op] == nil {
			r.lastFile[op], r.lastProc[op] = map[uint64]int64{}, map[[2]uint64]int64{}
		}
		lastFile, lastProc := r.lastFile[op], r.lastProc[op]
		seenPairs := map[[2]uint64]bool{}
		// Each pair's offsets of the interval, after the last one of the
		// interval before: their span over their steps.
		points := map[[2]uint64][]int64{}
		for _, q := range r.reqs {
			if q.op != op {
				continue
			}
			cs[q.client], ps[q.process], fs[q.file] = true, true, true
			if prev, ok := lastFile[q.file]; ok {
				dSum += math.Abs(float64(q.offset - prev))
				dN++
			}
			lastFile[q.file] = q.offset
			k := [2]uint64{q.process, q.file}
			seenPairs[k] = true
			if _, ok := points[k]; !ok {
				if prev, ok := lastProc[k]; ok {
					points[k] = []int64{prev}
				}
			}
			points[k] = append(points[k], q.offset)
			lastProc[k] = q.offset
		}
		for _, pts := range points {
			pSum += float64(slices.Max(pts) - slices.Min(pts))
			pN += len(pts) - 1
		}
		// Offsets are remembered only for what the interval saw.
		for f := range lastFile {
			if !fs[f] {
				delete(lastFile, f)
			}
		}
		for k := range lastProc {
			if !seenPairs[k] {
				delete(lastProc, k)
			}
		}
		if op != major {
			continue
		}
		clients, processes, files = len(cs), len(ps), len(fs)
		if dN > 0 {
			dist = dSum / float64(dN)
		}
		if pN > 0 {
			pdist = pSum / float64(pN)
		}
		sharers = r.sharers(end, op)
	}
	n = int64(len(r.reqs))
	r.reqs = nil
	return clients, processes, files, dist, pdist, sharers, n
}

func TestAccumulatorMatchesDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a access.Accumulator
		var ref refAccumulator
		var start time.Duration
		for iv := range rapid.IntRange(1, 6).Draw(t, "intervals") {
			// Gaps of idle seconds between intervals (the sharers outlive some).
			start += time.Duration(rapid.IntRange(1, 6).Draw(t, "gap")) * time.Second
			for range rapid.IntRange(0, 40).Draw(t, "requests") {
				process := uint64(rapid.IntRange(0, 4).Draw(t, "process"))
				q := refReq{
					client:  uint32(process % 3), // a process belongs to one client
					process: process,
					file:    uint64(rapid.IntRange(0, 3).Draw(t, "file")),
					offset:  rapid.Int64Range(0, 1<<20).Draw(t, "offset"),
					length:  rapid.Int64Range(1, 1<<16).Draw(t, "length"),
					op:      rw.Op(rapid.IntRange(int(rw.Read), int(rw.Write)).Draw(t, "op")),
				}
				a.Request(q.client, q.process, q.file, q.offset, q.length, q.op)
				ref.reqs = append(ref.reqs, q)
			}
			o := a.Close(0, start, time.Second, 4, 0)
			c, p, f, d, pd, sh, n := ref.close(start + time.Second)
			if o.Clients != c || o.Processes != p || o.FileHandles != f || o.Requests != n {
				t.Fatalf("interval %d: clients/processes/files/requests %d/%d/%d/%d, want %d/%d/%d/%d",
					iv, o.Clients, o.Processes, o.FileHandles, o.Requests, c, p, f, n)
			}
			if math.Abs(o.OffsetDist-d) > 1e-6*(1+d) || math.Abs(o.ProcDist-pd) > 1e-6*(1+pd) {
				t.Fatalf("interval %d: distances %v/%v, want %v/%v", iv, o.OffsetDist, o.ProcDist, d, pd)
			}
			if math.Abs(o.Sharers-sh) > 1e-9 {
				t.Fatalf("interval %d: sharers %v, want %v", iv, o.Sharers, sh)
			}
		}
	})
}

// A read phase of 200 ms inside a 1 s interval, after the tail of a write
// phase: the interval's bandwidth is diluted by the idle rest of the
// second, its operation's bandwidth is the reads' own while they ran.
func TestOpSpanMeasuresThePhaseNotTheInterval(t *testing.T) {
	var a access.Accumulator
	const sz = 1 << 20
	ms := time.Millisecond
	// The interval is [1 s, 2 s). The write tail: started in the interval
	// before, ended 100 ms into this one.
	a.Request(1, 1, 1, 0, sz, rw.Write)
	a.Done(sz)
	a.Served(rw.Write, 900*ms, 1100*ms, sz)
	// 64 reads of 1 MiB between 300 and 500 ms into the interval.
	for i := range 64 {
		a.Request(1, 1, 2, int64(i)*sz, sz, rw.Read)
		a.Done(sz)
		a.Served(rw.Read, 1300*ms+time.Duration(i)*3*ms, 1310*ms+time.Duration(i)*3*ms, sz)
	}
	a.Served(rw.Op(0), 0, 2*time.Second, 1) // no operation: ignored
	o := a.Close(0, time.Second, time.Second, 4, 0)
	if o.Op != rw.Read || o.OpBytes != 64*sz || o.OpSpan != 199*ms {
		t.Fatalf("op %v bytes %d span %v; want read, %d, 199ms", o.Op, o.OpBytes, o.OpSpan, 64*sz)
	}
	if got, want := o.OpBandwidth(), float64(64*sz)/0.199; math.Abs(got-want) > 1 {
		t.Fatalf("OpBandwidth %v, want %v", got, want)
	}
	if o.Bandwidth > o.OpBandwidth()/4 {
		t.Fatalf("interval bandwidth %v not diluted against %v", o.Bandwidth, o.OpBandwidth())
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	// The write tail's span is clipped to the interval.
	a.Request(1, 1, 1, sz, sz, rw.Write)
	a.Served(rw.Write, 1900*ms, 2100*ms, sz)
	if o := a.Close(0, 2*time.Second, time.Second, 4, 0); o.Op != rw.Write || o.OpSpan != 100*ms {
		t.Fatalf("clipped span %v (op %v), want 100ms of writes", o.OpSpan, o.Op)
	}
	// Nothing served: nothing measured.
	if o := a.Close(0, 3*time.Second, time.Second, 4, 0); o.OpBytes != 0 || o.OpSpan != 0 || o.OpBandwidth() != 0 {
		t.Fatalf("idle interval: %d bytes over %v", o.OpBytes, o.OpSpan)
	}
	bad := access.Observation{Interval: time.Second, OpSpan: 2 * time.Second}
	if err := bad.Validate(); err == nil {
		t.Fatal("an operation span longer than the interval validated")
	}
}

// One process's strided requests (stride 4 request sizes) arriving out of
// order, as a mount's write-behind sends them from several kernel threads:
// the per-process distance is still the stride, where the mean distance
// between consecutive arrivals would be several strides; in order, it is
// the same.
func TestProcDistIgnoresArrivalOrder(t *testing.T) {
	const size, stride = 32 << 10, 128 << 10
	offsets := []int64{0, 5, 1, 7, 2, 6, 3, 4}
	for _, order := range []string{"shuffled", "in order"} {
		var a access.Accumulator
		a.Close(0, 0, time.Second, 4, 0)
		for i, k := range offsets {
			if order == "in order" {
				k = int64(i)
			}
			a.Request(1, 1, 1, k*stride, size, rw.Write)
		}
		if o := a.Close(0, time.Second, time.Second, 4, 0); o.ProcDist != stride {
			t.Errorf("%s: per-process distance %v, want the stride %d", order, o.ProcDist, stride)
		}
		// The next interval continues from the last offset of this one.
		a.Request(1, 1, 1, 8*stride, size, rw.Write)
		if o := a.Close(0, 2*time.Second, time.Second, 4, 0); order == "in order" && o.ProcDist != stride {
			t.Errorf("%s, next interval: per-process distance %v, want %d", order, o.ProcDist, stride)
		}
	}
}
