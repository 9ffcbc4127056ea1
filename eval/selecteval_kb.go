package eval

import (
	"context"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/selection"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// LabelledPeriod is one period's access series at one I/O node, with the
// workload and operation it came from (Label), and the same without the
// workload's process count and total (Class: workloads of one class put
// the same requests on an I/O node once their processes are spread over
// the nodes).
type LabelledPeriod struct {
	Label  string
	Class  string
	Series selection.Series
}

// TracePeriods runs p (written then read once) in the simulator and
// returns every I/O node's periods of length period: the series of the
// first maxSeries requests each node received in it, in arrival order
// (the driver's), labelled with p and the period's majority operation.
func TracePeriods(ctx context.Context, p workload.Pattern, ioNodes int, period time.Duration, maxSeries int, seed uint64) ([]LabelledPeriod, error) {
	s, err := sim.New(sim.Config{Patterns: sim.WriteRead(p, 1), IONodes: ioNodes, Threads: 2, Scheduler: "mlf", Seed: seed, MaxTime: 24 * time.Hour, Interval: period}, nil)
	if err != nil {
		return nil, err
	}
	reqs := make([][]selection.Request, ioNodes)
	s.SetTrace(func(ev sim.NodeEvent) {
		if ev.Kind == sim.NodeArrive && len(reqs[ev.Node]) < maxSeries {
			reqs[ev.Node] = append(reqs[ev.Node], selection.Request{File: ev.FileID, Offset: ev.Offset, Length: ev.Length, Write: ev.Op == rw.Write})
		}
	})
	var out []LabelledPeriod
	name := p
	name.Op = rw.Write
	class := name // "0p-...": any process count, any total
	class.Processes, class.TotalBytes = 0, 0
	_, err = s.Run(ctx, sim.Hooks{OnNodeInterval: func(_ *sim.Sim, _ time.Duration, obs []access.Observation) error {
		for _, o := range obs {
			r := reqs[o.Node]
			reqs[o.Node] = reqs[o.Node][:0]
			if len(r) == 0 {
				continue
			}
			se := selection.SeriesOf(r)
			op := "read"
			if se.Writes > se.Reads {
				op = "write"
			}
			out = append(out, LabelledPeriod{Label: fmt.Sprintf("%s %s", name, op), Class: fmt.Sprintf("%s %s", class, op), Series: se})
		}
		return nil
	}})
	return out, err
}

// Recognition is how a knowledge base fared on a workload's second run.
type Recognition struct {
	Periods    int     // periods of the second run compared (not ignored)
	Recognised float64 // share matched to a pattern first stored from the same workload and operation
	False      float64 // share matched to a pattern of another workload or operation
	// Alike is the share of False matched to a pattern of a workload of
	// the same class (LabelledPeriod.Class): Recognised + Alike is the
	// recognition of the class, False - Alike its false matches.
	Alike    float64
	Patterns int // patterns after both runs
}

// RecognitionOf feeds first then second to a knowledge base configured
// by cfg and measures how the periods of second are matched: a pattern
// is labelled with the period that stored it.
func RecognitionOf(cfg selection.KBConfig, first, second []LabelledPeriod) (Recognition, error) {
	kb, err := selection.NewKnowledgeBase(cfg)
	if err != nil {
		return Recognition{}, err
	}
	label, class := map[int]string{}, map[int]string{}
	observe := func(p LabelledPeriod) selection.Match {
		m := kb.Observe(p.Series)
		if m.New {
			label[m.ID], class[m.ID] = p.Label, p.Class
		}
		return m
	}
	for _, p := range first {
		observe(p)
	}
	var r Recognition
	right, wrong, alike := 0, 0, 0
	for _, p := range second {
		m := observe(p)
		if m.ID < 0 {
			continue
		}
		r.Periods++
		switch {
		case m.New:
		case label[m.ID] == p.Label:
			right++
		default:
			wrong++
			if class[m.ID] == p.Class {
				alike++
			}
		}
	}
	if r.Periods > 0 {
		n := float64(r.Periods)
		r.Recognised, r.False, r.Alike = float64(right)/n, float64(wrong)/n, float64(alike)/n
	}
	r.Patterns = kb.Len()
	return r, nil
}
