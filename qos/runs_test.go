package qos

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// node is a small closed-loop model of an I/O node in front of one data
// server, for the job-window tests: each job keeps procs requests
// outstanding (a process sends its next request when its previous one
// completes, rtt later); the gate releases into a FIFO of up to depth
// requests, which the server serves one at a time, each taking its job's
// cost.
type node struct {
	g       *Gate
	jobs    []string
	cost    map[string]time.Duration // service time per request
	procs   int
	depth   int
	rtt     time.Duration
	now     time.Duration
	fifo    []sched.Request
	jobOf   map[uint64]string
	arrive  []arrival // requests on their way to the gate
	id      uint64
	served  map[string]time.Duration
	order   []string // the job of every request the server served, in order
	busyEnd time.Duration
	cur     *sched.Request
}

type arrival struct {
	at  time.Duration
	job string
}

func newNode(t *testing.T, cfg Config, jobs []string, cost map[string]time.Duration, procs int) *node {
	t.Helper()
	g, err := NewGate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{g: g, jobs: jobs, cost: cost, procs: procs, depth: 4, rtt: 100 * time.Microsecond,
		jobOf: map[uint64]string{}, served: map[string]time.Duration{}}
	for _, j := range jobs {
		for range procs {
			n.add(t, j)
		}
	}
	return n
}

func (n *node) add(t *testing.T, job string) {
	n.id++
	n.jobOf[n.id] = job
	if err := n.g.Add(n.now, job, sched.Request{ID: n.id, Length: 64 << 10, Op: rw.Write}); err != nil {
		t.Fatal(err)
	}
}

// run advances the model to d.
func (n *node) run(t *testing.T, d time.Duration) {
	t.Helper()
	for n.now < d {
		var retry time.Duration
		for len(n.fifo) < n.depth {
			_, r, ok, at := n.g.Next(n.now)
			if !ok {
				retry = at
				break
			}
			n.fifo = append(n.fifo, r)
		}
		if n.cur == nil && len(n.fifo) > 0 {
			r := n.fifo[0]
			n.fifo = n.fifo[1:]
			n.cur = &r
			n.busyEnd = n.now + n.cost[n.jobOf[r.ID]]
		}
		// The next event: the server's completion, an arrival, or the
		// gate's retry.
		next := d
		if n.cur != nil {
			next = min(next, n.busyEnd)
		}
		for _, a := range n.arrive {
			next = min(next, a.at)
		}
		if retry > n.now {
			next = min(next, retry)
		}
		if next <= n.now {
			next = n.now + time.Microsecond
		}
		n.now = next
		if n.cur != nil && n.busyEnd <= n.now {
			job := n.jobOf[n.cur.ID]
			c := n.cost[job]
			n.g.Done(n.cur.ID, c)
			n.served[job] += c
			n.order = append(n.order, job)
			n.arrive = append(n.arrive, arrival{at: n.now + n.rtt, job: job})
			n.cur = nil
		}
		k := 0
		for _, a := range n.arrive {
			if a.at <= n.now {
				n.add(t, a.job)
			} else {
				n.arrive[k] = a
				k++
			}
		}
		n.arrive = n.arrive[:k]
	}
}

// switches counts the changes of job in the server's order.
func (n *node) switches() int {
	k := 0
	for i := 1; i < len(n.order); i++ {
		if n.order[i] != n.order[i-1] {
			k++
		}
	}
	return k
}

func jain(xs ...float64) float64 {
	var s, q float64
	for _, x := range xs {
		s += x
		q += x * x
	}
	return s * s / (float64(len(xs)) * q)
}

// TestRunsKeepJobsApart: two closed-loop jobs whose processes together do
// not fill the node's depth (each has nothing queued in the gate most of
// the time, its requests in flight) reach the server in runs under job
// windows, and share its time equally (Jain's index >= 0.99), a seek-bound
// job against a streaming one. In slices without anticipation (the
// control), a job's window ends whenever its queue empties: the jobs'
// requests alternate at the server, many times more switches, and the
// seek-bound job takes most of the server's time.
func TestRunsKeepJobsApart(t *testing.T) {
	cost := map[string]time.Duration{"seek": 4 * time.Millisecond, "stream": 500 * time.Microsecond}
	const d = 10 * time.Second
	runs := newNode(t, Config{Fairness: 1}, []string{"seek", "stream"}, cost, 2)
	runs.run(t, d)
	slices := newNode(t, Config{Window: 20 * time.Millisecond, Anticipation: -1, Fairness: 1}, []string{"seek", "stream"}, cost, 2)
	slices.run(t, d)
	share := func(n *node) float64 { return jain(n.served["seek"].Seconds(), n.served["stream"].Seconds()) }
	t.Logf("runs: %d switches in %d requests, server time %v / %v", runs.switches(), len(runs.order), runs.served["seek"], runs.served["stream"])
	t.Logf("slices: %d switches in %d requests, server time %v / %v", slices.switches(), len(slices.order), slices.served["seek"], slices.served["stream"])
	if j := share(runs); j < 0.99 {
		t.Errorf("runs: server time %v and %v, Jain's index %.3f, want >= 0.99", runs.served["seek"], runs.served["stream"], j)
	}
	// A window of 100 ms holds about 25 seeks or 200 streaming requests:
	// the jobs switch about once per window, plus a request of each on
	// the other's side at the change.
	if most := 4 * int(d/(50*time.Millisecond)); runs.switches() > most {
		t.Errorf("runs: %d switches between jobs in %v, want at most %d", runs.switches(), d, most)
	}
	if runs.switches()*10 > slices.switches() || share(slices) > 0.9 {
		t.Errorf("control: slices switched %d times (runs %d) with Jain's index %.3f: the mix does not show what runs change",
			slices.switches(), runs.switches(), share(slices))
	}
}

