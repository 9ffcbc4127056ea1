// Package labels measures how well the Council's detection labels the
// phases of a run: each node-second is attributed to the phase that moved
// the most bytes at that node in it, and counts as right when the node's
// detected pattern and operation are the phase's. The demo (its
// recording) and `adaptio eval labels` (a decision log against an
// application's own phases) measure with it. Pure: no files, no clock.
//
//	runs := []labels.Run{{Phase: "SS write", Start: 0, Seconds: 2.2}}
//	secs := []labels.Second{{T: 1, Nodes: []labels.Label{{Node: 0, Pattern: "SS", Op: "write"}}}}
//	acc := labels.Measure([]string{"SS write"}, runs, secs)
//	labels.Write(os.Stdout, acc)
package labels

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Label is what detection said of one I/O node in one second.
type Label struct {
	Node    int
	Pattern string // detected class: "FPP", "SC", "SS" or "" (idle)
	Op      string // majority operation: "read", "write" or ""
}

// Second is one second's labels: the reports at T (seconds since the
// start of the run) describing the Span seconds before it.
type Second struct {
	T     float64
	Span  float64 // seconds before T the reports cover (0: one)
	Nodes []Label
}

// Covers returns the span [T - Span, T] the second's reports describe.
func (s Second) Covers() (lo, hi float64) {
	span := s.Span
	if span <= 0 {
		span = 1
	}
	return s.T - span, s.T
}

// Span is one I/O node's part of a phase run: its processes all started
// at the run's Start; they ended Seconds later and moved Bytes. Ends is,
// when known, when each of the node's processes ended (seconds after
// Start), each having moved its part of Bytes at an even rate from Start:
// EndBytes[i], or an equal part when EndBytes is empty.
type Span struct {
	Seconds  float64
	Bytes    int64
	Ends     []float64
	EndBytes []int64
}

// Part is a piece of an I/O node's part of a phase: processes that moved
// Bytes at an even rate from the phase's start until Seconds after it.
type Part struct {
	Seconds float64
	Bytes   int64
}

// Parts returns s as pieces moving their bytes at an even rate: one per
// process when Ends is known (EndBytes each, or equal parts of Bytes, the
// remainder in the last), else the node's whole part.
func (s Span) Parts() []Part {
	if len(s.Ends) == 0 {
		return []Part{{s.Seconds, s.Bytes}}
	}
	out := make([]Part, len(s.Ends))
	each := s.Bytes / int64(len(s.Ends))
	for i, e := range s.Ends {
		out[i] = Part{e, each}
		switch {
		case len(s.EndBytes) == len(s.Ends):
			out[i].Bytes = s.EndBytes[i]
		case i == len(s.Ends)-1:
			out[i].Bytes = s.Bytes - each*int64(len(s.Ends)-1)
		}
	}
	return out
}

// Run is one run of a phase: it started at Start (seconds since the start
// of the run), lasted Seconds and moved Bytes; Nodes is, when known, each
// I/O node's part by node index.
type Run struct {
	Phase   string // "CLASS op", e.g. "SS write"
	Start   float64
	Seconds float64
	Bytes   int64
	Nodes   []Span
}

// span returns the part of the phase node ran: its own when known, else
// the phase's.
func (r Run) span(node int) Span {
	if node >= 0 && node < len(r.Nodes) && r.Nodes[node].Seconds > 0 {
		return r.Nodes[node]
	}
	return Span{Seconds: r.Seconds, Bytes: r.Bytes}
}

// Share returns how much of the phase node ran in [lo, hi] (seconds since
// the start of the run): the bytes it moved there, from its processes'
// ends when known (Span.Ends), else at the node's mean rate; or, when
// bytes are unknown, the time the phase overlapped [lo, hi].
func (r Run) Share(node int, lo, hi float64) float64 {
	s := r.span(node)
	overlap := func(secs float64) float64 { return max(0, min(r.Start+secs, hi)-max(r.Start, lo)) }
	if s.Bytes <= 0 {
		return overlap(s.Seconds)
	}
	var sum float64
	for _, p := range s.Parts() {
		if p.Seconds > 0 {
			sum += float64(p.Bytes) * overlap(p.Seconds) / p.Seconds
		}
	}
	return sum
}

// Accuracy is how often the Council labelled one phase's busy node-seconds
// with the phase's own class and operation.
type Accuracy struct {
	Phase   string // e.g. "SS read": class and operation expected
	Correct int    // node-seconds labelled as the phase
	Total   int    // node-seconds with I/O attributed to the phase
	Wrong   map[string]int
}

// Fraction is Correct / Total (0 when Total is 0).
func (a Accuracy) Fraction() float64 {
	if a.Total == 0 {
		return 0
	}
	return float64(a.Correct) / float64(a.Total)
}

// Measure measures detection per node-second of each phase: each node's
// second (Second.Covers) is attributed to the phase run that moved the
// most bytes at that node in it (Run.Share; by time when bytes are
// unknown), as the Accumulator describes an interval by its majority
// operation, and each node busy in it counts as correct when its detected
// pattern and operation are the phase's (phase names are "CLASS op").
// Seconds in which no phase ran are skipped, so are idle nodes. Phases
// come in the order of order, then those not in it as first met.
func Measure(order []string, runs []Run, seconds []Second) []Accuracy {
	byPhase := map[string]*Accuracy{}
	order = slices.Clone(order)
	for _, s := range seconds {
		from, to := s.Covers()
		for _, n := range s.Nodes {
			if n.Pattern == "" {
				continue
			}
			phase, best := "", 0.0
			for _, r := range runs {
				if weight := r.Share(n.Node, from, to); weight > best {
					phase, best = r.Phase, weight
				}
			}
			if phase == "" {
				continue
			}
			a := byPhase[phase]
			if a == nil {
				a = &Accuracy{Phase: phase, Wrong: map[string]int{}}
				byPhase[phase] = a
				if !slices.Contains(order, phase) {
					order = append(order, phase)
				}
			}
			a.Total++
			if label := n.Pattern + " " + n.Op; label == phase {
				a.Correct++
			} else {
				a.Wrong[label]++
			}
		}
	}
	var out []Accuracy
	for _, p := range order {
		if a := byPhase[p]; a != nil {
			out = append(out, *a)
		}
	}
	return out
}

// Write prints one line per phase: the fraction correct, the counts, and
// what the wrong labels were.
func Write(w io.Writer, acc []Accuracy) {
	for _, a := range acc {
		var wrong []string
		for _, l := range slices.Sorted(maps.Keys(a.Wrong)) {
			wrong = append(wrong, fmt.Sprintf("%s %d", l, a.Wrong[l]))
		}
		extra := ""
		if len(wrong) > 0 {
			extra = " (labelled " + strings.Join(wrong, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-10s %5.1f%% of %d node-seconds%s\n", a.Phase, 100*a.Fraction(), a.Total, extra)
	}
}
