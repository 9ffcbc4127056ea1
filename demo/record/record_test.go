package record

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
)

func TestStatsLinearTrend(t *testing.T) {
	tests := []struct {
		name              string
		secs              []float64
		first, best, last float64
		slope             float64
	}{
		{"falling line", []float64{10, 9, 8, 7}, 10, 7, 7, -1},
		{"flat", []float64{5, 5, 5}, 5, 5, 5, 0},
		{"one", []float64{3}, 3, 3, 3, 0},
		{"noisy", []float64{4, 2, 4, 2}, 4, 2, 2, -0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Meta{})
			for _, s := range tt.secs {
				r.AddIteration(Iteration{Phase: "SS write", Seconds: s})
				r.AddIteration(Iteration{Phase: "other", Seconds: 100})
			}
			st := Stats(r.Snapshot().Iterations, "SS write")
			if st.Count != len(tt.secs) || st.First != tt.first || st.Best != tt.best || st.LastMean != tt.last {
				t.Errorf("got count %d first %v best %v last %v, want %d %v %v %v", st.Count, st.First, st.Best, st.LastMean, len(tt.secs), tt.first, tt.best, tt.last)
			}
			if math.Abs(st.Slope-tt.slope) > 1e-9 {
				t.Errorf("slope %v, want %v", st.Slope, tt.slope)
			}
			// The trend passes through the mean at the mean iteration.
			mk := float64(len(tt.secs)+1) / 2
			if got := st.Intercept + st.Slope*mk; math.Abs(got-st.Mean) > 1e-9 {
				t.Errorf("trend at mean iteration %v, want mean %v", got, st.Mean)
			}
		})
	}
}

// The standard errors are the sample standard deviation over the square
// root of the count, over all iterations and over the last half.
func TestStatsStandardErrors(t *testing.T) {
	r := New(Meta{})
	for _, s := range []float64{9, 7, 4, 2} {
		r.AddIteration(Iteration{Phase: "SS read", Seconds: s})
	}
	st := Stats(r.Snapshot().Iterations, "SS read")
	// All: mean 5.5, squared deviations 12.25+2.25+2.25+12.25 = 29 over 3.
	if want := math.Sqrt(29.0 / 3 / 4); math.Abs(st.SE-want) > 1e-12 {
		t.Errorf("SE %v, want %v", st.SE, want)
	}
	// Last half {4, 2}: sd sqrt(2), over sqrt(2): 1.
	if math.Abs(st.LastHalfSE-1) > 1e-12 {
		t.Errorf("LastHalfSE %v, want 1", st.LastHalfSE)
	}
	if h := SummaryHalf(r.Snapshot().Iterations); math.Abs(h.SE["SS read"]-1) > 1e-12 || h.Phases["SS read"] != 3 {
		t.Errorf("SummaryHalf %+v, want mean 3, standard error 1", h)
	}
	one := New(Meta{})
	one.AddIteration(Iteration{Phase: "SS read", Seconds: 1})
	if st := Stats(one.Snapshot().Iterations, "SS read"); st.SE != 0 || st.LastHalfSE != 0 {
		t.Errorf("one iteration: SE %v, LastHalfSE %v, want 0", st.SE, st.LastHalfSE)
	}
}

