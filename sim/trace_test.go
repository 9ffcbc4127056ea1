package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// traceOf is pattern p as a recorded trace: every process's requests in
// order, no think time, the files named as the pattern names them.
func traceOf(p workload.Pattern) *workload.Recorded {
	t := &workload.Recorded{Procs: make([][]workload.Request, p.Processes)}
	for f := range p.Files() {
		t.Names = append(t.Names, p.FileName(f))
	}
	for proc := range p.Processes {
		for i := range p.RequestsPerProcess() {
			f, off := p.Request(proc, i)
			t.Procs[proc] = append(t.Procs[proc], workload.Request{File: int32(f), Offset: off, Length: p.RequestSize, Op: p.Op})
		}
	}
	return t
}

// A pattern replayed as a trace of its own requests runs exactly as the
// pattern: the same events at the same instants, so the same result to
// the nanosecond (the trace path differs from the pattern path only in
// where a process's next request comes from).
func TestTraceOfAPatternRunsAsThePattern(t *testing.T) {
	pats := []workload.Pattern{
		pattern(64, workload.Shared, workload.Strided, rw.Write, 32<<10, 16<<20),
		pattern(16, workload.FilePerProcess, workload.Contiguous, rw.Read, 256<<10, 16<<20),
		pattern(24, workload.Shared, workload.Contiguous, rw.Write, 100<<10, 12<<20),
	}
	for _, p := range pats {
		for _, sc := range []string{"twins", "fifo", "hbrr"} {
			t.Run(p.String()+"/"+sc, func(t *testing.T) {
				cfg := Config{IONodes: 4, Scheduler: sc, Interval: 50 * time.Millisecond, Seed: 7}
				run := func(cfg Config) (Result, []access.Observation) {
					var obs []access.Observation
					res, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, o []access.Observation) (time.Duration, bool) {
						obs = append(obs, o...)
						return 2 * time.Millisecond, true
					}})
					if err != nil {
						t.Fatal(err)
					}
					return res, obs
				}
				cfg.Patterns = WriteRead(p, 1)
				want, wantObs := run(cfg)
				w, r := p, p
				w.Op, r.Op = rw.Write, rw.Read
				cfg.Patterns, cfg.Traces = nil, []workload.Trace{traceOf(w), traceOf(r)}
				got, gotObs := run(cfg)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("trace result\n %+v\nwant the pattern's\n %+v", got, want)
				}
				if !reflect.DeepEqual(gotObs, wantObs) {
					t.Errorf("the observations differ")
				}
			})
		}
	}
}

// nodeEvent is the part of a NodeEvent the known-dispatch test checks.
type nodeEvent struct {
	kind   NodeEventKind
	at     time.Duration
	file   string
	op     rw.Op
	off    int64
	length int64
	server int
}

