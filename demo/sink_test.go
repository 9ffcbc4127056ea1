package demo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/sched"
)

func newSink(t testing.TB) (*decisionSink, *record.Recorder) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	rec := record.New(record.Meta{Nodes: 2, Windows: sched.Windows})
	var ph atomic.Value
	ph.Store("SS write")
	return &decisionSink{file: f, t0: time.Now(), phase: &ph, trk: newTracker(rec, nil, sched.Windows, 0), nodes: 2}, rec
}

func TestSinkSplitsLines(t *testing.T) {
	s, rec := newSink(t)
	var log []byte
	for r := uint64(1); r <= 3; r++ {
		d := council.Decision{Round: r, Window: sched.Windows[r], Explore: r == 2, Voters: 1,
			Nodes: []council.NodeReport{{Node: 1, Round: r - 1, Pattern: "SS", Op: "write", Window: sched.Windows[r-1], Bandwidth: 1e6}}}
		b, _ := json.Marshal(d)
		log = append(append(log, b...), '\n')
	}
	// Written in awkward pieces, as a buffered writer may.
	for _, cut := range [][2]int{{0, 7}, {7, 300}, {300, len(log)}} {
		if _, err := s.Write(log[cut[0]:cut[1]]); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.Snapshot()
	if len(got.Seconds) != 3 || got.Decisions.Rounds != 3 || got.Decisions.Explores != 1 {
		t.Fatalf("got %d seconds, %+v; want 3 seconds, 3 rounds, 1 exploration", len(got.Seconds), got.Decisions)
	}
	// Round 3's report was made under round 2's window, an exploration.
	if n := got.Seconds[2].Nodes[1]; !n.Explore || n.Window != sched.Windows[2] || n.Pattern != "SS" {
		t.Errorf("third second node 1: %+v; want SS under %v, explore", n, sched.Windows[2])
	}
	if n := got.Seconds[2].Nodes[0]; n.Pattern != "" || n.Window != sched.Windows[3] {
		t.Errorf("silent node 0: %+v; want no pattern, the decided window", n)
	}
}

// FuzzSink feeds arbitrary bytes, in two halves, to the decision-log sink:
// it must never panic, and must record exactly one second per valid line.
func FuzzSink(f *testing.F) {
	b, _ := json.Marshal(council.Decision{Round: 1, Window: time.Millisecond, Voters: 1, Nodes: []council.NodeReport{{Node: 0, Pattern: "SS", Op: "read"}}})
	f.Add(append(b, '\n'), 5)
	f.Add([]byte("{}\n{\"round\":2,\"nodes\":[{\"node\":-5},{\"node\":99}]}\nnot json\n"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		s, rec := newSink(t)
		if cut < 0 || cut > len(data) {
			cut = len(data) / 2
		}
		s.Write(data[:cut])
		s.Write(data[cut:])
		want := 0
		start := 0
		for i, c := range data {
			if c == '\n' {
				var d council.Decision
				if json.Unmarshal(data[start:i], &d) == nil {
					want++
				}
				start = i + 1
			}
		}
		if got := len(rec.Snapshot().Seconds); got != want {
			t.Errorf("%d seconds recorded, want %d valid lines", got, want)
		}
	})
}
