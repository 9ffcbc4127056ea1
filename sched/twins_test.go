package sched

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"pgregory.net/rapid"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// runPrompt feeds reqs (sorted by Arrival) to s and serves it promptly: at
// every arrival and at every retry time it dispatches until Next says no,
// completing each batch at once. onBatch sees every batch.
// tb is the subset of testing.TB that *rapid.T also has.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func runPrompt(tb tb, s Scheduler, reqs []Request, onBatch func(now time.Duration, b Batch)) {
	var now, retry time.Duration
	i := 0
	for guard := 0; ; guard++ {
		if guard > 1_000_000 {
			tb.Fatalf("runPrompt: no progress")
		}
		switch {
		case i < len(reqs) && (retry == 0 || reqs[i].Arrival <= retry):
			now = max(now, reqs[i].Arrival)
		case retry > 0:
			now = max(now, retry)
		default:
			if s.Len() != 0 {
				tb.Fatalf("runPrompt: %d requests left and no retry time", s.Len())
			}
			return
		}
		for i < len(reqs) && reqs[i].Arrival <= now {
			if err := s.Add(now, reqs[i]); err != nil {
				tb.Fatal(err)
			}
			i++
		}
		retry = 0
		for {
			b, ok, r := s.Next(now)
			if !ok {
				retry = r
				break
			}
			onBatch(now, b)
			if err := s.Complete(now, b.ID, b.Length, 0); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// TestTWINSWaitBound: served promptly, TWINS dispatches every request
// within Servers windows of its arrival.
func TestTWINSWaitBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		node := rapid.IntRange(0, 7).Draw(t, "node")
		cfg := Config{
			Servers:   rapid.IntRange(1, 6).Draw(t, "servers"),
			Node:      node,
			Window:    rapid.SampledFrom(Windows).Draw(t, "window"),
			SkipEmpty: rapid.Bool().Draw(t, "skip"),
		}
		s, err := New("twins", cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 200).Draw(t, "n")
		reqs := make([]Request, n)
		var at time.Duration
		for i := range reqs {
			at += time.Duration(rapid.IntRange(0, 3000).Draw(t, "gapUs")) * time.Microsecond
			reqs[i] = Request{ID: uint64(i + 1), Queue: rapid.IntRange(0, cfg.Servers-1).Draw(t, "queue"),
				Length: 4096, Op: rw.Read, Arrival: at + 1}
		}
		bound := time.Duration(cfg.Servers) * cfg.Window
		got := 0
		runPrompt(t, s, reqs, func(now time.Duration, b Batch) {
			for _, r := range b.Requests {
				got++
				if w := now - r.Arrival; w > bound {
					t.Fatalf("request %d to server %d waited %v > Servers x Window = %v", r.ID, r.Queue, w, bound)
				}
			}
		})
		if got != n {
			t.Fatalf("dispatched %d of %d", got, n)
		}
	})
}

// TestTWINSGolden records the windows TWINS visits over a fixed stream.
func TestTWINSGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var reqs []Request
	var at time.Duration
	for i := range 80 {
		at += time.Duration(rng.IntN(400)) * time.Microsecond
		reqs = append(reqs, Request{ID: uint64(i + 1), Queue: rng.IntN(4), File: uint64(rng.IntN(3)),
			Offset: int64(i) << 12, Length: 4096, Op: rw.Write, Arrival: at + 1})
	}
	var buf bytes.Buffer
	for _, skip := range []bool{false, true} {
		cfg := Config{Servers: 4, Node: 1, Nodes: 2, Window: time.Millisecond, SkipEmpty: skip}
		s, err := New("twins", cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := &twinsRecorder{twins: s.(*twins), w: &buf}
		fmt.Fprintf(&buf, "# twins servers=4 node=1 window=1ms skip-empty=%v\n", skip)
		fmt.Fprintf(&buf, "# server start end dispatched-request-ids\n")
		runPrompt(t, rec, reqs, func(now time.Duration, b Batch) {
			rec.ids = append(rec.ids, b.Requests[0].ID)
		})
		rec.flush()
	}
	path := filepath.Join("testdata", "twins_windows.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTWINSGolden -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("TWINS windows differ from %s (go test -run TestTWINSGolden -update to accept):\n got:\n%s\nwant:\n%s", path, buf.Bytes(), want)
	}
}

