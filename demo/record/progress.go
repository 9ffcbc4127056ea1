package record

import (
	"fmt"
	"math"
)

// Progress is how far a run has come, in the one count the terminal view,
// the dashboard and the report share: experiment iterations, each one pass
// of every phase of Meta.Phases (what --iterations counts). A Recording's
// Iterations are phase runs: PhasesPerIteration of them make an iteration.
type Progress struct {
	Iterations         int `json:"iterations"`           // iterations completed (every phase of the cycle ran)
	Planned            int `json:"planned"`              // iterations the run is to complete (0: unknown)
	PhaseRuns          int `json:"phase_runs"`           // phases completed, over all iterations
	PhasesPerIteration int `json:"phases_per_iteration"` // phases in one iteration
	// MeanSeconds is the mean run time of an iteration so far: from the
	// first phase's start to the end of the last iteration completed, over
	// the iterations completed (0 before the first ends).
	MeanSeconds float64 `json:"mean_s"`
	// LeftSeconds is the run time left until the planned iterations are
	// done, from MeanSeconds (NaN when unknown: before the first iteration
	// ends, or without a plan; 0 once done); a run limited in time
	// (Meta.Limit) ends by its limit if that comes first.
	LeftSeconds float64 `json:"-"`
	// Virtual says the seconds are the simulator's virtual time.
	Virtual bool `json:"virtual"`
	// Text says the above in a few words, for the views: "41 of 48
	// iterations, about 2 min left".
	Text string `json:"text"`
}

// ProgressOf counts the iterations of a run described by m that has
// completed the phase runs its, elapsed seconds after its start.
func ProgressOf(m Meta, its []Iteration, elapsed float64) Progress {
	p := Progress{Planned: m.Iterations, PhaseRuns: len(its), PhasesPerIteration: len(m.Phases), Virtual: m.Mode == "sim", LeftSeconds: math.NaN()}
	if p.PhasesPerIteration == 0 {
		p.PhasesPerIteration = max(len(Phases(its)), 1)
	}
	p.Iterations = p.PhaseRuns / p.PhasesPerIteration
	if p.Iterations > 0 {
		last := its[p.Iterations*p.PhasesPerIteration-1]
		end := last.Start + last.Seconds
		p.MeanSeconds = (end - its[0].Start) / float64(p.Iterations)
		if p.Planned > 0 && p.MeanSeconds > 0 {
			// The iterations not yet done, less what the current one has
			// run, but never less than the iterations not yet started.
			todo := float64(max(p.Planned-p.Iterations, 0))
			p.LeftSeconds = max(p.MeanSeconds*todo-max(elapsed-end, 0), p.MeanSeconds*max(todo-1, 0))
		}
	}
	if m.Limit > 0 && !math.IsNaN(p.LeftSeconds) {
		p.LeftSeconds = min(p.LeftSeconds, max(m.Limit-elapsed, 0))
	}
	p.Text = p.text()
	return p
}

func (p Progress) text() string {
	var s string
	if p.Planned > 0 {
		s = fmt.Sprintf("%d of %d iterations", p.Iterations, p.Planned)
	} else {
		s = fmt.Sprintf("%d iterations", p.Iterations)
	}
	if p.Planned > 0 && p.Iterations >= p.Planned {
		return s
	}
	if !math.IsNaN(p.LeftSeconds) {
		s += ", "
		if p.LeftSeconds >= 1 {
			s += "about " // "about under a second" says nothing more
		}
		s += Duration(p.LeftSeconds)
		if p.Virtual {
			s += " of virtual time"
		}
		s += " left"
	}
	return s
}

// Duration writes seconds of run time as people say them: "40 s", "7 min",
// "1 h 20 min" (rounded; "under a second" below one).
func Duration(secs float64) string {
	switch {
	case secs < 1:
		return "under a second"
	case secs < 90:
		return fmt.Sprintf("%.0f s", secs)
	case secs < 3600-30:
		return fmt.Sprintf("%.0f min", secs/60)
	}
	m := int(math.Round(secs / 60))
	if m%60 == 0 {
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
