package experiment

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/workload"
)

// TestOutcomesAverageRepetitions: Outcomes (and so the findings and the
// figures) count the repetitions of an experiment once, at their mean
// makespan.
func TestOutcomesAverageRepetitions(t *testing.T) {
	sc := workload.Grid(false)[0]
	mk := func(sched string, w time.Duration, rep int, makespan time.Duration) dataset.Experiment {
		return dataset.Experiment{Run: dataset.Run{Scenario: sc, Scheduler: sched, Window: w, Rep: rep}, Makespan: makespan, Bytes: 1}
	}
	out := Outcomes([]dataset.Experiment{
		mk("twins", time.Millisecond, 0, 2*time.Second), mk("twins", 2*time.Millisecond, 0, 3*time.Second), mk("fifo", 0, 0, 5*time.Second),
		mk("twins", time.Millisecond, 1, 6*time.Second), mk("twins", 2*time.Millisecond, 1, 3*time.Second), mk("fifo", 0, 1, 7*time.Second),
	})
	if len(out) != 1 {
		t.Fatalf("%d outcomes, want 1", len(out))
	}
	o := out[0]
	if o.Twins[time.Millisecond] != 4*time.Second || o.Twins[2*time.Millisecond] != 3*time.Second || o.Baselines["fifo"] != 6*time.Second {
		t.Fatalf("outcome %+v, want mean makespans 1ms 4s, 2ms 3s, fifo 6s", o)
	}
	if w, _, _ := o.BestWindow(); w != 2*time.Millisecond {
		t.Errorf("best window %v, want 2ms (repetition 0 alone would say 1ms)", w)
	}
}
