package record

import (
	"strings"
	"testing"

	"github.com/adaptio/adaptio/labels"
)

func TestLabelAccuracyAttributesSecondsToTheLongestPhase(t *testing.T) {
	ns := func(labels ...string) []NodeSecond {
		var out []NodeSecond
		for i, l := range labels {
			p, op, _ := strings.Cut(l, " ")
			out = append(out, NodeSecond{Node: i, Pattern: p, Op: op})
		}
		return out
	}
	r := Recording{
		Meta: Meta{Phases: []string{"SS write", "SS read"}},
		Iterations: []Iteration{
			{Phase: "SS write", Start: 0, Seconds: 2.2},
			{Phase: "SS read", Start: 2.2, Seconds: 1.5},
		},
		Seconds: []Second{
			{T: 1, Nodes: ns("SS write", "SS write")},
			{T: 2, Nodes: ns("SS write", "SC write")},
			{T: 3, Nodes: ns("SS read", "FPP read")}, // 0.2 s of write, 0.8 s of read: a read second
			{T: 4, Nodes: ns("SS read", "")},         // an idle node is not counted
			{T: 5, Nodes: ns("FPP write", "FPP write")},
		},
	}
	acc := LabelAccuracy(r)
	if len(acc) != 2 {
		t.Fatalf("%d phases, want 2: %+v", len(acc), acc)
	}
	if w := acc[0]; w.Phase != "SS write" || w.Correct != 3 || w.Total != 4 || w.Wrong["SC write"] != 1 {
		t.Errorf("SS write: %+v, want 3 of 4 with one SC write", w)
	}
	if rd := acc[1]; rd.Phase != "SS read" || rd.Correct != 2 || rd.Total != 3 || rd.Wrong["FPP read"] != 1 {
		t.Errorf("SS read: %+v, want 2 of 3 with one FPP read (the second after the last phase is skipped)", rd)
	}
	var b strings.Builder
	labels.Write(&b, acc)
	if !strings.Contains(b.String(), "SS read") || !strings.Contains(b.String(), "66.7% of 3 node-seconds (labelled FPP read 1)") {
		t.Errorf("printed accuracy:\n%s", b.String())
	}
}
