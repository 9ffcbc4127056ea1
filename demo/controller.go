package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/demo/record"
)

// contextLabel turns the Council's context key "SS/write" into "SS write".
func contextLabel(ctx string) string { return strings.ReplaceAll(ctx, "/", " ") }

// estimates converts the Council's learned state into the recording's form.
func estimates(st council.Status) []record.Estimate {
	var out []record.Estimate
	for _, c := range st.Contexts {
		vals := slices.Clone(c.Values)
		for i := range vals {
			vals[i] /= 1 << 20 // bandwidth reward: bytes/s to MiB/s
		}
		out = append(out, record.Estimate{Context: contextLabel(c.Context), Values: vals,
			Counts: slices.Clone(c.Counts), Best: max(slices.Index(st.Windows, c.Best), 0)})
	}
	return out
}

// pulls is the total number of bandit pulls in a learned state.
func pulls(st council.Status) int64 {
	var n int64
	for _, c := range st.Contexts {
		for _, k := range c.Counts {
			n += k
		}
	}
	return n
}

// tracker turns the Council's decisions into the recording: one Second per
// closed round, with each node's pattern, the window in force while it
// reported, and whether that window was an exploration. It also writes the
// decision log (JSON lines, one council.Decision per line).
type tracker struct {
	rec     *record.Recorder
	log     io.Writer
	windows []time.Duration
	static  time.Duration
	rounds  map[uint64]council.Decision // recent decisions by round, to know what was in force
	last    map[int]string              // node -> last detected "pattern op"
	err     error
}

func newTracker(rec *record.Recorder, log io.Writer, windows []time.Duration, static time.Duration) *tracker {
	return &tracker{rec: rec, log: log, windows: windows, static: static, rounds: map[uint64]council.Decision{}, last: map[int]string{}}
}

// staticDecision is d as a run under the static window w carries it out:
// the I/O nodes keep w whatever the Council decides, so the decision log
// records w, chosen with probability 1, for the decision and each
// direction of its plan (the contexts and node reports stay). Logged as
// the Council decided, a static run's log claimed the Council's choice
// (125 µs with probability 1, its first exploration, since its decisions
// are never applied) while the nodes ran w, and no rewarded round
// matched it: adaptio eval log could not evaluate it.
func staticDecision(d council.Decision, w time.Duration) council.Decision {
	d.Window, d.Prob, d.Explore = w, 1, false
	d.Plan = slices.Clone(d.Plan)
	for i := range d.Plan {
		d.Plan[i].Window, d.Plan[i].Prob, d.Plan[i].Explore = w, 1, false
	}
	return d
}

// decision records round d, closed at t seconds into the run, while the
// clients ran phase; nodes is the number of I/O nodes. Under a static
// window, d is recorded as the nodes ran it (staticDecision). It returns d
// as recorded.
func (k *tracker) decision(t float64, phase string, d council.Decision, nodes int) council.Decision {
	if k.static != 0 {
		d = staticDecision(d, k.static)
	}
	if k.log != nil && k.err == nil {
		b, err := json.Marshal(d)
		if err == nil {
			_, err = k.log.Write(append(b, '\n'))
		}
		k.err = err
	}
	k.rounds[d.Round] = d
	delete(k.rounds, d.Round-64)
	sec := record.Second{T: t, Phase: phase, Nodes: make([]record.NodeSecond, nodes)}
	for i := range sec.Nodes {
		sec.Nodes[i] = record.NodeSecond{Node: i, Window: d.Window}
	}
	for _, nr := range d.Nodes {
		if nr.Node < 0 || nr.Node >= nodes {
			continue
		}
		ns := record.NodeSecond{Node: nr.Node, Pattern: nr.Pattern, Op: nr.Op, Window: nr.Window, Bandwidth: nr.Bandwidth}
		if nr.Pattern == "" {
			ns.Op = ""
		}
		if prev, ok := k.rounds[nr.Round]; ok && nr.Round > 0 && k.static == 0 {
			ns.Explore, ns.Prob = prev.Explore, prev.Prob
		}
		sec.Nodes[nr.Node] = ns
		sec.Span = max(sec.Span, nr.Interval.Seconds())
		if nr.Pattern != "" {
			cur := nr.Pattern + " " + nr.Op
			if old := k.last[nr.Node]; old != cur {
				if old != "" {
					k.rec.AddEvent(t, "pattern", fmt.Sprintf("node %d: detected %s (was %s)", nr.Node, cur, old))
				}
				k.last[nr.Node] = cur
			}
		}
	}
	if sec.Span == 1 {
		sec.Span = 0 // the default: recordings stay as they were
	}
	k.rec.AddSecond(sec)
	if k.static == 0 && d.Voters > 0 {
		k.rec.AddDecision(slices.Index(k.windows, d.Window), d.Explore)
	}
	return d
}
