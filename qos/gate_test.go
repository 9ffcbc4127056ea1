package qos

import (
	"fmt"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

type release struct {
	at  time.Duration
	job string
	r   sched.Request
}

// refBucket is the naive reference of one job's bucket: replayed from the
// job's releases alone, one step per release.
type refBucket struct {
	rate, burst, tokens float64
	last                time.Duration
}

func (b *refBucket) allows(now time.Duration, n int64) bool {
	t := math.Min(b.burst, b.tokens+b.rate*(now-b.last).Seconds())
	return t >= math.Min(float64(n), b.burst)-1e-6
}

func (b *refBucket) take(now time.Duration, n int64) {
	b.tokens = math.Min(b.burst, b.tokens+b.rate*(now-b.last).Seconds()) - float64(n)
	b.last = now
}

// TestGateRateProperty checks a capped job against its rule: over any window
// it never releases more than rate x window + max(burst, largest request);
// the gate never withholds a head the reference bucket allows
// (work-conserving) beyond the anticipation of a job window (no more than
// DefaultAnticipation after the last release); each job's requests leave
// in their order; everything added leaves eventually. Nothing completes:
// every released request stays in flight.
func TestGateRateProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := float64(rapid.Int64Range(1e6, 100e6).Draw(t, "rate"))
		burst := rapid.Int64Range(0, 8<<20).Draw(t, "burst")
		rules := []Rule{{Job: "a", Rate: rate, Burst: burst}}
		capB := rapid.Bool().Draw(t, "capB")
		if capB {
			rules = append(rules, Rule{Job: Any, Op: rw.Write, Rate: rate / 2})
		}
		g, err := NewGate(Config{Rules: rules, Quantum: rapid.Int64Range(4<<10, 4<<20).Draw(t, "quantum")})
		if err != nil {
			t.Fatal(err)
		}
		if burst == 0 {
			burst = DefaultBurst(rate)
		}
		ref := map[string]*refBucket{"a": {rate: rate, burst: float64(burst), tokens: float64(burst)}}
		refB := map[string]*refBucket{} // job=* gives every job a bucket of its own
		bucketOf := func(job string, op rw.Op) *refBucket {
			if job == "a" {
				return ref["a"]
			}
			if capB && op == rw.Write {
				if refB[job] == nil {
					bb := float64(DefaultBurst(rate / 2))
					refB[job] = &refBucket{rate: rate / 2, burst: bb, tokens: bb}
				}
				return refB[job]
			}
			return nil
		}
		var now, lastRelease time.Duration
		var out []release
		queued := map[string][]sched.Request{}
		var maxLen int64
		id := uint64(0)
		check := func(job string, r sched.Request) {
			q := queued[job]
			if len(q) == 0 || q[0].ID != r.ID {
				t.Fatalf("job %s released request %d out of order (queue %v)", job, r.ID, q)
			}
			queued[job] = q[1:]
			if b := bucketOf(job, r.Op); b != nil {
				if !b.allows(now, r.Length) {
					t.Fatalf("at %v job %s released %d bytes its reference bucket refuses", now, job, r.Length)
				}
				b.take(now, r.Length)
			}
			out = append(out, release{now, job, r})
			lastRelease = now
		}
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			now += time.Duration(rapid.Int64Range(0, int64(50*time.Millisecond)).Draw(t, "dt"))
			for k := rapid.IntRange(0, 4).Draw(t, "adds"); k > 0; k-- {
				job := rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "job")
				op := rapid.SampledFrom([]rw.Op{rw.Read, rw.Write}).Draw(t, "op")
				id++
				r := sched.Request{ID: id, Length: rapid.Int64Range(1, 4<<20).Draw(t, "len"), Op: op}
				maxLen = max(maxLen, r.Length)
				if err := g.Add(now, job, r); err != nil {
					t.Fatal(err)
				}
				r.Arrival = now
				queued[job] = append(queued[job], r)
			}
			room := rapid.IntRange(0, 8).Draw(t, "room")
			for ; room > 0; room-- {
				job, r, ok, retry := g.Next(now)
				if !ok {
					for j, q := range queued {
						if len(q) > 0 {
							if b := bucketOf(j, q[0].Op); (b == nil || b.allows(now, q[0].Length)) && (retry > lastRelease+DefaultAnticipation || len(out) == 0) {
								t.Fatalf("at %v job %q's head (%d bytes) may go, but Next released nothing until %v (last release %v)", now, j, q[0].Length, retry, lastRelease)
							}
							if retry <= now {
								t.Fatalf("nothing released with requests queued, retry %v not after now %v", retry, now)
							}
						}
					}
					break
				}
				check(job, r)
			}
		}
		// Drain: everything leaves.
		for guard := 0; ; guard++ {
			job, r, ok, retry := g.Next(now)
			if ok {
				check(job, r)
				continue
			}
			if retry == 0 {
				break
			}
			if retry <= now || guard > 100000 {
				t.Fatalf("drain stuck at %v (retry %v)", now, retry)
			}
			now = retry
		}
		if n, b := g.Len(); n != 0 || b != 0 {
			t.Fatalf("after the drain the gate holds %d requests, %d bytes", n, b)
		}
		for j, q := range queued {
			if len(q) != 0 {
				t.Fatalf("job %q: %d requests never released", j, len(q))
			}
		}
		// The window property for job a, over every pair of its releases.
		var a []release
		for _, e := range out {
			if e.job == "a" {
				a = append(a, e)
			}
		}
		slack := float64(max(burst, maxLen)) + 1
		for i := range a {
			var sum float64
			for k := i; k < len(a); k++ {
				sum += float64(a[k].r.Length)
				if lim := rate*(a[k].at-a[i].at).Seconds() + slack; sum > lim {
					t.Fatalf("job a sent %.0f bytes in [%v, %v], more than rate x window + max(burst, request) = %.0f", sum, a[i].at, a[k].at, lim)
				}
			}
		}
	})
}