func TestIterationNumbering(t *testing.T) {
	r := New(Meta{})
	var got [][2]int
	for _, p := range []string{"a", "b", "a", "a", "b"} {
		it := r.AddIteration(Iteration{Phase: p})
		got = append(got, [2]int{it.N, it.K})
	}
	want := [][2]int{{1, 1}, {2, 1}, {3, 2}, {4, 3}, {5, 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("iterations (N,K): got %v, want %v", got, want)
	}
	if ph := Phases(r.Snapshot().Iterations); !slices.Equal(ph, []string{"a", "b"}) {
		t.Errorf("Phases = %v, want [a b]", ph)
	}
}

func TestSince(t *testing.T) {
	r := New(Meta{Mode: "sim"})
	for i := 1; i <= 10; i++ {
		r.AddSecond(Second{T: float64(i)})
	}
	r.AddEvent(1, "info", "x")
	tests := []struct {
		name             string
		s, max           int
		wantN, wantFirst int
	}{
		{"all", 0, 0, 10, 1},
		{"after 7", 7, 0, 3, 8},
		{"capped", 0, 4, 4, 7},
		{"beyond end", 99, 0, 0, 0},
		{"negative", -5, 0, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := r.Since(tt.s, 0, 0, tt.max)
			if len(d.Seconds) != tt.wantN {
				t.Fatalf("got %d seconds, want %d", len(d.Seconds), tt.wantN)
			}
			if tt.wantN > 0 && d.Seconds[0].T != float64(tt.wantFirst) {
				t.Errorf("first second %v, want %d", d.Seconds[0].T, tt.wantFirst)
			}
			if d.Next != [3]int{10, 0, 1} {
				t.Errorf("next %v, want [10 0 1]", d.Next)
			}
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := New(Meta{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				r.AddSecond(Second{T: float64(i)})
				r.AddIteration(Iteration{Phase: "p"})
				_ = r.Since(i, i, 0, 10)
			}
		}()
	}
	ch := r.Changed()
	wg.Wait()
	select {
	case <-ch:
	default:
		t.Error("Changed channel not closed after changes")
	}
	s := r.Snapshot()
	if len(s.Seconds) != 800 || len(s.Iterations) != 800 || s.Iterations[799].K != 800 {
		t.Errorf("got %d seconds, %d iterations (last K %d), want 800, 800, 800", len(s.Seconds), len(s.Iterations), s.Iterations[799].K)
	}
}

// A Recorder keeps at most MaxSeconds seconds, letting the oldest go, while
// positions keep counting every second added.
func TestRecorderBoundsSeconds(t *testing.T) {
	r := New(Meta{})
	total := MaxSeconds + MaxSeconds/2 + 7
	for i := range total {
		r.AddSecond(Second{T: float64(i + 1)})
	}
	snap := r.Snapshot()
	if len(snap.Seconds) > MaxSeconds || snap.SecondsDropped+len(snap.Seconds) != total {
		t.Fatalf("kept %d seconds and dropped %d of %d, want at most %d kept and none lost from the count", len(snap.Seconds), snap.SecondsDropped, total, MaxSeconds)
	}
	if last := snap.Seconds[len(snap.Seconds)-1]; last.T != float64(total) {
		t.Errorf("newest kept second %v, want %d", last.T, total)
	}
	d := r.Since(total-5, 0, 0, 0)
	if len(d.Seconds) != 5 || d.Seconds[0].T != float64(total-4) || d.Next[0] != total {
		t.Errorf("Since(total-5): %d seconds from %v, next %d; want the last 5 and next %d", len(d.Seconds), d.Seconds[0].T, d.Next[0], total)
	}
	if d := r.Since(0, 0, 0, 0); len(d.Seconds) != len(snap.Seconds) || d.Next[0] != total {
		t.Errorf("Since(0): %d seconds, next %d; want every kept second and next %d", len(d.Seconds), d.Next[0], total)
	}
}

// Events are bounded the same way (MaxEvents), positions counting every
// event added.
func TestRecorderBoundsEvents(t *testing.T) {
	r := New(Meta{})
	total := MaxEvents + MaxEvents/2 + 3
	for i := range total {
		r.AddEvent(float64(i), "pattern", fmt.Sprint(i))
	}
	snap := r.Snapshot()
	if len(snap.Events) > MaxEvents || snap.EventsDropped+len(snap.Events) != total {
		t.Fatalf("kept %d events and dropped %d of %d, want at most %d kept and none lost from the count", len(snap.Events), snap.EventsDropped, total, MaxEvents)
	}
	d := r.Since(0, 0, total-2, 0)
	if len(d.Events) != 2 || d.Events[1].Text != fmt.Sprint(total-1) || d.Next[2] != total {
		t.Errorf("Since(events total-2): %d events, next %d; want the last 2 and next %d", len(d.Events), d.Next[2], total)
	}
}
