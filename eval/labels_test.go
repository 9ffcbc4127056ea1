package eval_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/labels"
)

const phasesCSV = `phase,start,end
SS write,2026-11-25 10:00:00.5+00:00,2026-11-25T10:00:04.5Z
SS read,2026-11-25T10:00:04.5Z,2026-11-25T10:00:07.5Z
`

// round is one decision-log line at second t after 10:00:00 with the
// given node labels ("SS write", "idle").
func round(t int, labels ...string) string {
	wall := time.Date(2026, 11, 25, 10, 0, t, 0, time.UTC).Format(time.RFC3339Nano)
	var nodes []string
	for i, l := range labels {
		if l == "idle" {
			nodes = append(nodes, fmt.Sprintf(`{"node":%d,"idle":true,"probs":[0,0,0]}`, i))
			continue
		}
		p, op, _ := strings.Cut(l, " ")
		nodes = append(nodes, fmt.Sprintf(`{"node":%d,"op":%q,"pattern":%q,"probs":[0,0,1],"bw":1}`, i, op, p))
	}
	return fmt.Sprintf(`{"round":%d,"at_ns":%d,"wall":%q,"win_ns":1000000,"nodes":[%s]}`, t, t*1e9, wall, strings.Join(nodes, ","))
}

func TestLabelAccuracy(t *testing.T) {
	phases, err := eval.ReadPhases(strings.NewReader(phasesCSV))
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join([]string{
		round(1, "SC write", "SS write"), // [0,1]: half before the first phase, still SS write's
		round(2, "SS write", "SS write"),
		round(3, "SS write", "idle"),
		round(4, "SS write", "SS write"),
		round(5, "FPP write", "SS read"), // [4,5]: half write, half read: the first wins a tie
		round(6, "SS read", "SS read"),
		round(7, "SS read", "FPP read"),
		round(9, "SC read", "SC read"), // after every phase: not counted
	}, "\n")
	start := phases[0].Start
	secs, err := eval.ReadDecisionSeconds(strings.NewReader(log), start)
	if err != nil {
		t.Fatal(err)
	}
	acc := eval.LabelAccuracy(phases, secs, start, 0)
	got := fmt.Sprint(acc)
	if len(acc) != 2 || acc[0].Phase != "SS write" || acc[0].Correct != 6 || acc[0].Total != 9 ||
		acc[1].Phase != "SS read" || acc[1].Correct != 3 || acc[1].Total != 4 {
		t.Fatalf("accuracy %s; want SS write 6 of 9, SS read 3 of 4", got)
	}
	// Skipping 0.4 s at each edge drops the seconds [0,1] and [4,5].
	acc = eval.LabelAccuracy(phases, secs, start, 400*time.Millisecond)
	if acc[0].Correct != 5 || acc[0].Total != 5 || acc[1].Correct != 3 || acc[1].Total != 4 {
		t.Fatalf("with skip: %v; want SS write 5 of 5, SS read 3 of 4", acc)
	}
}

func TestReadPhasesErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"empty", "", "header"},
		{"wrong header", "name,from,to\n", "want phase,start,end"},
		{"no phases", "phase,start,end\n", "no phase"},
		{"bad name", "phase,start,end\nSS append,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z\n", `phase "SS append"`},
		{"bad time", "phase,start,end\nSS write,yesterday,2026-11-25T10:00:01Z\n", "line 2, column start"},
		{"end before start", "phase,start,end\nSS write,2026-11-25T10:00:02Z,2026-11-25T10:00:01Z\n", "not after start"},
		{"wrong field count", "phase,start,end\nSS write,2026-11-25T10:00:00Z\n", "2 fields, want 3"},
		{"bad bytes", "phase,start,end,bytes\nSS write,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z,lots\n", "column bytes"},
		{"bad fourth column", "phase,start,end,size\n", "want phase,start,end[,bytes[,node]]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eval.ReadPhases(strings.NewReader(tt.in))
			if !errors.Is(err, eval.ErrBadLabels) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrBadLabels mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := eval.ReadPhases(strings.NewReader("\ufeff" + phasesCSV)); err != nil {
		t.Fatalf("a BOM: %v", err)
	}
}

func TestReadDecisionSecondsErrors(t *testing.T) {
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if _, err := eval.ReadDecisionSeconds(strings.NewReader(round(1, "SS write")+"\n{not json\n"), start); !errors.Is(err, eval.ErrBadLabels) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed line: %v", err)
	}
	if _, err := eval.ReadDecisionSeconds(strings.NewReader(`{"round":1,"nodes":[]}`), start); err == nil || !strings.Contains(err.Error(), `no "wall"`) {
		t.Fatalf("line without wall time: %v", err)
	}
	secs, err := eval.ReadDecisionSeconds(strings.NewReader("\n"+round(2, "SS write")+"\n\n"), start)
	if err != nil || len(secs) != 1 || secs[0].T != 2 || secs[0].Nodes[0].Pattern != "SS" || secs[0].Nodes[0].Op != "write" {
		t.Fatalf("got %+v, %v", secs, err)
	}
}

