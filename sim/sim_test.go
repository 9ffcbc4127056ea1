package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

func pattern(procs int, l workload.Layout, sp workload.Spatiality, op rw.Op, size, total int64) workload.Pattern {
	return workload.Pattern{Processes: procs, Layout: l, Spatiality: sp, Op: op, RequestSize: size, TotalBytes: total}
}

func TestEveryByteIsServedAndObserved(t *testing.T) {
	pats := []workload.Pattern{
		pattern(128, workload.Shared, workload.Strided, rw.Read, 32<<10, 64<<20),
		pattern(64, workload.FilePerProcess, workload.Contiguous, rw.Write, 256<<10, 64<<20),
		pattern(32, workload.Shared, workload.Contiguous, rw.Write, 100<<10, 32<<20), // crosses stripes unaligned
	}
	for _, p := range pats {
		for _, sc := range []string{"twins", "fifo", "hbrr", "twins+elevator", "fifo+file-concurrency"} {
			t.Run(p.String()+"/"+sc, func(t *testing.T) {
				cfg := Config{Patterns: []workload.Pattern{p}, IONodes: 4, Scheduler: sc, Interval: 100 * time.Millisecond}
				if name, ok := strings.CutSuffix(sc, "+elevator"); ok {
					cfg.Scheduler, cfg.Elevator = name, true
				}
				if name, ok := strings.CutSuffix(sc, "+file-concurrency"); ok {
					cfg.Scheduler, cfg.FileConcurrency = name, 2
				}
				var obsBytes, obsReqs int64
				var class access.Class
				res, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
					if len(obs) != 4 {
						t.Fatalf("got %d observations, want one per I/O node (4)", len(obs))
					}
					for i, o := range obs {
						if o.Node != i {
							t.Fatalf("observation %d is of node %d", i, o.Node)
						}
						if err := o.Validate(); err != nil {
							t.Fatal(err)
						}
						obsBytes += o.Bytes
						obsReqs += o.Requests
						if o.Requests > 0 && o.FileHandles > 0 {
							class = p.Class()
						}
					}
					return 0, false
				}})
				if err != nil {
					t.Fatal(err)
				}
				want := p.BytesPerProcess() * int64(p.Processes)
				if res.Bytes != want || obsBytes != want {
					t.Errorf("bytes: result %d, observations %d, want %d", res.Bytes, obsBytes, want)
				}
				if wantReq := int64(p.RequestsPerProcess() * p.Processes); obsReqs != wantReq || res.Requests != uint64(wantReq) {
					t.Errorf("requests: observed %d, completed %d, want %d", obsReqs, res.Requests, wantReq)
				}
				if res.Makespan <= 0 || res.Bandwidth <= 0 {
					t.Errorf("makespan %v bandwidth %v, want > 0", res.Makespan, res.Bandwidth)
				}
				if class != p.Class() {
					t.Errorf("no observation with I/O")
				}
			})
		}
	}
}