// twinsRecorder writes one line per window TWINS visits, with the requests
// dispatched in it (empty windows included).
type twinsRecorder struct {
	*twins
	w     *bytes.Buffer
	srv   int
	start time.Duration
	ids   []uint64
	open  bool
}

func (r *twinsRecorder) Next(now time.Duration) (Batch, bool, time.Duration) {
	b, ok, retry := r.twins.Next(now)
	if srv, start, _, started := r.twins.window(); started && (!r.open || srv != r.srv || start != r.start) {
		r.flush()
		r.srv, r.start, r.open = srv, start, true
	}
	return b, ok, retry
}

func (r *twinsRecorder) flush() {
	if r.open {
		fmt.Fprintf(r.w, "%d %v %v %v\n", r.srv, r.start, r.start+r.twins.cfg.Window, r.ids)
	}
	r.ids = nil
}

// TestTWINSSetWindow: changing the window mid-window keeps its start and
// recomputes its end; no request is lost.
func TestTWINSSetWindow(t *testing.T) {
	s, _ := New("twins", Config{Servers: 2, Window: 4 * time.Millisecond})
	tw := s.(*twins)
	for i := range 4 {
		if err := s.Add(0, Request{ID: uint64(i), Queue: i % 2, Length: 1, Op: rw.Read}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.Next(time.Millisecond); !ok {
		t.Fatal("no first batch")
	}
	p := tw.Params()
	p.Window = 2 * time.Millisecond
	if err := tw.SetParams(1500*time.Microsecond, p); err != nil {
		t.Fatal(err)
	}
	if srv, start, end, _ := tw.window(); srv != 0 || start != time.Millisecond || end != 3*time.Millisecond {
		t.Fatalf("window after SetParams: server %d [%v, %v), want server 0 [1ms, 3ms)", srv, start, end)
	}
	p.Window = 100 * time.Microsecond // already over: ends at the next Next
	if err := tw.SetParams(1500*time.Microsecond, p); err != nil {
		t.Fatal(err)
	}
	b, ok, _ := s.Next(1500 * time.Microsecond)
	if !ok || b.Queue != 1 {
		t.Fatalf("after shrinking the window: got ok=%v queue %d, want the next server (1)", ok, b.Queue)
	}
	if s.Len() != 2 {
		t.Fatalf("Len %d, want 2", s.Len())
	}
	if err := tw.SetParams(0, Config{Window: -1}); err == nil {
		t.Fatal("negative window accepted")
	}
	if got := tw.Params().Window; got != 100*time.Microsecond {
		t.Fatalf("rejected SetParams changed Window to %v", got)
	}
}

// TestTWINSIdleStart: a request that finds the I/O node idle is served at
// once with IdleStart, and waits for its server's window without it; a
// request arriving while another is queued or in flight keeps the
// reference's round robin either way.
func TestTWINSIdleStart(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name      string
		idleStart bool
		// dispatch time of the lone request (server 2) and of the second
		// (server 3, added while the first is in flight)
		lone, second time.Duration
	}{
		{"reference", false, 2 * ms, 3 * ms},
		{"idle-start", true, 0, 1 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New("twins", Config{Servers: 4, Node: 0, Window: ms, IdleStart: tc.idleStart})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add(0, Request{ID: 1, Queue: 2, Op: rw.Read, Length: 4096}); err != nil {
				t.Fatal(err)
			}
			first, b1 := dispatchAt(t, s, 0, 1)
			if first != tc.lone {
				t.Fatalf("lone request dispatched at %v, want %v", first, tc.lone)
			}
			// The second arrives while the first is in flight: not idle.
			if err := s.Add(first, Request{ID: 2, Queue: 3, Op: rw.Read, Length: 4096}); err != nil {
				t.Fatal(err)
			}
			b, ok, _ := s.Next(first)
			if ok {
				t.Fatalf("request %v dispatched at once while the node was busy", b.Requests)
			}
			if err := s.Complete(first, b1.ID, 4096, 0); err != nil {
				t.Fatal(err)
			}
			if got, _ := dispatchAt(t, s, first, 2); got != tc.second {
				t.Fatalf("second request dispatched at %v, want %v", got, tc.second)
			}
		})
	}
}