// featRound is a decision-log line at second t whose busy nodes carry
// measured features (file handles, request average, min, max, offset
// distance, per-process distance) and a request count.
func featRound(t int, op string, feats ...string) string {
	wall := time.Date(2026, 11, 25, 10, 0, t, 0, time.UTC).Format(time.RFC3339Nano)
	var nodes []string
	for i, f := range feats {
		if f == "idle" {
			nodes = append(nodes, fmt.Sprintf(`{"node":%d,"idle":true,"probs":[0,0,0]}`, i))
			continue
		}
		nodes = append(nodes, fmt.Sprintf(`{"node":%d,"op":%q,"pattern":"SC","probs":[0,1,0],"bw":1048576,"win_ns":1000000,"feat":[%s],"reqs":32}`, i, op, f))
	}
	return fmt.Sprintf(`{"round":%d,"wall":%q,"win_ns":1000000,"nodes":[%s]}`, t, wall, strings.Join(nodes, ","))
}

func TestLabelledRowsTakeThePhasesClassInsidePhasesOnly(t *testing.T) {
	phases, err := eval.ReadPhases(strings.NewReader(phasesCSV))
	if err != nil {
		t.Fatal(err)
	}
	strided := "1,32768,32768,32768,1048576,4194304,8"
	log := strings.Join([]string{
		featRound(1, "write", strided, strided), // [0,1]: starts before the first phase
		featRound(2, "write", strided, "idle"),  // inside SS write: 1 row
		featRound(3, "write", strided, strided), // inside: 2 rows
		featRound(5, "write", strided, strided), // [4,5]: spans both phases
		featRound(6, "read", strided, strided),  // inside SS read: 2 rows
		featRound(7, "read", strided, strided),  // inside: 2 rows
		featRound(9, "read", strided, strided),  // after every phase
		round(6, "SS read"),                     // no features (an older log): no row
	}, "\n")
	rows, err := eval.LabelledRows(phases, strings.NewReader(log), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		rep    int
		second int
		class  string
		op     string
	}{{0, 0, "SS", "write"}, {0, 1, "SS", "write"}, {0, 1, "SS", "write"},
		{1, 0, "SS", "read"}, {1, 0, "SS", "read"}, {1, 1, "SS", "read"}, {1, 1, "SS", "read"}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Rep != w.rep || r.Second != w.second || r.Class.String() != w.class || r.Obs.Op.String() != w.op {
			t.Errorf("row %d: rep %d second %d class %v op %v, want %+v", i, r.Rep, r.Second, r.Class, r.Obs.Op, w)
		}
		if r.Obs.ProcDist != 4194304 || r.Obs.Sharers != 8 || r.Obs.Requests != 32 || r.Scenario.RequestSize != 32768 || r.Scenario.Class().String() != "SS" {
			t.Errorf("row %d: observation %+v scenario %v, want the logged features and an SS scenario of 32 KiB", i, r.Obs, r.Scenario)
		}
	}
	// Skipping 1 s at each edge leaves only the second [2,3]: no whole second of the read phase.
	rows, err = eval.LabelledRows(phases, strings.NewReader(log), time.Second)
	if err != nil || len(rows) != 2 {
		t.Errorf("with --skip 1s: %d rows (%v), want the 2 of the second [2,3]", len(rows), err)
	}
	// A log written before file_sharers: six features, the sharers read as 0.
	old := featRound(3, "write", "1,32768,32768,32768,1048576,4194304")
	if rows, err := eval.LabelledRows(phases, strings.NewReader(old), 0); err != nil || len(rows) != 1 || rows[0].Obs.Sharers != 0 || rows[0].Obs.ProcDist != 4194304 {
		t.Errorf("a six-feature log: %+v, %v; want one row, sharers 0", rows, err)
	}
	bad := featRound(3, "write", "1,2,3")
	if _, err := eval.LabelledRows(phases, strings.NewReader(bad), 0); !errors.Is(err, eval.ErrBadLabels) || !strings.Contains(err.Error(), "3 features") {
		t.Errorf("a node with 3 features: %v, want ErrBadLabels naming the count", err)
	}
}

