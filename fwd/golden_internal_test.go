package fwd

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/adaptio/adaptio/pfs/pfsclient"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// The golden test of the shared I/O-node model: one request stream goes
// through the simulator's I/O nodes and through the daemon's own path
// (submit: the backend's split into per-server pieces and their
// server-local offsets; the dispatcher: scheduler, joining of released
// batches, completion), and both dispatch the same accesses in the same
// order. The simulator runs the experiment and records, per I/O node, when
// each client request arrived, when each dispatcher thread asked for an
// access and what it got, and when each access finished; the daemon (on
// the emulated PFS's client, striping as the PFS does, with the scheduler's
// clock set to the simulator's instants) is fed the same arrivals and
// completions at the same instants and must answer every request for an
// access with the same one: the same data server, file, operation, offset,
// length and requests, made of the same scheduler batches.
func TestGoldenDispatchDaemonVsSimulator(t *testing.T) {
	for _, tt := range []struct {
		name      string
		scheduler string
		window    time.Duration
		pattern   workload.Pattern
		trace     *workload.Recorded // instead of the pattern
		ionodes   int
	}{
		{"shared strided 32KiB writes, TWINS 1ms, 2 I/O nodes", "twins", time.Millisecond,
			workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 16 << 20}, nil, 2},
		{"shared contiguous 32KiB reads, TWINS 250us, 4 I/O nodes", "twins", 250 * time.Microsecond,
			workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Contiguous, Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 16 << 20}, nil, 4},
		{"file per process 256KiB writes (4 pieces each), FIFO", "fifo", time.Millisecond,
			workload.Pattern{Processes: 16, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 256 << 10, TotalBytes: 32 << 20}, nil, 2},
		{"shared strided 1MiB reads (two stripes per server), TWINS 4ms", "twins", 4 * time.Millisecond,
			workload.Pattern{Processes: 8, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Read, RequestSize: 1 << 20, TotalBytes: 32 << 20}, nil, 2},
		{"a trace: reads and writes of 1 byte to 300 KiB at any offset of 3 files, with think times, TWINS 1ms", "twins", time.Millisecond,
			workload.Pattern{}, goldenTrace(), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sim.Config{Scheduler: tt.scheduler, Window: tt.window, IONodes: tt.ionodes, Servers: 4, ClientNodes: 8,
				Patterns: []workload.Pattern{tt.pattern}}
			if tt.trace != nil {
				cfg.Patterns, cfg.Traces = nil, []workload.Trace{tt.trace}
			}
			s, err := sim.New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg = s.Config()
			var events []sim.NodeEvent
			s.SetTrace(func(e sim.NodeEvent) {
				e.Access.Batches = append([]sched.Batch(nil), e.Access.Batches...) // valid during the call only
				for i := range e.Access.Batches {
					e.Access.Batches[i].Requests = nil
				}
				events = append(events, e)
			})
			if _, err := s.Run(t.Context(), sim.Hooks{}); err != nil {
				t.Fatal(err)
			}
			dispatched := 0
			for node := range cfg.IONodes {
				dispatched += replay(t, cfg, node, events)
			}
			if dispatched == 0 {
				t.Fatal("nothing dispatched")
			}
			t.Logf("%d events, %d accesses dispatched alike", len(events), dispatched)
		})
	}
}

// goldenTrace is a seeded trace of 16 processes: reads and writes of 1
// byte to 300 KiB at any offset of 3 files, some after a think time.
func goldenTrace() *workload.Recorded {
	rng := rand.New(rand.NewPCG(17, 1))
	t := &workload.Recorded{Names: []string{workload.TraceFileName(0), workload.TraceFileName(1), workload.TraceFileName(2)},
		Procs: make([][]workload.Request, 16)}
	for p := range t.Procs {
		for range 40 {
			r := workload.Request{File: int32(rng.IntN(3)), Offset: rng.Int64N(8 << 20), Length: 1 + rng.Int64N(300<<10), Op: rw.Op(1 + rng.IntN(2))}
			if rng.IntN(5) == 0 {
				r.Think = time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
			}
			t.Procs[p] = append(t.Procs[p], r)
		}
	}
	return t
}

