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

// refTime is the naive reference of ShareTime's accounting: it keeps every
// release and completion and recomputes each job's virtual time from the
// whole history, where the gate keeps running sums.
type refTime struct {
	weight map[string]float64
	rel    []refRelease
	done   []refDone // completions in order, every job's
}

type refRelease struct {
	id     uint64
	job    string
	length int64
	est    float64 // ns per unit of weight, as the reference estimated it at release
	done   bool
	actual time.Duration
}

type refDone struct {
	job     string
	service time.Duration
	length  int64
}

// costPerByte recomputes a job's expected service time per byte from every
// completion so far: decayed sums over the job's own, else over all.
func (m *refTime) costPerByte(job string) float64 {
	var t, b, gt, gb float64
	for _, d := range m.done {
		t, b, gt, gb = t*costDecayIf(d.job == job), b*costDecayIf(d.job == job), gt*costDecay, gb*costDecay
		if d.job == job {
			t += float64(d.service)
			b += float64(d.length)
		}
		gt += float64(d.service)
		gb += float64(d.length)
	}
	switch {
	case b > 0:
		return t / b
	case gb > 0:
		return gt / gb
	}
	return DefaultCostPerByte
}

func costDecayIf(own bool) float64 {
	if own {
		return costDecay
	}
	return 1
}

// vt is a job's virtual time: actual service of its completed requests,
// estimates of those in flight, per unit of weight.
func (m *refTime) vt(job string) float64 {
	var v float64
	for _, r := range m.rel {
		if r.job != job {
			continue
		}
		if r.done {
			v += float64(r.actual) / m.weight[job]
		} else {
			v += r.est
		}
	}
	return v
}

// TestShareTimeAgainstReference drives a ShareTime gate (a choice at every
// request) with backlogged jobs through random releases and completions in
// any order, and checks every release against the naive reference: the job
// released has the least virtual time among the jobs (within rounding), and
// each job's ServiceTime is the sum of its requests' completions.
func TestShareTimeAgainstReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(t, "jobs")
		m := &refTime{weight: map[string]float64{}}
		var rules []Rule
		names := make([]string, n)
		sizes := make([]int64, n)
		for i := range names {
			names[i] = fmt.Sprint("j", i)
			w := rapid.IntRange(1, 4).Draw(t, "weight")
			m.weight[names[i]] = float64(w)
			rules = append(rules, Rule{Job: names[i], Weight: w})
			sizes[i] = rapid.Int64Range(4<<10, 1<<20).Draw(t, "size")
		}
		g, err := NewGate(Config{Rules: rules, Window: -1, Fairness: 1})
		if err != nil {
			t.Fatal(err)
		}
		var id uint64
		add := func(i int) {
			id++
			if err := g.Add(0, names[i], sched.Request{ID: id, Length: sizes[i], Op: rw.Read}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range names {
			add(i)
			add(i)
		}
		var inflight []int // indices into m.rel
		steps := rapid.IntRange(20, 200).Draw(t, "steps")
		for s := 0; s < steps; s++ {
			if len(inflight) > 0 && (len(inflight) > 8 || rapid.Bool().Draw(t, "complete")) {
				k := rapid.IntRange(0, len(inflight)-1).Draw(t, "which")
				r := &m.rel[inflight[k]]
				inflight = append(inflight[:k], inflight[k+1:]...)
				svc := time.Duration(rapid.Int64Range(0, int64(20*time.Millisecond)).Draw(t, "service"))
				g.Done(r.id, svc)
				g.Done(r.id, svc) // a second completion of the same id is ignored
				r.done, r.actual = true, svc
				m.done = append(m.done, refDone{job: r.job, service: svc, length: r.length})
				continue
			}
			least := math.Inf(1)
			for _, nm := range names {
				least = math.Min(least, m.vt(nm))
			}
			job, r, ok, _ := g.Next(0)
			if !ok {
				t.Fatal("nothing released from backlogged uncapped jobs")
			}
			if v := m.vt(job); v > least*(1+1e-9)+1e-6 {
				t.Fatalf("step %d: released job %s at virtual time %.3f, the least is %.3f", s, job, v, least)
			}
			est := float64(r.Length) * m.costPerByte(job) / m.weight[job]
			m.rel = append(m.rel, refRelease{id: r.ID, job: job, length: r.Length, est: est})
			inflight = append(inflight, len(m.rel)-1)
			var i int
			fmt.Sscanf(job, "j%d", &i)
			add(i) // the job stays backlogged
		}
		want := map[string]time.Duration{}
		for _, r := range m.rel {
			want[r.job] += r.actual
		}
		for _, st := range g.Stats() {
			if st.ServiceTime != want[st.Job] {
				t.Fatalf("job %s: ServiceTime %v, want %v (the sum of its completions)", st.Job, st.ServiceTime, want[st.Job])
			}
		}
	})
}

// TestShareTimeDividesServerTime runs backlogged jobs whose requests cost
// the server different times per byte (a seeking job and a streaming one)
// against one server: under ShareTime each job gets server time in
// proportion to its weight, within one window and two requests, whatever
// its bytes.
func TestShareTimeDividesServerTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(t, "jobs")
		window := time.Duration(rapid.Int64Range(-1, int64(50*time.Millisecond)).Draw(t, "window"))
		eff := window // the window in force per unit of weight
		if window == 0 {
			eff = DefaultWindow
		}
		var rules []Rule
		names := make([]string, n)
		size := make([]int64, n)
		perByte := make([]float64, n) // ns of service per byte
		weights := make([]float64, n)
		var maxCost float64
		for i := range names {
			names[i] = fmt.Sprint("j", i)
			w := rapid.IntRange(1, 3).Draw(t, "weight")
			weights[i] = float64(w)
			rules = append(rules, Rule{Job: names[i], Weight: w})
			size[i] = rapid.Int64Range(64<<10, 1<<20).Draw(t, "size")
			perByte[i] = rapid.Float64Range(1, 50).Draw(t, "nsPerByte")
			maxCost = math.Max(maxCost, float64(size[i])*perByte[i])
		}
		g, err := NewGate(Config{Rules: rules, Window: window, Fairness: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]time.Duration, n)
		var id uint64
		var now time.Duration
		idx := map[string]int{}
		for i, nm := range names {
			idx[nm] = i
			for k := 0; k < 2; k++ {
				id++
				_ = g.Add(now, nm, sched.Request{ID: id, Length: size[i], Op: rw.Write})
			}
		}
		d := 50 * max(eff, 10*time.Millisecond)
		for now < d {
			job, r, ok, _ := g.Next(now)
			if !ok {
				t.Fatal("nothing released from backlogged jobs")
			}
			i := idx[job]
			took := time.Duration(float64(r.Length) * perByte[i])
			now += took
			g.Done(r.ID, took)
			got[i] += took
			id++
			_ = g.Add(now, job, sched.Request{ID: id, Length: size[i], Op: rw.Write})
		}
		// Estimates at release are corrected at completion; a job is at
		// most one window (per weight) and two requests (the one whose
		// estimate was off, and the next) ahead of another in server time
		// per weight.
		bound := float64(max(eff, 0)) + 2*maxCost
		for i := range names {
			for j := range names {
				if diff := float64(got[i])/weights[i] - float64(got[j])/weights[j]; diff > bound {
					t.Fatalf("job %d had %v of the server (weight %.0f), job %d %v (weight %.0f): gap %.0f ns per weight > %.0f",
						i, got[i], weights[i], j, got[j], weights[j], diff, bound)
				}
			}
		}
	})
}
