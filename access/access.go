package access

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// Class is an access-pattern class as the papers define it.
type Class uint8

const (
	// Unknown is the zero Class: no pattern (an interval with no I/O).
	Unknown Class = iota
	// FPP is file per process, contiguous.
	FPP
	// SC is a shared file accessed contiguously (each process its own region).
	SC
	// SS is a shared file accessed 1D-strided (processes interleaved).
	SS
)

// Classes lists the three detectable classes in a fixed order (FPP, SC, SS);
// classifiers index their probability vectors in this order.
var Classes = []Class{FPP, SC, SS}

// String returns "FPP", "SC", "SS" or "unknown".
func (c Class) String() string {
	switch c {
	case FPP:
		return "FPP"
	case SC:
		return "SC"
	case SS:
		return "SS"
	}
	return "unknown"
}

// ParseClass parses "FPP", "SC" or "SS" (case-insensitive).
func ParseClass(s string) (Class, error) {
	switch s {
	case "FPP", "fpp":
		return FPP, nil
	case "SC", "sc":
		return SC, nil
	case "SS", "ss":
		return SS, nil
	}
	return Unknown, fmt.Errorf("access: unknown class %q (want FPP, SC or SS)", s)
}

// Index returns the class's position in Classes, or -1 for Unknown.
func (c Class) Index() int {
	if c >= FPP && c <= SS {
		return int(c) - 1
	}
	return -1
}

// Observation is one I/O node's report for one interval: exactly what the
// Council observes (Bez et al., FGCS 2020, Algorithm 1; Bez et al., 2019 preprint section 4), plus counts.
// Sizes and distances are in bytes, Bandwidth in bytes per second.
type Observation struct {
	Node        int           // I/O node index
	Start       time.Duration // interval start (the reporter's clock)
	Interval    time.Duration // interval length
	DataServers int           // PFS data servers the node forwards to
	Clients     int           // distinct client nodes seen in the interval
	Processes   int           // distinct processes seen in the interval
	Op          rw.Op         // majority operation (by bytes) in the interval
	FileHandles int           // distinct file handles accessed
	ReqAvg      float64       // average request size
	ReqMin      int64         // smallest request
	ReqMax      int64         // largest request
	OffsetDist  float64       // average |offset_i - offset_{i-1}| over consecutive requests to the same file handle
	ProcDist    float64       // same, over consecutive requests of the same process to the same file handle (beyond the papers)
	Sharers     float64       // mean, over the file handles accessed, of the processes that accessed each with Op in the last SharerMemory (beyond the papers)
	Bandwidth   float64       // bytes completed / Interval
	Bytes       int64         // bytes completed in the interval
	Requests    int64         // requests received in the interval
	Completed   int64         // requests completed in the interval (Accumulator.Done calls; not sent to the Council)
	Window      time.Duration // TWINS window in force during the interval (0: not TWINS)
	// OpBytes and OpSpan describe the majority operation's requests served
	// in the interval (Accumulator.Served): their bytes, and the time from
	// the earliest start to the latest end among them, clipped to the
	// interval. OpBytes / OpSpan is the operation's bandwidth while it ran,
	// which a phase shorter than the interval does not dilute (0: not
	// measured, e.g. a reporter that predates them).
	OpBytes int64
	OpSpan  time.Duration
}

// OpBandwidth returns OpBytes / OpSpan (0 when either is 0).
func (o Observation) OpBandwidth() float64 {
	if o.OpBytes <= 0 || o.OpSpan <= 0 {
		return 0
	}
	return float64(o.OpBytes) / o.OpSpan.Seconds()
}

// Idle reports whether the interval saw no I/O; the Council ignores such
// intervals (no reward, no pattern).
func (o Observation) Idle() bool { return o.Requests == 0 && o.Bytes == 0 }

// Features returns the detection features: first the papers' five in their
// order (number of file handles, request size average, minimum and maximum,
// average offset distance per file handle), then ours: the average offset
// distance per (process, file handle), the processes sharing a file
// (Sharers), and the distance in request sizes.
//
// The sixth tells contiguous access (distance = request size) from
// 1D-strided access (processes x request size) whatever the interleaving of
// the processes, which the per-file distance cannot once strided processes
// drift apart. The seventh tells a shared file from a file per process when
// one process is left accessing it (the others have finished their part),
// which no feature of the interval alone can: it remembers who accessed
// the file in the last SharerMemory. The eighth tells contiguous from
// strided whatever the number of processes and the request size (about 1
// for contiguous access, the processes sharing the file for 1D-strided
// access), where a threshold on the sixth learnt from 128 processes takes 8
// strided processes for contiguous ones.
func (o Observation) Features() [NumFeatures]float64 {
	return Derive([NumFeatures]float64{
		FeatFileHandles: float64(o.FileHandles), FeatReqAvg: o.ReqAvg, FeatReqMin: float64(o.ReqMin), FeatReqMax: float64(o.ReqMax),
		FeatOffsetDist: o.OffsetDist, FeatProcDist: o.ProcDist, FeatSharers: o.Sharers,
	})
}