// replay feeds I/O node node's arrivals and completions into a daemon's
// path at the simulator's instants and checks every dispatch; it returns
// the accesses dispatched.
func replay(t *testing.T, cfg sim.Config, node int, events []sim.NodeEvent) int {
	t.Helper()
	addrs := make([]string, cfg.Servers) // never dialled: nothing executes
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", 1+i)
	}
	be, err := pfsclient.NewClient(pfsclient.ClientOptions{Addrs: addrs, StripeSize: cfg.StripeBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	d, err := New(Options{Backend: be, Scheduler: cfg.Scheduler,
		Sched: sched.Config{Node: node, Nodes: cfg.IONodes, Window: cfg.Window}})
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	d.clock = func() time.Duration { return now }
	conns := map[int]*conn{}
	var running []*job // accesses dispatched and not finished, in dispatch order
	var zero []byte
	n := 0
	for i, e := range events {
		if e.Node != node {
			continue
		}
		now = e.At
		where := fmt.Sprintf("node %d, event %d at %v", node, i, e.At)
		switch e.Kind {
		case sim.NodeArrive:
			c := conns[e.Client]
			if c == nil {
				c = &conn{d: d, clientID: uint32(e.Client)}
				conns[e.Client] = c
			}
			if int64(len(zero)) < e.Length {
				zero = make([]byte, e.Length)
			}
			op := &ioOp{c: c, write: e.Op == rw.Write, path: e.File, file: e.FileID, off: e.Offset, buf: zero[:e.Length]}
			if err := d.submit(op); err != nil {
				t.Fatalf("%s: submit: %v", where, err)
			}
		case sim.NodeNext:
			d.q.mu.Lock()
			j := d.dispatchLocked(now)
			d.q.mu.Unlock()
			if (j != nil) != e.OK {
				t.Fatalf("%s: the simulator got an access: %v, the daemon: %v", where, e.OK, j != nil)
			}
			if j == nil {
				continue
			}
			if got, want := accessString(j), simAccessString(e); got != want {
				t.Fatalf("%s: access %d:\n daemon    %s\n simulator %s", where, n, got, want)
			}
			running = append(running, j)
			n++
		case sim.NodeDone:
			k := -1
			for x, j := range running {
				if accessString(j) == simAccessString(e) {
					k = x
					break
				}
			}
			if k < 0 {
				t.Fatalf("%s: the simulator finished %s, which the daemon is not running", where, simAccessString(e))
			}
			j := running[k]
			running = append(running[:k], running[k+1:]...)
			d.q.mu.Lock()
			d.finishLocked(now, &completion{acc: j.acc, bytes: j.acc.Length})
			d.q.mu.Unlock()
		}
	}
	if len(running) != 0 || d.q.node.Pending() {
		t.Fatalf("node %d: %d accesses running and pending %v after the last event", node, len(running), d.q.node.Pending())
	}
	return n
}

// accessString describes a daemon's access: server, file, operation, span,
// requests, and the scheduler batches (offset+length) it joins.
func accessString(j *job) string {
	a := j.acc
	return describe(a.Queue, a.File, a.Op, a.Offset, a.Length, a.Requests, a.Batches)
}

func simAccessString(e sim.NodeEvent) string {
	a := e.Access
	return describe(a.Queue, a.File, a.Op, a.Offset, a.Length, a.Requests, a.Batches)
}

func describe(q int, f uint64, op rw.Op, off, n int64, reqs int, bs []sched.Batch) string {
	s := fmt.Sprintf("server %d file %d %v [%d,+%d) %d requests:", q, f, op, off, n, reqs)
	for _, b := range bs {
		s += fmt.Sprintf(" %d+%d", b.Offset, b.Length)
	}
	return s
}