// TestRunsWorkConserving: the job whose window runs holds the node only
// while its next request may be on its way: with nothing queued and a
// request in flight, for Anticipation after its last release (Next says
// when to ask again); with nothing in flight either (it completed), not
// at all. Another job's request then goes at once.
func TestRunsWorkConserving(t *testing.T) {
	g, err := NewGate(Config{})
	if err != nil {
		t.Fatal(err)
	}
	add := func(now time.Duration, job string, id uint64) {
		if err := g.Add(now, job, sched.Request{ID: id, Length: 64 << 10, Op: rw.Read}); err != nil {
			t.Fatal(err)
		}
	}
	add(0, "a", 1)
	if job, _, ok, _ := g.Next(0); !ok || job != "a" {
		t.Fatalf("first release %q %v, want a", job, ok)
	}
	add(time.Millisecond, "b", 2)
	if _, _, ok, retry := g.Next(time.Millisecond); ok || retry != DefaultAnticipation {
		t.Fatalf("a's window with a request in flight: released %v, retry %v; want held until %v", ok, retry, DefaultAnticipation)
	}
	if job, _, ok, _ := g.Next(DefaultAnticipation); !ok || job != "b" {
		t.Fatalf("after the anticipation: %q %v, want b", job, ok)
	}

	// Completed: a has nothing in flight, b goes at once.
	g, _ = NewGate(Config{})
	add(0, "a", 1)
	g.Next(0)
	g.Done(1, time.Millisecond)
	add(time.Millisecond, "b", 2)
	if job, _, ok, _ := g.Next(time.Millisecond); !ok || job != "b" {
		t.Fatalf("a idle: %q %v, want b at once", job, ok)
	}

	// An idle job's window is not wasted in the model either: a job with
	// one process against a backlogged one leaves the server busy.
	cost := map[string]time.Duration{"one": time.Millisecond, "many": time.Millisecond}
	n := newNode(t, Config{}, []string{"one", "many"}, cost, 1)
	n.jobs = []string{"one", "many"}
	for range 15 {
		n.add(t, "many")
	}
	n.procs = 16
	n.run(t, 2*time.Second)
	busy := (n.served["one"] + n.served["many"]).Seconds()
	if busy < 0.9*2 {
		t.Errorf("server busy %.3fs of 2s with a backlogged job: windows wasted", busy)
	}
}

// TestRunsWeightsAtRunTime: weights set by rules changed at run time
// divide the server's time between closed-loop jobs in runs: 1:1, then
// 3:1 after SetRules.
func TestRunsWeightsAtRunTime(t *testing.T) {
	cost := map[string]time.Duration{"x": 2 * time.Millisecond, "y": 300 * time.Microsecond}
	n := newNode(t, Config{Fairness: 1}, []string{"x", "y"}, cost, 8)
	n.run(t, 5*time.Second)
	x1, y1 := n.served["x"], n.served["y"]
	if r := x1.Seconds() / y1.Seconds(); r < 0.9 || r > 1.1 {
		t.Errorf("equal weights: server time %v and %v, ratio %.2f, want 1 within 10%%", x1, y1, r)
	}
	if err := n.g.SetRules(n.now, []Rule{{Job: "x", Weight: 3}}); err != nil {
		t.Fatal(err)
	}
	n.run(t, 15*time.Second)
	x2, y2 := n.served["x"]-x1, n.served["y"]-y1
	if r := x2.Seconds() / y2.Seconds(); r < 2.7 || r > 3.3 {
		t.Errorf("after weight=3 for x: server time %v and %v, ratio %.2f, want 3 within 10%%", x2, y2, r)
	}
}