// Indices of the features in Features.
const (
	FeatFileHandles = iota
	FeatReqAvg
	FeatReqMin
	FeatReqMax
	FeatOffsetDist
	FeatProcDist
	FeatSharers
	FeatProcDistRatio
)

// Derive returns x with its derived features (those after
// NumMeasuredFeatures) computed from its measured ones.
func Derive(x [NumFeatures]float64) [NumFeatures]float64 {
	x[FeatProcDistRatio] = 0
	if x[FeatReqAvg] > 0 {
		x[FeatProcDistRatio] = x[FeatProcDist] / x[FeatReqAvg]
	}
	return x
}

// NumFeatures is the number of detection features.
const NumFeatures = 8

// NumMeasuredFeatures is the number of leading Features entries measured
// from the requests; the others are derived from them (Derive).
const NumMeasuredFeatures = 7

// SharerMemory is how long a process counts among a file's sharers
// (Observation.Sharers) after its last access to it with an operation.
// It outlasts the tail of a shared phase, in which the last processes
// finish their parts alone (3 s of 8 with 4 IOR ranks), and the few
// seconds between the phases of one application.
const SharerMemory = 10 * time.Second

// NumPaperFeatures is the number of leading Features entries that are the
// papers' (Bez et al., 2019 preprint section 5, Bez et al., SBAC-PAD 2019).
const NumPaperFeatures = 5

// FeatureNames names Features' entries, for model files and CSV headers.
var FeatureNames = [NumFeatures]string{"file_handles", "req_avg", "req_min", "req_max", "offset_dist", "proc_offset_dist", "file_sharers", "proc_dist_ratio"}

// FeatureIndex returns the index of the named feature in Features, or -1.
func FeatureIndex(name string) int {
	for i, n := range FeatureNames {
		if n == name {
			return i
		}
	}
	return -1
}

// Validate checks an observation received from the network: counts and
// sizes non-negative and finite, min <= avg <= max when there were requests,
// a valid operation when there was I/O.
func (o Observation) Validate() error {
	if o.Node < 0 || o.DataServers < 0 || o.Clients < 0 || o.Processes < 0 || o.FileHandles < 0 ||
		o.ReqMin < 0 || o.ReqMax < 0 || o.Bytes < 0 || o.Requests < 0 || o.Interval < 0 || o.Window < 0 ||
		o.OpBytes < 0 || o.OpSpan < 0 {
		return fmt.Errorf("access: negative field in observation of node %d", o.Node)
	}
	for _, f := range []float64{o.ReqAvg, o.OffsetDist, o.ProcDist, o.Sharers, o.Bandwidth} {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return fmt.Errorf("access: non-finite or negative value %v in observation of node %d", f, o.Node)
		}
	}
	if o.OpSpan > o.Interval {
		return fmt.Errorf("access: observation of node %d: operation span %v longer than the interval %v", o.Node, o.OpSpan, o.Interval)
	}
	if o.Requests > 0 {
		if !o.Op.Valid() {
			return fmt.Errorf("access: observation of node %d: %w", o.Node, rw.ErrBadOp)
		}
		if o.ReqMin > o.ReqMax || o.ReqAvg < float64(o.ReqMin)-1e-6 || o.ReqAvg > float64(o.ReqMax)+1e-6 {
			return fmt.Errorf("access: observation of node %d: request sizes min %d avg %.1f max %d out of order", o.Node, o.ReqMin, o.ReqAvg, o.ReqMax)
		}
	}
	return nil
}

// Accumulator computes an Observation from the requests an I/O node receives.
// The zero value is ready to use. It is not safe for concurrent use.
//
// The features describe the interval's majority operation (by bytes
// requested) alone: reads and writes are accumulated apart, and the
// observation is that of the operation that moved more. An interval that
// spans the end of one phase and the start of the next (a shared file
// written, then read back; file-per-process writes after a shared read)
// would otherwise mix two patterns' files and offsets: on the real stack,
// where a phase may last little more than an interval, such mixed seconds
// were most of a read phase's and were labelled by the other phase's files.
// Requests, Bytes and Bandwidth still count both operations.
//
// Recording a request costs two map lookups in the steady state (one for its
// file, one for its (process, file) pair): the sets of clients and processes
// of the interval grow only on a pair's first request in it. It sits on the
// forwarder's path of every request (77 ns with seven map operations, about 1%
// of a forwarded 32 KiB request's CPU; now a third of that).
type Accumulator struct {
	ops       [3]opAccumulator // by rw.Op (0: requests without a valid operation)
	done      int64
	completed int64
	served    [3]servedSpan // by rw.Op: Served requests of the interval
}

