package fwdbench_test

import (
	"context"
	"math/rand/v2"
	"path"
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// seededTrace is a trace of procs processes over 3 files: reads and
// writes of 1 byte to 200 KiB at any offset (reads of ranges never written
// too), a few after a think time of up to 2 ms.
func seededTrace(procs, reqs int) *workload.Recorded {
	rng := rand.New(rand.NewPCG(5, 6))
	t := &workload.Recorded{Procs: make([][]workload.Request, procs)}
	for f := range 3 {
		t.Names = append(t.Names, workload.TraceFileName(f))
	}
	for p := range procs {
		for range reqs {
			r := workload.Request{File: int32(rng.IntN(3)), Offset: rng.Int64N(4 << 20), Length: 1 + rng.Int64N(200<<10), Op: rw.Op(1 + rng.IntN(2))}
			if rng.IntN(8) == 0 {
				r.Think = time.Duration(rng.Int64N(int64(2 * time.Millisecond)))
			}
			t.Procs[p] = append(t.Procs[p], r)
		}
	}
	return t
}

// A trace replayed through a forwarder moves exactly its requests' bytes
// and every byte read is checked; the files then hold Fill's content
// wherever the trace wrote.
func TestRunTrace(t *testing.T) {
	addr, _ := startForwarder(t)
	c, extra := dial(t, addr), dial(t, addr)
	tr := seededTrace(6, 25)
	read, written := tr.Bytes()
	res, err := fwdbench.RunTrace(context.Background(), c, tr, fwdbench.TraceOptions{Clients: []*client.Client{extra}, Seed: 3, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != tr.Requests() || res.Read != read || res.Written != written || res.Processes != 6 {
		t.Errorf("result %+v: want %d requests, %d bytes read, %d written, 6 processes", res, tr.Requests(), read, written)
	}
	for p, reqs := range tr.Procs {
		for i, r := range reqs {
			if r.Op != rw.Write {
				continue
			}
			f, err := c.Open(path.Join("replay", tr.Names[r.File]))
			if err != nil {
				t.Fatal(err)
			}
			got, want := make([]byte, r.Length), make([]byte, r.Length)
			if _, err := f.ReadAt(got, r.Offset); err != nil {
				t.Fatal(err)
			}
			f.Close()
			fwdbench.Fill(want, 3, int(r.File), r.Offset)
			if string(got) != string(want) {
				t.Fatalf("process %d, write %d: the file does not hold Fill's bytes", p, i)
			}
		}
	}
}

// Think times are waited, scaled by TimeScale; a negative scale drops them.
func TestRunTraceThinkTime(t *testing.T) {
	addr, _ := startForwarder(t)
	c := dial(t, addr)
	tr := &workload.Recorded{Names: []string{"a"}, Procs: [][]workload.Request{{
		{Length: 10, Op: rw.Write}, {Think: 100 * time.Millisecond, Length: 10, Op: rw.Read}}}}
	for _, tt := range []struct {
		scale   float64
		atLeast time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}} {
		res, err := fwdbench.RunTrace(context.Background(), c, tr, fwdbench.TraceOptions{TimeScale: tt.scale})
		if err != nil {
			t.Fatal(err)
		}
		if res.Makespan < tt.atLeast {
			t.Errorf("time scale %v: makespan %v, want at least %v", tt.scale, res.Makespan, tt.atLeast)
		}
	}
	res, err := fwdbench.RunTrace(context.Background(), c, tr, fwdbench.TraceOptions{TimeScale: -1})
	if err != nil || res.Requests != 2 || res.Makespan >= 100*time.Millisecond {
		t.Errorf("no think time: %+v, %v; want 2 requests well within 100ms", res, err)
	}
}