// A trace small enough to follow by hand: one process on one I/O node
// running FIFO writes 100 KiB at the start of file a.dat (two pieces, on
// a.dat's first server and the next), then, 5 ms after that write's reply,
// reads 10 KiB at 64 KiB in b.dat (stripe 1: the server after b.dat's
// first, offset 0 in its object). A second process issues nothing. Each
// step is one event at an instant the model's parameters give exactly.
func TestTraceDispatchIsKnown(t *testing.T) {
	const think = 5 * time.Millisecond
	tr := &workload.Recorded{Names: []string{"a.dat", "b.dat"}, Procs: [][]workload.Request{
		{{File: 0, Offset: 0, Length: 100 << 10, Op: rw.Write}, {Think: think, File: 1, Offset: 64 << 10, Length: 10 << 10, Op: rw.Read}},
		nil,
	}}
	cfg := Config{Traces: []workload.Trace{tr}, IONodes: 1, Servers: 4, Scheduler: "fifo", StartJitter: 1}
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []nodeEvent
	s.SetTrace(func(e NodeEvent) {
		switch {
		case e.Kind == NodeArrive:
			got = append(got, nodeEvent{kind: e.Kind, at: e.At, file: e.File, op: e.Op, off: e.Offset, length: e.Length})
		case e.OK:
			got = append(got, nodeEvent{kind: e.Kind, at: e.At, op: e.Access.Op, off: e.Access.Offset, length: e.Access.Length, server: e.Access.Queue})
		}
	})
	res, err := s.Run(context.Background(), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	lay := layout.Layout{StripeSize: DefaultStripeBytes, StripeCount: 4}
	a, b := lay.FirstServer("a.dat", 4), lay.FirstServer("b.dat", 4)
	msg := func(bytes int64) time.Duration { // one message on idle links: latency, then its bytes
		return DefaultNetLatency + time.Duration(float64(DefaultHeaderBytes+bytes)/DefaultNetBytesPerSec*1e9)
	}
	arrive := msg(100 << 10) // the write and its data reach the I/O node
	want := []nodeEvent{
		{kind: NodeArrive, at: arrive, file: "a.dat", op: rw.Write, off: 0, length: 100 << 10},
		{kind: NodeNext, at: arrive, op: rw.Write, off: 0, length: 64 << 10, server: a},
		{kind: NodeNext, at: arrive, op: rw.Write, off: 0, length: 36 << 10, server: (a + 1) % 4},
	}
	if len(got) < len(want) {
		t.Fatalf("got %d events %+v, want at least %d", len(got), got, len(want))
	}
	if !slices.Equal(got[:3], want) {
		t.Fatalf("arrival and dispatch of the write:\n got %+v\nwant %+v", got[:3], want)
	}
	// Both pieces finish (in either order); the reply leaves at the last.
	done := got[3:5]
	for _, e := range done {
		if e.kind != NodeDone {
			t.Fatalf("events 3 and 4: %+v, want the two pieces done", done)
		}
	}
	last := max(done[0].at, done[1].at)
	readAt := last + msg(0) + think + msg(0) // reply to the process, think, the read request
	wantRead := []nodeEvent{
		{kind: NodeArrive, at: readAt, file: "b.dat", op: rw.Read, off: 64 << 10, length: 10 << 10},
		{kind: NodeNext, at: readAt, op: rw.Read, off: 0, length: 10 << 10, server: (b + 1) % 4},
	}
	if len(got) != 8 || !slices.Equal(got[5:7], wantRead) || got[7].kind != NodeDone {
		t.Fatalf("the read:\n got %+v\nwant %+v then its completion", got[5:], wantRead)
	}
	if end := got[7].at + msg(10<<10); res.Makespan != end {
		t.Errorf("makespan %v, want %v (the read's reply with its data)", res.Makespan, end)
	}
	if res.Bytes != 110<<10 || res.Requests != 2 || len(res.Phases) != 1 {
		t.Errorf("result: %d bytes, %d requests, %d phases; want %d, 2, 1", res.Bytes, res.Requests, len(res.Phases), 110<<10)
	}
}

// randomTrace is a seeded trace of variable lengths, offsets, files and
// think times; processes at index%5 == 4 issue nothing.
func randomTrace(seed uint64, procs, reqs, files int) *workload.Recorded {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := &workload.Recorded{Procs: make([][]workload.Request, procs)}
	for f := range files {
		t.Names = append(t.Names, workload.TraceFileName(f))
	}
	for p := range procs {
		if p%5 == 4 {
			continue
		}
		for range 1 + rng.IntN(reqs) {
			r := workload.Request{File: int32(rng.IntN(files)), Offset: rng.Int64N(64 << 20), Length: 1 + rng.Int64N(300<<10), Op: rw.Read}
			if rng.IntN(2) == 0 {
				r.Op = rw.Write
			}
			if rng.IntN(4) == 0 {
				r.Think = time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
			}
			t.Procs[p] = append(t.Procs[p], r)
		}
	}
	return t
}

// Variable request lengths: every byte is served, observed and counted,
// whatever the scheduler; the trace repeated is another phase on the same
// files.
func TestTraceEveryByteIsServedAndObserved(t *testing.T) {
	tr := randomTrace(1, 40, 30, 7)
	read, written := tr.Bytes()
	for _, sc := range []string{"twins", "fifo", "hbrr", "fifo+file-concurrency"} {
		t.Run(sc, func(t *testing.T) {
			cfg := Config{Traces: []workload.Trace{tr, tr}, IONodes: 3, Scheduler: sc, Interval: 20 * time.Millisecond}
			if sc == "fifo+file-concurrency" {
				cfg.Scheduler, cfg.FileConcurrency = "fifo", 2
			}
			var obsBytes, obsReqs int64
			res, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
				for _, o := range obs {
					if err := o.Validate(); err != nil {
						t.Fatal(err)
					}
					obsBytes += o.Bytes
					obsReqs += o.Requests
				}
				return 0, false
			}})
			if err != nil {
				t.Fatal(err)
			}
			want := 2 * (read + written)
			if res.Bytes != want || obsBytes != want {
				t.Errorf("bytes: result %d, observed %d, want %d", res.Bytes, obsBytes, want)
			}
			if wantReq := 2 * tr.Requests(); res.Requests != uint64(wantReq) || obsReqs != wantReq {
				t.Errorf("requests: completed %d, observed %d, want %d", res.Requests, obsReqs, wantReq)
			}
			if len(res.Phases) != 2 || res.Phases[0]+res.Phases[1] != res.Makespan {
				t.Errorf("phases %v, makespan %v: want two adding up", res.Phases, res.Makespan)
			}
		})
	}
}