// TestGateWeightedShares checks deficit round robin (ShareBytes) under saturation: jobs
// that always have requests queued get bytes in proportion to their
// weights, each within one quantum and one request of its share.
func TestGateWeightedShares(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "jobs")
		quantum := rapid.Int64Range(4<<10, 2<<20).Draw(t, "quantum")
		equal := rapid.Bool().Draw(t, "equal")
		var rules []Rule
		weights := make([]int64, n)
		for i := range weights {
			weights[i] = 1
			if !equal {
				weights[i] = int64(rapid.IntRange(1, 4).Draw(t, "weight"))
			}
			rules = append(rules, Rule{Job: fmt.Sprint("j", i), Weight: int(weights[i])})
		}
		g, err := NewGate(Config{Rules: rules, Share: ShareBytes, Quantum: quantum})
		if err != nil {
			t.Fatal(err)
		}
		sizes := make([]int64, n) // each job's own request size: a mix of large and small requests
		var maxLen int64
		for i := range sizes {
			sizes[i] = rapid.Int64Range(4<<10, 2<<20).Draw(t, "size")
			maxLen = max(maxLen, sizes[i])
		}
		got := make([]int64, n)
		var id uint64
		for i := 0; i < n; i++ {
			for k := 0; k < 2; k++ {
				id++
				_ = g.Add(0, fmt.Sprint("j", i), sched.Request{ID: id, Length: sizes[i], Op: rw.Write})
			}
		}
		rounds := rapid.IntRange(50, 400).Draw(t, "releases")
		for k := 0; k < rounds; k++ {
			job, r, ok, _ := g.Next(time.Duration(k))
			if !ok {
				t.Fatal("nothing released from backlogged uncapped jobs")
			}
			var i int
			fmt.Sscanf(job, "j%d", &i)
			got[i] += r.Length
			id++
			_ = g.Add(time.Duration(k), job, sched.Request{ID: id, Length: r.Length, Op: rw.Write})
		}
		// Normalised service: bytes per unit of weight; DRR keeps every
		// pair within a quantum plus a request of each other.
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				d := float64(got[i])/float64(weights[i]) - float64(got[j])/float64(weights[j])
				if bound := float64(quantum) + 2*float64(maxLen); d > bound {
					t.Fatalf("job %d got %d bytes (weight %d), job %d got %d (weight %d): normalised gap %.0f > %.0f",
						i, got[i], weights[i], j, got[j], weights[j], d, bound)
				}
			}
		}
	})
}