func hashRun(t *testing.T, cfg Config) [32]byte {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	run := dataset.Run{Scenario: workload.Scenario{Pattern: cfg.Patterns[0], IONodes: cfg.IONodes}, Scheduler: cfg.Scheduler}
	for sec := 0; ; sec++ {
		obs, done, err := s.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if err := w.Row(dataset.Row{Run: run, Second: sec, Obs: o}); err != nil {
				t.Fatal(err)
			}
		}
		if done {
			break
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r := s.Result()
	buf.WriteString(r.Makespan.String())
	return sha256.Sum256(buf.Bytes())
}

func TestSameSeedSameBytes(t *testing.T) {
	cfg := Config{Patterns: []workload.Pattern{pattern(256, workload.Shared, workload.Strided, rw.Write, 32<<10, 64<<20)},
		IONodes: 8, Interval: 50 * time.Millisecond, Seed: 42}
	a, b := hashRun(t, cfg), hashRun(t, cfg)
	if a != b {
		t.Fatalf("two runs with the same seed differ: %x vs %x", a, b)
	}
	cfg.Seed = 43
	if c := hashRun(t, cfg); c == a {
		t.Errorf("seed 43 gave the same output as seed 42: the seed reaches nothing")
	}
}

func TestHooksChangeTheWindow(t *testing.T) {
	cfg := Config{Patterns: []workload.Pattern{pattern(64, workload.Shared, workload.Strided, rw.Read, 32<<10, 32<<20)},
		IONodes: 2, Interval: 20 * time.Millisecond}
	var seen []time.Duration
	calls := 0
	_, err := Run(context.Background(), cfg, Hooks{OnInterval: func(_ time.Duration, obs []access.Observation) (time.Duration, bool) {
		calls++
		seen = append(seen, obs[0].Window)
		return 4 * time.Millisecond, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 3 {
		t.Fatalf("OnInterval called %d times, want several", calls)
	}
	if seen[0] != time.Millisecond || seen[len(seen)-1] != 4*time.Millisecond {
		t.Errorf("windows observed %v, want 1ms first and 4ms after the change", seen)
	}

	// Per node, through the Sim.
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWindow(1, 250*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got := s.Window(1); got != 250*time.Microsecond {
		t.Errorf("node 1 window %v, want 250µs", got)
	}
	if got := s.Window(0); got != time.Millisecond {
		t.Errorf("node 0 window %v, want 1ms (unchanged)", got)
	}
	if err := s.SetWindow(5, time.Millisecond); !errors.Is(err, ErrBadConfig) {
		t.Errorf("node 5 of 2: got %v, want ErrBadConfig", err)
	}
	if err := s.Switch(0, "fifo"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 32<<20 {
		t.Errorf("after a switch, %d bytes moved, want %d", res.Bytes, 32<<20)
	}
}

func TestWriteThenRead(t *testing.T) {
	p := pattern(32, workload.FilePerProcess, workload.Contiguous, rw.Write, 64<<10, 16<<20)
	res, err := Run(context.Background(), Config{Patterns: WriteRead(p, 2), IONodes: 2}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 4 {
		t.Fatalf("%d phases, want 4", len(res.Phases))
	}
	var sum time.Duration
	for _, ph := range res.Phases {
		sum += ph
	}
	if sum != res.Makespan {
		t.Errorf("phases add to %v, makespan %v", sum, res.Makespan)
	}
	if res.Bytes != 4*(16<<20) {
		t.Errorf("moved %d bytes, want %d", res.Bytes, 4*(16<<20))
	}
	// The data servers' counters per phase add up to the run's, and only
	// the read phases read.
	var phases, total ServerStats
	for k, st := range res.PhaseServers {
		phases = phases.Plus(st)
		if reads := st.PageHits + st.PageMisses; (k%2 == 0) != (reads == 0) {
			t.Errorf("phase %d (%s): %d page-cache chunks read", k, []string{"write", "read"}[k%2], reads)
		}
	}
	for _, st := range res.Servers {
		total = total.Plus(st)
	}
	if len(res.PhaseServers) != 4 || phases != total {
		t.Errorf("%d phases' server counters add to %+v, the run's are %+v", len(res.PhaseServers), phases, total)
	}
}

// The simulator stripes a file as the daemon's backends do
// (layout.Layout on the file's name), with each piece's offset in its
// server's object.
func TestSplit(t *testing.T) {
	cfg := Config{StripeBytes: 64 << 10, Servers: 4, Patterns: []workload.Pattern{{Processes: 8, Layout: workload.FilePerProcess}}}
	s := &Sim{cfg: cfg, layout: layout.Layout{StripeSize: 64 << 10, StripeCount: 4}}
	for f := range 8 {
		s.firsts = append(s.firsts, s.layout.FirstServer(cfg.Patterns[0].FileName(f), 4))
	}
	if slices.Min(s.firsts) == slices.Max(s.firsts) {
		t.Errorf("8 files all start on server %d", s.firsts[0])
	}
	tests := []struct {
		name      string
		file      int
		off, size int64
		want      []piece // with server as the offset from the file's first
	}{
		{"inside one stripe", 3, 32 << 10, 32 << 10, []piece{{0, 32 << 10, 32 << 10}}},
		{"one stripe per server", 0, 0, 256 << 10, []piece{{0, 0, 64 << 10}, {1, 0, 64 << 10}, {2, 0, 64 << 10}, {3, 0, 64 << 10}}},
		{"two rounds: a piece per stripe", 5, 0, 512 << 10, []piece{{0, 0, 64 << 10}, {1, 0, 64 << 10}, {2, 0, 64 << 10}, {3, 0, 64 << 10}, {0, 64 << 10, 64 << 10}, {1, 64 << 10, 64 << 10}, {2, 64 << 10, 64 << 10}, {3, 64 << 10, 64 << 10}}},
		{"second round", 3, 256 << 10, 64 << 10, []piece{{0, 64 << 10, 64 << 10}}},
		{"unaligned across two", 3, 60 << 10, 8 << 10, []piece{{0, 60 << 10, 4 << 10}, {1, 0, 4 << 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Clone(tt.want)
			for i := range want {
				want[i].server = (want[i].server + s.firsts[tt.file]) % 4
			}
			got := slices.Clone(s.split(tt.file, tt.off, tt.size))
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			// The daemon's view of the same bytes: the same servers and lengths.
			bp := s.layout.Split(nil, 4, s.layout.FirstServer(cfg.Patterns[0].FileName(tt.file), 4), tt.off, tt.size)
			if len(bp) != len(got) {
				t.Fatalf("layout.Layout has %d pieces, the simulator %d", len(bp), len(got))
			}
			for i := range bp {
				if bp[i].Server != got[i].server || bp[i].Length != got[i].length || s.layout.Local(bp[i].Offset) != got[i].local {
					t.Errorf("piece %d: backend %+v, simulator %+v", i, bp[i], got[i])
				}
			}
		})
	}
}

func TestEventQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var q eventQueue
	type ev struct {
		t   int64
		seq int
	}
	var want []ev
	for i := range 5000 {
		t := rng.Int64N(100)
		q.push(t, evIONArrive, int32(i))
		want = append(want, ev{t, i})
	}
	slices.SortStableFunc(want, func(a, b ev) int { return int(a.t - b.t) })
	for i := range want {
		e := q.pop()
		if e.t != want[i].t || int(e.id) != want[i].seq {
			t.Fatalf("pop %d: got (t %d, id %d), want (t %d, id %d)", i, e.t, e.id, want[i].t, want[i].seq)
		}
	}
	if q.len() != 0 {
		t.Errorf("%d events left", q.len())
	}
}

func TestConfigErrors(t *testing.T) {
	p := pattern(8, workload.Shared, workload.Contiguous, rw.Read, 4096, 1<<20)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no pattern", Config{}},
		{"bad pattern", Config{Patterns: []workload.Pattern{{Processes: 1}}}},
		{"negative I/O nodes", Config{Patterns: []workload.Pattern{p}, IONodes: -1}},
		{"too many servers", Config{Patterns: []workload.Pattern{p}, Servers: 300}},
		{"bad disk", Config{Patterns: []workload.Pattern{p}, Disk: disk.Config{Kind: "tape", CapacityBytes: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nil); !errors.Is(err, ErrBadConfig) {
				t.Errorf("got %v, want ErrBadConfig", err)
			}
		})
	}
	if _, err := New(Config{Patterns: []workload.Pattern{p}, Scheduler: "nope"}, nil); !errors.Is(err, sched.ErrUnknownAlgo) {
		t.Errorf("unknown scheduler: got %v, want sched.ErrUnknownAlgo", err)
	}
}

// With a dispatch delay an idle I/O node lets the requests of its
// consecutive ranks queue before dispatching: under FIFO they reach the
// data servers in runs from one node (switches between nodes 525 -> 144
// here), merged where contiguous, where dispatched at once each goes alone
// and the nodes alternate at a server. Every byte is still moved.
func TestDispatchDelayQueuesAndMerges(t *testing.T) {
	run := func(d time.Duration) Result {
		cfg := Config{Patterns: []workload.Pattern{pattern(128, workload.Shared, workload.Strided, rw.Read, 32<<10, 32<<20)},
			IONodes: 2, Scheduler: "fifo", DispatchDelay: d, Seed: 1}
		res, err := Run(context.Background(), cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	at, later := run(0), run(200*time.Microsecond)
	sum := func(r Result) (s ServerStats) {
		for _, x := range r.Servers {
			s = s.Plus(x)
		}
		return s
	}
	a, l := sum(at), sum(later)
	t.Logf("accesses %d -> %d, switches %d -> %d", a.Accesses, l.Accesses, a.Switches, l.Switches)
	if at.Bytes != later.Bytes || at.Bytes != 32<<20 {
		t.Fatalf("bytes %d and %d, want %d", at.Bytes, later.Bytes, 32<<20)
	}
	if l.Accesses >= a.Accesses {
		t.Errorf("accesses %d with a 200 µs dispatch delay, %d without: want fewer (merged)", l.Accesses, a.Accesses)
	}
	if l.Switches > a.Switches/2 {
		t.Errorf("switches between I/O nodes %d with the delay, %d without: want at most half", l.Switches, a.Switches)
	}
	bad := Config{Patterns: []workload.Pattern{pattern(8, workload.Shared, workload.Strided, rw.Read, 32<<10, 1<<20)}, DispatchDelay: -1}
	if _, err := Run(context.Background(), bad, Hooks{}); err == nil {
		t.Error("a negative dispatch delay was accepted")
	}
}