// dispatchAt polls s from now on at its retry times until it dispatches
// request id, and returns when and the batch.
func dispatchAt(t *testing.T, s Scheduler, now time.Duration, id uint64) (time.Duration, Batch) {
	t.Helper()
	for range 100 {
		b, ok, retry := s.Next(now)
		if ok {
			if len(b.Requests) != 1 || b.Requests[0].ID != id {
				t.Fatalf("dispatched %v, want request %d", b.Requests, id)
			}
			return now, b
		}
		if retry <= now {
			t.Fatalf("no dispatch and no retry time after %v", now)
		}
		now = retry
	}
	t.Fatal("request never dispatched")
	return 0, Batch{}
}

// Aligned windows: whenever each node calls Next, node n serves server
// (floor(now/Window) + n) mod Servers, so two nodes on one clock never
// serve the same server, however irregular their calls; the reference's
// windows drift apart under the same calls.
func TestTWINSAlignedNodesNeverShareAServer(t *testing.T) {
	const servers, nodes = 4, 4
	run := func(aligned bool) (shared int) {
		scheds := make([]Scheduler, nodes)
		for n := range nodes {
			s, err := New("twins", Config{Servers: servers, Node: n, Nodes: nodes, Window: time.Millisecond, Aligned: aligned})
			if err != nil {
				t.Fatal(err)
			}
			scheds[n] = s
		}
		rng := rand.New(rand.NewPCG(3, 4))
		id := uint64(0)
		serving := make([]int, nodes) // server each node served last, -1: none yet
		next := make([]time.Duration, nodes)
		last := make([]time.Duration, nodes)
		for n := range nodes {
			serving[n] = -1
			next[n] = time.Duration(rng.IntN(300)) * time.Microsecond
		}
		for step := 0; step < 4000; step++ {
			// The node whose call comes first calls Next, late by up to 700 µs.
			n := 0
			for k := range nodes {
				if next[k] < next[n] {
					n = k
				}
			}
			now := next[n]
			s := scheds[n]
			for q := range servers { // every queue gains one request per call and loses at most one
				id++
				if err := s.Add(now, Request{ID: id, Queue: q, File: id, Length: 32 << 10, Op: rw.Read}); err != nil {
					t.Fatal(err)
				}
			}
			b, ok, _ := s.Next(now)
			if !ok {
				t.Fatalf("node %d at %v: nothing dispatched with every queue full", n, now)
			}
			if err := s.Complete(now, b.ID, b.Length, 0); err != nil {
				t.Fatal(err)
			}
			if aligned {
				if want := (int(now/time.Millisecond) + n) % servers; b.Queue != want {
					t.Fatalf("node %d at %v served server %d, want %d", n, now, b.Queue, want)
				}
			}
			serving[n], last[n] = b.Queue, now
			for k := range nodes {
				if k != n && serving[k] == b.Queue && last[k]/time.Millisecond == now/time.Millisecond {
					shared++ // both served this server within one slot of the clock
				}
			}
			next[n] = now + time.Duration(50+rng.IntN(700))*time.Microsecond
		}
		return shared
	}
	if a, ref := run(true), run(false); a != 0 || ref == 0 {
		t.Errorf("dispatches to a server another node served in the same millisecond slot: aligned %d (want 0), reference %d (want > 0, the drift aligned windows remove)", a, ref)
	}
	// A window change moves the slots at once.
	s, err := New("twins", Config{Servers: servers, Node: 1, Nodes: nodes, Window: time.Millisecond, Aligned: true})
	if err != nil {
		t.Fatal(err)
	}
	for q := range servers {
		if err := s.Add(0, Request{ID: uint64(q + 1), Queue: q, File: 1, Length: 1, Op: rw.Write}); err != nil {
			t.Fatal(err)
		}
	}
	p := s.(Tunable).Params()
	p.Window = 4 * time.Millisecond
	if err := s.(Tunable).SetParams(0, p); err != nil {
		t.Fatal(err)
	}
	if b, ok, _ := s.Next(9 * time.Millisecond); !ok || b.Queue != (2+1)%servers {
		t.Errorf("after a change to 4 ms, at 9 ms node 1 served %d (ok %v), want server 3 (slot 2)", b.Queue, ok)
	}
}
