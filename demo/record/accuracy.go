package record

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

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

// LabelAccuracy measures detection per node-second of each phase: each
// node's recorded second [T-1, T] is attributed to the phase that moved the
// most bytes at that node in it (from the iterations' start, duration and
// bytes, the node's own part when Iteration.Nodes has it, spread over its
// processes' spans when NodeSpan.Ends has them, else at the phase's mean
// rate; by time when bytes are unknown), as the Accumulator
// describes an interval by its majority operation, and each node busy in it
// counts as correct when its detected pattern and operation are the
// phase's (phase names are "CLASS op"). Seconds in which no phase ran are
// skipped, so are idle nodes. Phases come in the order of r.Meta.Phases.
func LabelAccuracy(r Recording) []Accuracy {
	byPhase := map[string]*Accuracy{}
	order := append([]string(nil), r.Meta.Phases...)
	for _, s := range r.Seconds {
		from, to := s.Covers()
		for _, n := range s.Nodes {
			if n.Pattern == "" {
				continue
			}
			phase, best := "", 0.0
			for _, it := range r.Iterations {
				if weight := it.share(n.Node, from, to); weight > best {
					phase, best = it.Phase, weight
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

// WriteAccuracy prints one line per phase: the fraction correct, the
// counts, and what the wrong labels were.
func WriteAccuracy(w io.Writer, acc []Accuracy) {
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