// The same seed gives the same run of a trace; another seed another.
func TestTraceSameSeedSameResult(t *testing.T) {
	tr := randomTrace(2, 33, 20, 3)
	run := func(seed uint64) Result {
		res, err := Run(context.Background(), Config{Traces: []workload.Trace{tr}, IONodes: 2, Seed: seed}, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(5), run(5)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with seed 5 differ:\n%+v\n%+v", a, b)
	}
	if c := run(6); c.Makespan == a.Makespan && reflect.DeepEqual(c.Servers, a.Servers) {
		t.Errorf("seed 6 ran as seed 5: the seed reaches nothing")
	}
}

// Think time is waited: a process whose only request comes after 3 s of
// think finishes after 3 s; the observation intervals before it are idle.
func TestTraceThinkTime(t *testing.T) {
	tr := &workload.Recorded{Names: []string{"x"}, Procs: [][]workload.Request{{{Think: 3 * time.Second, Length: 4096, Op: rw.Write}}}}
	idle := 0
	res, err := Run(context.Background(), Config{Traces: []workload.Trace{tr}}, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
		if obs[0].Idle() {
			idle++
		}
		return 0, false
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Makespan < 3*time.Second || res.Makespan > 3*time.Second+100*time.Millisecond {
		t.Errorf("makespan %v, want just over 3s", res.Makespan)
	}
	if idle != 3 {
		t.Errorf("%d idle intervals, want 3", idle)
	}
}

// badCursor fails on its third request.
type badCursor struct{ n int }

func (c *badCursor) Next(int) (workload.Request, bool, error) {
	if c.n++; c.n == 3 {
		return workload.Request{}, false, errors.New("disk on fire")
	}
	return workload.Request{Length: 1, Op: rw.Read}, true, nil
}

type badTrace struct{}

func (badTrace) Processes() int                   { return 1 }
func (badTrace) Files() []string                  { return []string{"f"} }
func (badTrace) Cursor() (workload.Cursor, error) { return &badCursor{}, nil }

// A request the trace cannot read, or an invalid one, stops the run with
// an error naming the process and the request; a configuration with both
// patterns and traces is refused.
func TestTraceErrors(t *testing.T) {
	_, err := Run(context.Background(), Config{Traces: []workload.Trace{badTrace{}}}, Hooks{})
	if err == nil || err.Error() != "sim: trace 0, process 0, request 2: disk on fire" {
		t.Errorf("cursor error: got %v", err)
	}
	for _, tt := range []struct {
		name string
		r    workload.Request
	}{
		{"file out of range", workload.Request{File: 2, Length: 1, Op: rw.Read}},
		{"no bytes", workload.Request{Length: 0, Op: rw.Read}},
		{"negative offset", workload.Request{Offset: -1, Length: 1, Op: rw.Read}},
		{"no operation", workload.Request{Length: 1}},
		{"think beyond MaxTime", workload.Request{Think: 25 * time.Hour, Length: 1, Op: rw.Read}},
		{"more than 2^20 stripes", workload.Request{Length: 1 << 40, Op: rw.Read}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &workload.Recorded{Names: []string{"a", "b"}, Procs: [][]workload.Request{{{Length: 1, Op: rw.Write}, tt.r}}}
			if _, err := Run(context.Background(), Config{Traces: []workload.Trace{tr}}, Hooks{}); !errors.Is(err, workload.ErrBadRequest) {
				t.Errorf("got %v, want workload.ErrBadRequest", err)
			}
		})
	}
	p := pattern(8, workload.Shared, workload.Contiguous, rw.Read, 4096, 1<<20)
	if _, err := New(Config{Patterns: []workload.Pattern{p}, Traces: []workload.Trace{traceOf(p)}}, nil); !errors.Is(err, ErrBadConfig) {
		t.Errorf("patterns and traces: got %v, want ErrBadConfig", err)
	}
	empty := &workload.Recorded{Procs: make([][]workload.Request, 3)}
	res, err := Run(context.Background(), Config{Traces: []workload.Trace{empty, empty}}, Hooks{})
	if err != nil || res.Makespan != 0 || len(res.Phases) != 2 {
		t.Errorf("a trace with nothing to issue: %+v, %v; want two empty phases", res, err)
	}
}
