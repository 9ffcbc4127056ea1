package ionode

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// TestGateInFrontOfScheduler runs a node whose one thread moves 100 MB/s
// with two backlogged jobs, one capped at 20 MB/s: the capped job keeps
// its rate, the other takes the rest, and the node never idles.
func TestGateInFrontOfScheduler(t *testing.T) {
	sw, err := sched.NewSwitcher("twins", sched.Config{Servers: 2})
	if err != nil {
		t.Fatal(err)
	}
	n := New(sw, Config{})
	g, err := qos.NewGate(qos.Config{Rules: []qos.Rule{{Job: "capped", Rate: 20e6}}})
	if err != nil {
		t.Fatal(err)
	}
	n.SetGate(0, g, 8)
	const size = 1 << 20
	var id uint64
	var now time.Duration
	off := map[string]int64{}
	add := func(job string) {
		id++
		err := n.AddJob(now, job, sched.Request{ID: id, Queue: int(id % 2), File: uint64(len(job)), Offset: off[job], Length: size, Op: rw.Write})
		if err != nil {
			t.Fatal(err)
		}
		off[job] += size
	}
	for k := 0; k < 16; k++ {
		add("capped")
		add("free")
	}
	if r, _ := n.Queued(); r != 32 {
		t.Fatalf("Queued = %d, want 32 (gate and scheduler)", r)
	}
	moved := map[uint64]int64{}
	const d = 5 * time.Second
	for now < d {
		a, ok, retry := n.Next(now, nil)
		if !ok {
			if retry <= now {
				t.Fatalf("idle at %v with %v pending, retry %v", now, n.Pending(), retry)
			}
			now = retry
			continue
		}
		took := time.Duration(float64(a.Length) / 100e6 * 1e9)
		now += took
		if err := n.Done(now, a, a.Length, took); err != nil {
			t.Fatal(err)
		}
		moved[a.File] += a.Length
		for k := int64(0); k < a.Length/size; k++ {
			if a.File == uint64(len("capped")) {
				add("capped")
			} else {
				add("free")
			}
		}
	}
	capped, free := float64(moved[uint64(len("capped"))]), float64(moved[uint64(len("free"))])
	if want := 20e6 * d.Seconds(); capped > want*1.1+2*size || capped < want*0.9 {
		t.Errorf("capped job moved %.0f bytes in %v, want %.0f within 10%%", capped, d, want)
	}
	if total := capped + free; total < 100e6*d.Seconds()*0.98 {
		t.Errorf("node moved %.0f bytes, want %.0f: the free job did not take what the cap frees", total, 100e6*d.Seconds())
	}
	// Removing the gate hands what it holds to the scheduler.
	n.SetGate(now, nil, 0)
	if gr, _ := n.gateLen(); gr != 0 {
		t.Fatalf("gate still holds %d requests", gr)
	}
	if r, _ := n.Queued(); r == 0 || !n.Pending() {
		t.Fatal("requests lost when the gate was removed")
	}
}

// TestGateChargedServerTime: two accesses to one data server dispatched at
// once end 10 ms and 25 ms later; the server was busy with the second from
// the first's end, so the gate charges 10 ms and 15 ms to their jobs.
// (Without anticipation: with it, a's window would hold b's request until
// a's completes.)
func TestGateChargedServerTime(t *testing.T) {
	sw, err := sched.NewSwitcher("fifo", sched.Config{Servers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := New(sw, Config{})
	g, err := qos.NewGate(qos.Config{Anticipation: -1})
	if err != nil {
		t.Fatal(err)
	}
	n.SetGate(0, g, 8)
	for i, job := range []string{"a", "b"} {
		if err := n.AddJob(0, job, sched.Request{ID: uint64(i + 1), File: uint64(i + 1), Length: 1 << 20, Op: rw.Read}); err != nil {
			t.Fatal(err)
		}
	}
	first, ok, _ := n.Next(0, nil)
	second, ok2, _ := n.Next(0, nil)
	if !ok || !ok2 {
		t.Fatal("two accesses not dispatched")
	}
	jobOf := map[uint64]string{1: "a", 2: "b"}
	firstJob, secondJob := jobOf[first.Batches[0].Requests[0].ID], jobOf[second.Batches[0].Requests[0].ID]
	if err := n.Done(10*time.Millisecond, first, first.Length, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := n.Done(25*time.Millisecond, second, second.Length, 25*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	for _, s := range g.Stats() {
		got[s.Job] = s.ServiceTime
	}
	want := map[string]time.Duration{firstJob: 10 * time.Millisecond, secondJob: 15 * time.Millisecond}
	for job, w := range want {
		if got[job] != w {
			t.Errorf("job %s charged %v, want %v", job, got[job], w)
		}
	}
}
