package labels

import (
	"strings"
	"testing"
)

func TestMeasureAttributesSecondsToTheLongestPhase(t *testing.T) {
	ns := func(ls ...string) []Label {
		var out []Label
		for i, l := range ls {
			p, op, _ := strings.Cut(l, " ")
			out = append(out, Label{Node: i, Pattern: p, Op: op})
		}
		return out
	}
	runs := []Run{
		{Phase: "SS write", Start: 0, Seconds: 2.2},
		{Phase: "SS read", Start: 2.2, Seconds: 1.5},
	}
	secs := []Second{
		{T: 1, Nodes: ns("SS write", "SS write")},
		{T: 2, Nodes: ns("SS write", "SC write")},
		{T: 3, Nodes: ns("SS read", "FPP read")}, // 0.2 s of write, 0.8 s of read: a read second
		{T: 4, Nodes: ns("SS read", "")},         // an idle node is not counted
		{T: 5, Nodes: ns("FPP write", "FPP write")},
	}
	acc := Measure([]string{"SS write", "SS read"}, runs, secs)
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
	Write(&b, acc)
	if !strings.Contains(b.String(), "66.7% of 3 node-seconds (labelled FPP read 1)") {
		t.Errorf("printed accuracy:\n%s", b.String())
	}
}

// A node's part by bytes: the second goes to the phase that moved more
// bytes at that node, not to the one that overlapped it longer.
func TestShareByBytes(t *testing.T) {
	r := Run{Phase: "SS write", Start: 0, Seconds: 4, Bytes: 400,
		Nodes: []Span{{Seconds: 2, Bytes: 100, Ends: []float64{1, 2}, EndBytes: []int64{90, 10}}}}
	if got := r.Share(0, 0, 1); got != 95 { // 90 of the first process, half of the second's 10
		t.Errorf("Share(node 0, [0,1]) = %v, want 95", got)
	}
	if got := r.Share(1, 0, 1); got != 100 { // node 1 unknown: the phase's mean rate
		t.Errorf("Share(node 1, [0,1]) = %v, want 100", got)
	}
	if got := (Run{Start: 1, Seconds: 2}).Share(0, 0, 1.5); got != 0.5 { // no bytes: by time
		t.Errorf("Share by time = %v, want 0.5", got)
	}
}