// servedSpan is what Served recorded of one operation in an interval.
type servedSpan struct {
	bytes       int64
	first, last time.Duration
	seen        bool
}

// opAccumulator is the part of an interval of one operation.
type opAccumulator struct {
	files     map[uint64]*fileState   // by file handle (kept across intervals while seen)
	procs     map[procFile]*procState // by (process, file handle) (likewise)
	clients   map[uint32]struct{}     // clients seen in the interval
	processes map[uint64]struct{}     // processes seen in the interval
	nFiles    int                     // files seen in the interval
	// share holds, by file handle and then process, the end of the last
	// interval in which the process accessed the file (entries older than
	// SharerMemory are dropped at Close).
	share    map[uint64]map[uint64]time.Duration
	n        int64
	sum      float64
	min, max int64
	distSum  float64
	distN    int64
}

// fileState is a file handle's offset of its previous request and whether
// it was seen in the interval.
type fileState struct {
	lastOff int64
	seen    bool
}

// procState is a (process, file handle) pair's offsets: its last request's,
// whether it was seen in the interval, and the lowest and highest offset of
// its requests in the interval and the last one of the interval before, of
// n offsets in all.
type procState struct {
	lastOff int64
	seen    bool
	lo, hi  int64
	n       int64
}

// procFile keys the per-process offset distance.
type procFile struct{ process, file uint64 }

// Request records one request received from a client. process identifies the
// process uniquely across clients (a process always comes with the same
// client).
func (a *Accumulator) Request(client uint32, process uint64, file uint64, offset, length int64, op rw.Op) {
	k := 0
	if op.Valid() {
		k = int(op)
	}
	a.ops[k].request(client, process, file, offset, length)
}

func (a *opAccumulator) request(client uint32, process uint64, file uint64, offset, length int64) {
	if a.files == nil {
		a.files = map[uint64]*fileState{}
		a.procs = map[procFile]*procState{}
		a.clients = map[uint32]struct{}{}
		a.processes = map[uint64]struct{}{}
	}
	pk := procFile{process, file}
	switch ps := a.procs[pk]; {
	case ps == nil:
		a.procs[pk] = &procState{lastOff: offset, seen: true, lo: offset, hi: offset, n: 1}
		a.clients[client] = struct{}{}
		a.processes[process] = struct{}{}
	default:
		ps.lo, ps.hi, ps.n = min(ps.lo, offset), max(ps.hi, offset), ps.n+1
		ps.lastOff = offset
		if !ps.seen {
			ps.seen = true
			a.clients[client] = struct{}{}
			a.processes[process] = struct{}{}
		}
	}
	switch fs := a.files[file]; {
	case fs == nil:
		a.files[file] = &fileState{lastOff: offset, seen: true}
		a.nFiles++
	default:
		a.distSum += float64(absDiff(offset, fs.lastOff))
		a.distN++
		fs.lastOff = offset
		if !fs.seen {
			fs.seen = true
			a.nFiles++
		}
	}
	if a.n == 0 || length < a.min {
		a.min = length
	}
	if length > a.max {
		a.max = length
	}
	a.n++
	a.sum += float64(length)
}

func absDiff(a, b int64) int64 {
	if a < b {
		return b - a
	}
	return a - b
}

// Done records one request completed (acknowledged to its client) in the
// interval, of bytes bytes.
func (a *Accumulator) Done(bytes int64) {
	a.done += bytes
	a.completed++
}

// Served records that a request of operation op that started at start
// (arrival at the I/O node) ended at end having moved bytes, on the clock
// of Close's start: the measure of OpBytes and OpSpan. The caller also
// counts it with Done, or counts bytes its own way.
func (a *Accumulator) Served(op rw.Op, start, end time.Duration, bytes int64) {
	if !op.Valid() {
		return
	}
	s := &a.served[op]
	if !s.seen {
		s.first, s.last, s.seen = start, end, true
	} else {
		s.first, s.last = min(s.first, start), max(s.last, end)
	}
	s.bytes += bytes
}

