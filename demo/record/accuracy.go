package record

import "github.com/adaptio/adaptio/labels"

// LabelAccuracy measures detection per node-second of each phase of the
// recording (labels.Measure): each node's recorded second is attributed to
// the phase run that moved the most bytes at that node in it (from the
// iterations' start, duration and bytes, the node's own part when
// Iteration.Nodes has it, spread over its processes' spans when
// NodeSpan.Ends has them, else at the phase's mean rate; by time when
// bytes are unknown), and each node busy in it counts as correct when its
// detected pattern and operation are the phase's. Seconds in which no
// phase ran are skipped, so are idle nodes. Phases come in the order of
// r.Meta.Phases.
func LabelAccuracy(r Recording) []labels.Accuracy {
	runs := make([]labels.Run, len(r.Iterations))
	for i, it := range r.Iterations {
		runs[i] = labels.Run{Phase: it.Phase, Start: it.Start, Seconds: it.Seconds, Bytes: it.Bytes}
		for _, n := range it.Nodes {
			runs[i].Nodes = append(runs[i].Nodes, labels.Span(n))
		}
	}
	secs := make([]labels.Second, len(r.Seconds))
	for i, s := range r.Seconds {
		secs[i] = labels.Second{T: s.T, Span: s.Span}
		for _, n := range s.Nodes {
			secs[i].Nodes = append(secs[i].Nodes, labels.Label{Node: n.Node, Pattern: n.Pattern, Op: n.Op})
		}
	}
	return labels.Measure(r.Meta.Phases, runs, secs)
}