// With the bytes each phase moved, a second that overlaps a short fast
// phase and a long slow one goes to the phase that moved more bytes in it.
func TestLabelAccuracyByBytes(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	in := "phase,start,end,bytes\n" +
		"SC read," + at(0).Format(time.RFC3339Nano) + "," + at(1.8).Format(time.RFC3339Nano) + ",100\n" +
		"SS write," + at(1.8).Format(time.RFC3339Nano) + "," + at(5).Format(time.RFC3339Nano) + ",1000000\n"
	phases, err := eval.ReadPhases(strings.NewReader(in))
	if err != nil || phases[1].Bytes != 1000000 {
		t.Fatalf("ReadPhases: %v, %+v", err, phases)
	}
	// The second (1, 2] holds 0.8 s of the slow read and 0.2 s of the write,
	// which moved far more bytes in it: it is the write's.
	secs := []labels.Second{{T: 2, Nodes: []labels.Label{{Node: 0, Pattern: "SS", Op: "write"}}}}
	acc := eval.LabelAccuracy(phases, secs, start, 0)
	if len(acc) != 1 || acc[0].Phase != "SS write" || acc[0].Correct != 1 {
		t.Fatalf("accuracy %v, want the second attributed to SS write and right", acc)
	}
	phases[0].Bytes, phases[1].Bytes = 0, 0 // without bytes: the longer overlap, the read
	if acc = eval.LabelAccuracy(phases, secs, start, 0); acc[0].Phase != "SC read" {
		t.Fatalf("without bytes: %v, want the second attributed to SC read", acc)
	}
}

// With each I/O node's part of a phase, a node-second is attributed by that
// node's own: node 0's readers finished 0.1 s into the read phase's last
// second, node 1's ran to its end, so the same second is node 0's write and
// node 1's read.
func TestLabelAccuracyByNode(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return start.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	in := "phase,start,end,bytes,node\n" +
		"SS read," + at(0) + "," + at(1.5) + ",4000000,\n" +
		"SS read," + at(0) + "," + at(1.1) + ",1000000,0\n" +
		"SS read," + at(0) + "," + at(1.5) + ",3000000,1\n" +
		"FPP write," + at(1.5) + "," + at(9.5) + ",8000000,\n"
	phases, err := eval.ReadPhases(strings.NewReader(in))
	if err != nil || len(phases) != 2 || len(phases[0].Nodes) != 2 || phases[0].Nodes[0].Bytes != 1000000 || !phases[0].Nodes[0].End.Equal(start.Add(1100*time.Millisecond)) {
		t.Fatalf("ReadPhases: %v, %+v", err, phases)
	}
	secs := []labels.Second{{T: 2, Nodes: []labels.Label{{Node: 0, Pattern: "FPP", Op: "write"}, {Node: 1, Pattern: "SS", Op: "read"}}}}
	acc := eval.LabelAccuracy(phases, secs, start, 0)
	if len(acc) != 2 {
		t.Fatalf("accuracy %+v, want one node-second in each phase", acc)
	}
	for _, a := range acc {
		if a.Total != 1 || a.Correct != 1 {
			t.Fatalf("accuracy %+v: each node's second should be its own phase's, labelled right", acc)
		}
	}
	// Without the nodes' parts both seconds go to the read (the phase's
	// mean rate over its last 0.5 s), and node 0's label is wrong.
	phases[0].Nodes = nil
	acc = eval.LabelAccuracy(phases, secs, start, 0)
	if len(acc) != 1 || acc[0].Phase != "SS read" || acc[0].Correct != 1 || acc[0].Total != 2 {
		t.Fatalf("without node parts: %+v", acc)
	}
	for name, bad := range map[string]string{
		"orphan node line":    "phase,start,end,bytes,node\nSS read," + at(0) + "," + at(1) + ",1,0\n",
		"node after its end":  "phase,start,end,bytes,node\nSS read," + at(0) + "," + at(1) + ",1,\nSS read," + at(0) + "," + at(2) + ",1,0\n",
		"node not an index":   "phase,start,end,bytes,node\nSS read," + at(0) + "," + at(1) + ",1,\nSS read," + at(0) + "," + at(1) + ",1,-1\n",
		"node of other phase": "phase,start,end,bytes,node\nSS read," + at(0) + "," + at(1) + ",1,\nSS write," + at(0) + "," + at(1) + ",1,0\n",
	} {
		if _, err := eval.ReadPhases(strings.NewReader(bad)); !errors.Is(err, eval.ErrBadLabels) {
			t.Errorf("%s: %v, want ErrBadLabels", name, err)
		}
	}
}

