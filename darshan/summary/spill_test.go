package summary

import (
	"os"
	"reflect"
	"testing"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/internal/datadir"
)

// Sorting a DXT log's segments through spilled runs gives the summary the
// in-memory sort gives: the largest log of the shared set (131,071
// segments) in runs of 1,000.
func TestSpilledRunsSummariseAsInMemory(t *testing.T) {
	p := datadir.Path("darshan", "partial_data_dxt", "partial_data_dxt.darshan")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%v (the shared data set is not beside the repository)", err)
	}
	summarise := func(chunk int) *Summary {
		old := spillChunk
		spillChunk = chunk
		defer func() { spillChunk = old }()
		l, c, err := darshan.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := Summarize(l)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	mem, spilled := summarise(1<<30), summarise(1000)
	if len(mem.Seconds) == 0 {
		t.Fatal("no second labelled")
	}
	if !reflect.DeepEqual(mem.Seconds, spilled.Seconds) || !reflect.DeepEqual(mem.Phases, spilled.Phases) {
		t.Fatalf("spilled runs differ:\n memory  %+v\n spilled %+v", mem.Phases, spilled.Phases)
	}
}