// serve runs jobs against a data path that moves capacity bytes per second,
// one request at a time, each job keeping two requests of size bytes
// queued, for d of virtual time, and returns the bytes each job moved.
func serve(t *testing.T, g *Gate, jobs []string, size int64, capacity float64, d time.Duration) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	var now time.Duration
	var id uint64
	for _, j := range jobs {
		for k := 0; k < 2; k++ {
			id++
			if err := g.Add(now, j, sched.Request{ID: id, Length: size, Op: rw.Write}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for now < d {
		job, r, ok, retry := g.Next(now)
		if !ok {
			if retry == 0 {
				t.Fatal("gate empty with backlogged jobs")
			}
			now = retry
			continue
		}
		took := time.Duration(float64(r.Length) / capacity * 1e9)
		now += took
		g.Done(r.ID, took)
		got[job] += r.Length
		id++
		if err := g.Add(now, job, sched.Request{ID: id, Length: size, Op: rw.Write}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// TestGateCapFreesBandwidth checks that a capped job holds its rate within
// 5% and the uncapped job takes every byte it leaves, on a saturated node.
func TestGateCapFreesBandwidth(t *testing.T) {
	const capacity = 1e9 // bytes/s
	const d = 10 * time.Second
	for _, rate := range []float64{50e6, 200e6, 400e6} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			g, err := NewGate(Config{Rules: []Rule{{Job: "capped", Rate: rate}}})
			if err != nil {
				t.Fatal(err)
			}
			got := serve(t, g, []string{"capped", "free"}, 1<<20, capacity, d)
			wantCapped := rate * d.Seconds()
			if c := float64(got["capped"]); math.Abs(c-wantCapped) > 0.05*wantCapped {
				t.Errorf("capped job moved %.0f bytes, want %.0f within 5%%", c, wantCapped)
			}
			total := float64(got["capped"] + got["free"])
			if want := capacity * d.Seconds(); total < want-2<<20 {
				t.Errorf("the jobs moved %.0f bytes together, want the node's %.0f: the free job did not take what the cap frees", total, want)
			}
		})
	}
	t.Run("equal", func(t *testing.T) {
		for _, share := range []Basis{ShareBytes, ShareTime} {
			g, _ := NewGate(Config{Share: share})
			got := serve(t, g, []string{"x", "y"}, 1<<20, capacity, d)
			// Within a window's bytes (ShareTime) and two requests.
			bound := int64(2 << 20)
			if share == ShareTime {
				bound += int64(DefaultWindow.Seconds() * capacity)
			}
			if x, y := got["x"], got["y"]; x-y > bound || y-x > bound {
				t.Errorf("%v: equal jobs got %d and %d bytes, want within %d", share, x, y, bound)
			}
		}
	})
}

func TestSetRulesKeepsQueue(t *testing.T) {
	g, err := NewGate(Config{Rules: []Rule{{Job: "a", Rate: 1e6, Burst: 1e6}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 3; i++ {
		_ = g.Add(0, "a", sched.Request{ID: i, Length: 1e6, Op: rw.Read})
	}
	if _, _, ok, _ := g.Next(0); !ok {
		t.Fatal("the first request fits the full bucket")
	}
	if _, _, ok, retry := g.Next(0); ok || retry != time.Second+1 {
		t.Fatalf("second request: ok %v retry %v, want throttled until 1s", ok, retry)
	}
	if err := g.SetRules(time.Millisecond, []Rule{{Job: "a", Weight: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, _, ok, _ := g.Next(time.Millisecond); !ok {
			t.Fatal("without a cap the queued requests go at once")
		}
	}
	if err := g.SetRules(0, []Rule{{Job: "a"}}); err == nil {
		t.Fatal("a rule without rate or weight was accepted")
	}
	if s := g.Stats(); len(s) != 1 || s[0].Released != 3 || s[0].Weight != 2 || s[0].Throttled != 1 || s[0].ThrottledTime != time.Millisecond {
		t.Fatalf("stats %+v", s)
	}
}

// BenchmarkGate measures one Add and one Next of a gate with 8 backlogged
// jobs, half of them under a rate rule: the QoS cost per request piece.
func BenchmarkGate(b *testing.B) {
	g, err := NewGate(Config{Rules: []Rule{{Job: "j0", Rate: 1e12}, {Job: "j2", Rate: 1e12}, {Job: "j4", Rate: 1e12}, {Job: "j6", Rate: 1e12}}})
	if err != nil {
		b.Fatal(err)
	}
	jobs := []string{"j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"}
	for i, j := range jobs {
		for k := 0; k < 4; k++ {
			_ = g.Add(0, j, sched.Request{ID: uint64(i*4 + k + 1), Length: 64 << 10, Op: rw.Write})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := time.Duration(i) * time.Microsecond
		job, r, ok, _ := g.Next(now)
		if !ok {
			b.Fatal("throttled")
		}
		_ = g.Add(now, job, r)
	}
}