// With one line per process of a node, a phase's tail carries only the
// bytes of the processes still running: node 0's 4 readers, 3 done at 1 s
// and one at 1.5 s, moved a third of a reader's bytes in (1, 1.5], less
// than the write that followed, so the second (1, 2] is the write's; at
// the node's mean rate it would be the read's.
func TestLabelAccuracyByProcess(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return start.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	in := "phase,start,end,bytes,node\n" +
		"SS read," + at(0) + "," + at(1.5) + ",4000000,\n"
	for _, end := range []float64{1, 1, 1, 1.5} {
		in += "SS read," + at(0) + "," + at(end) + ",1000000,0\n"
	}
	in += "FPP write," + at(1.5) + "," + at(9.5) + ",8000000,\n"
	phases, err := eval.ReadPhases(strings.NewReader(in))
	if err != nil || len(phases) != 2 || len(phases[0].Nodes) != 1 {
		t.Fatalf("ReadPhases: %v, %+v", err, phases)
	}
	if n := phases[0].Nodes[0]; n.Bytes != 4000000 || !n.End.Equal(start.Add(1500*time.Millisecond)) || len(n.Parts) != 4 {
		t.Fatalf("node 0's part %+v, want 4 processes, 4e6 bytes, ending at 1.5 s", n)
	}
	secs := []labels.Second{{T: 2, Nodes: []labels.Label{{Node: 0, Pattern: "FPP", Op: "write"}}}}
	if acc := eval.LabelAccuracy(phases, secs, start, 0); len(acc) != 1 || acc[0].Phase != "FPP write" || acc[0].Correct != 1 {
		t.Fatalf("accuracy %+v, want the second attributed to FPP write, labelled right", acc)
	}
	phases[0].Nodes[0].Parts = phases[0].Nodes[0].Parts[:1] // one line: the node's mean rate
	phases[0].Nodes[0].Parts[0] = eval.PhasePart{End: phases[0].Nodes[0].End, Bytes: 4000000}
	if acc := eval.LabelAccuracy(phases, secs, start, 0); len(acc) != 1 || acc[0].Phase != "SS read" || acc[0].Correct != 0 {
		t.Fatalf("at the node's mean rate: %+v, want the second attributed to SS read", acc)
	}
}

// ReadPhases refuses what it cannot read with ErrBadLabels, and what it
// accepts is well formed: named phases that end after they start, with no
// negative byte counts.
func FuzzReadPhases(f *testing.F) {
	f.Add([]byte(phasesCSV))
	f.Add([]byte("phase,start,end,bytes\nSS write,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z,1024\n"))
	f.Add([]byte("\ufeffphase,start,end\nFPP read,2026-11-25 10:00:00+00:00,2026-11-25 10:00:00.1+00:00\n"))
	f.Add([]byte("phase,start,end,bytes,node\nSS read,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z,2,\nSS read,2026-11-25T10:00:00Z,2026-11-25T10:00:00.5Z,1,1\n"))
	f.Add([]byte("phase,start,end,bytes,node\nSS read,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z,3,\nSS read,2026-11-25T10:00:00Z,2026-11-25T10:00:00.5Z,1,0\nSS read,2026-11-25T10:00:00Z,2026-11-25T10:00:01Z,2,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		phases, err := eval.ReadPhases(strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, eval.ErrBadLabels) {
				t.Fatalf("error %v does not wrap ErrBadLabels", err)
			}
			return
		}
		for _, p := range phases {
			if !p.End.After(p.Start) || p.Bytes < 0 || p.Name == "" {
				t.Fatalf("accepted phase %+v", p)
			}
			for _, n := range p.Nodes {
				if !n.End.IsZero() && (!n.End.After(p.Start) || n.End.After(p.End) || n.Bytes < 0) {
					t.Fatalf("accepted node part %+v of phase %+v", n, p)
				}
			}
		}
	})
}

// A round whose reports cover 250 ms stands for the 250 ms before it, not
// the second: it falls inside a phase of 0.6 s and is counted there.
func TestLabelAccuracyShortIntervals(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return start.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	phases, err := eval.ReadPhases(strings.NewReader("phase,start,end\nSS write," + at(0) + "," + at(5) + "\nSS read," + at(5) + "," + at(5.6) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := `{"round":1,"wall":"` + at(5.5) + `","nodes":[{"node":0,"op":"read","pattern":"SS","iv_ns":250000000}]}` + "\n"
	secs, err := eval.ReadDecisionSeconds(strings.NewReader(log), start)
	if err != nil {
		t.Fatal(err)
	}
	acc := eval.LabelAccuracy(phases, secs, start, 0)
	if len(acc) != 1 || acc[0].Phase != "SS read" || acc[0].Correct != 1 {
		t.Fatalf("accuracy %v, want the round counted, right, in SS read", acc)
	}
	// Logged without its interval, the same round stands for a second,
	// most of it the write's.
	secs, _ = eval.ReadDecisionSeconds(strings.NewReader(strings.Replace(log, `,"iv_ns":250000000`, "", 1)), start)
	if acc = eval.LabelAccuracy(phases, secs, start, 0); acc[0].Phase != "SS write" {
		t.Fatalf("without the interval: %v, want the round attributed to SS write", acc)
	}
}