// Close returns the observation of the interval [start, start+interval) and
// resets the per-interval counts. Offsets of the last request per file are
// kept so distances stay meaningful across interval boundaries; they are
// forgotten for files not seen in the closed interval, bounding memory. The
// same holds for the last offset per (process, file): memory is bounded by
// the distinct (process, file) pairs of the last interval, and, for the
// sharers, of the intervals that ended in the last SharerMemory. start must
// not go back from one Close to the next (a clock that does keeps sharers
// longer, never fewer).
func (a *Accumulator) Close(node int, start, interval time.Duration, dataServers int, window time.Duration) Observation {
	var op rw.Op
	switch r, w := a.ops[rw.Read].sum, a.ops[rw.Write].sum; {
	case w > r:
		op = rw.Write
	case r > 0:
		op = rw.Read
	}
	m := &a.ops[op]
	o := Observation{
		Node: node, Start: start, Interval: interval, DataServers: dataServers, Op: op,
		Clients: len(m.clients), Processes: len(m.processes), FileHandles: m.nFiles,
		ReqMin: m.min, ReqMax: m.max, Bytes: a.done, Completed: a.completed, Window: window,
	}
	for i := range a.ops {
		o.Requests += a.ops[i].n
	}
	if m.n > 0 {
		o.ReqAvg = m.sum / float64(m.n)
	}
	if m.distN > 0 {
		o.OffsetDist = m.distSum / float64(m.distN)
	}
	o.ProcDist = m.procDist()
	for i := range a.ops {
		a.ops[i].remember(start + interval)
	}
	o.Sharers = m.sharers()
	if interval > 0 {
		o.Bandwidth = float64(a.done) / interval.Seconds()
	}
	if s := a.served[op]; s.seen && op.Valid() {
		first, last := max(s.first, start), min(s.last, start+interval)
		if last > first {
			o.OpBytes, o.OpSpan = s.bytes, last-first
		}
	}
	a.served = [3]servedSpan{}
	for i := range a.ops {
		a.ops[i].reset()
	}
	a.done, a.completed = 0, 0
	return o
}

// procDist is the interval's mean offset distance between consecutive
// requests of one process to one file, measured so that the order in
// which they arrive does not matter: each (process, file) pair's offsets
// span hi - lo over n - 1 steps (the last offset of the interval before
// included), and the mean is the spans' sum over the steps'. For offsets
// that only rise, or only fall, it equals the mean distance between
// consecutive requests; when an I/O node receives one process's requests
// out of order (a mount's write-behind sends them from several kernel
// threads), it is still the process's stride, where the mean of the
// consecutive distances grew to several strides.
func (a *opAccumulator) procDist() float64 {
	var span float64
	var steps int64
	for _, ps := range a.procs {
		if ps.seen && ps.n > 1 {
			span += float64(ps.hi - ps.lo)
			steps += ps.n - 1
		}
	}
	if steps == 0 {
		return 0
	}
	return span / float64(steps)
}

// remember records the (process, file) pairs of the interval as seen at
// end and forgets those last seen SharerMemory or more before end.
func (a *opAccumulator) remember(end time.Duration) {
	for k, ps := range a.procs {
		if !ps.seen {
			continue
		}
		if a.share == nil {
			a.share = map[uint64]map[uint64]time.Duration{}
		}
		p := a.share[k.file]
		if p == nil {
			p = map[uint64]time.Duration{}
			a.share[k.file] = p
		}
		p[k.process] = end
	}
	for f, p := range a.share {
		for proc, t := range p {
			if t <= end-SharerMemory {
				delete(p, proc)
			}
		}
		if len(p) == 0 {
			delete(a.share, f)
		}
	}
}

// sharers returns the mean, over the files seen in the interval, of the
// processes remembered for each (remember first).
func (a *opAccumulator) sharers() float64 {
	if a.nFiles == 0 {
		return 0
	}
	n := 0
	for f, fs := range a.files {
		if fs.seen {
			n += len(a.share[f])
		}
	}
	return float64(n) / float64(a.nFiles)
}

// reset ends an interval: counts to zero, offsets kept for what was seen
// (a pair's next interval starts from its last offset).
func (a *opAccumulator) reset() {
	for f, fs := range a.files {
		if !fs.seen {
			delete(a.files, f)
		}
		fs.seen = false
	}
	for k, ps := range a.procs {
		if !ps.seen {
			delete(a.procs, k)
		}
		ps.seen = false
		ps.lo, ps.hi, ps.n = ps.lastOff, ps.lastOff, 1
	}
	clear(a.clients)
	clear(a.processes)
	a.nFiles = 0
	a.n, a.sum, a.min, a.max, a.distSum, a.distN = 0, 0, 0, 0, 0, 0
}

// SortByNode sorts observations by node index (stable), for deterministic output.
func SortByNode(obs []Observation) {
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Node < obs[j].Node })
}
