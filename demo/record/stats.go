package record

import (
	"math"
	"slices"
	"time"
)

// PhaseStats summarises the runs of one phase, one per iteration (the
// first time, the best time and the linear trend of Fig. 6 of Bez et al.,
// FGCS 2020).
type PhaseStats struct {
	Phase    string  `json:"phase"`
	Count    int     `json:"count"`
	First    float64 `json:"first"`     // seconds of the first iteration
	Best     float64 `json:"best"`      // lowest seconds
	BestK    int     `json:"best_k"`    // K of the best iteration
	Mean     float64 `json:"mean"`      // mean seconds over all iterations
	LastMean float64 `json:"last_mean"` // mean seconds over the last quarter (at least one)
	// LastHalfMean is the mean seconds over the last half (at least one).
	LastHalfMean float64 `json:"last_half_mean"`
	// SE and LastHalfSE are the standard errors of Mean and LastHalfMean
	// (the iterations' sample standard deviation over the square root of
	// their count; 0 for a single iteration).
	SE         float64 `json:"se,omitempty"`
	LastHalfSE float64 `json:"last_half_se,omitempty"`
	Slope      float64 `json:"slope"`       // trend: seconds per iteration (least squares on K)
	Intercept  float64 `json:"intercept"`   // trend value at K = 0
	TrendFirst float64 `json:"trend_first"` // trend value at the first iteration
	TrendLast  float64 `json:"trend_last"`  // trend value at the last iteration
}

// Phases returns the distinct phases of its in first-seen order.
func Phases(its []Iteration) []string {
	var out []string
	for _, it := range its {
		if !slices.Contains(out, it.Phase) {
			out = append(out, it.Phase)
		}
	}
	return out
}

// OfPhase returns the iterations of one phase, in order.
func OfPhase(its []Iteration, phase string) []Iteration {
	var out []Iteration
	for _, it := range its {
		if it.Phase == phase {
			out = append(out, it)
		}
	}
	return out
}

// Stats computes PhaseStats over the iterations of phase.
func Stats(its []Iteration, phase string) PhaseStats {
	ps := OfPhase(its, phase)
	st := PhaseStats{Phase: phase, Count: len(ps)}
	if len(ps) == 0 {
		return st
	}
	st.First = ps[0].Seconds
	st.Best, st.BestK = math.Inf(1), 0
	var sx, sy, sxx, sxy float64
	for _, it := range ps {
		if it.Seconds < st.Best {
			st.Best, st.BestK = it.Seconds, it.K
		}
		x := float64(it.K)
		sx += x
		sy += it.Seconds
		sxx += x * x
		sxy += x * it.Seconds
	}
	n := float64(len(ps))
	st.Mean = sy / n
	q := max(len(ps)/4, 1)
	var tail float64
	for _, it := range ps[len(ps)-q:] {
		tail += it.Seconds
	}
	st.LastMean = tail / float64(q)
	h := max(len(ps)/2, 1)
	tail = 0
	for _, it := range ps[len(ps)-h:] {
		tail += it.Seconds
	}
	st.LastHalfMean = tail / float64(h)
	st.SE = stdErr(ps)
	st.LastHalfSE = stdErr(ps[len(ps)-h:])
	if d := n*sxx - sx*sx; d != 0 {
		st.Slope = (n*sxy - sx*sy) / d
	}
	st.Intercept = (sy - st.Slope*sx) / n
	st.TrendFirst = st.Intercept + st.Slope*float64(ps[0].K)
	st.TrendLast = st.Intercept + st.Slope*float64(ps[len(ps)-1].K)
	return st
}

// Labels of the learning rows of a static comparison.
const (
	LabelLastQuarter = "learning (last quarter)"
	LabelLastHalf    = "learning (last half)"
)

// stdErr is the standard error of the mean seconds of its (0 for fewer
// than two).
func stdErr(its []Iteration) float64 {
	n := float64(len(its))
	if n < 2 {
		return 0
	}
	var m, v float64
	for _, it := range its {
		m += it.Seconds
	}
	m /= n
	for _, it := range its {
		v += (it.Seconds - m) * (it.Seconds - m)
	}
	return math.Sqrt(v / (n - 1) / n)
}

// Summary is the learning run reduced to one cycle of the experiment, for the
// comparison with static windows: the mean seconds per phase over the last
// quarter of each phase's iterations (after learning), and their sum.
func Summary(its []Iteration) StaticResult {
	return summaryOf(its, LabelLastQuarter, func(st PhaseStats) (float64, float64) { return st.LastMean, 0 })
}

// SummaryHalf is Summary over the last half of each phase's iterations:
// learning judged with its second half, explorations included.
func SummaryHalf(its []Iteration) StaticResult {
	return summaryOf(its, LabelLastHalf, func(st PhaseStats) (float64, float64) { return st.LastHalfMean, st.LastHalfSE })
}

// summaryOf is one cycle of its: per phase the figure of its PhaseStats that
// of picks and its standard error (kept when known, > 0), and their sum.
func summaryOf(its []Iteration, label string, of func(PhaseStats) (v, se float64)) StaticResult {
	r := StaticResult{Label: label, Phases: map[string]float64{}}
	for _, p := range Phases(its) {
		v, se := of(Stats(its, p))
		r.Phases[p] = v
		r.Total += v
		if se > 0 {
			if r.SE == nil {
				r.SE = map[string]float64{}
			}
			r.SE[p] = se
		}
	}
	return r
}

// CycleMean is the mean seconds per phase over all iterations, summed over phases.
func CycleMean(its []Iteration) StaticResult {
	return summaryOf(its, "learning (all iterations)", func(st PhaseStats) (float64, float64) { return st.Mean, st.SE })
}

// Winners returns the static windows (Window > 0) of rows with the lowest
// time in some phase or in the cycle, each once, in the order of rows.
func Winners(rows []StaticResult) []time.Duration {
	best := map[string]int{}
	cycle := -1
	for i, r := range rows {
		if r.Window <= 0 {
			continue
		}
		if cycle < 0 || r.Total < rows[cycle].Total {
			cycle = i
		}
		for p, v := range r.Phases {
			if b, ok := best[p]; !ok || v < rows[b].Phases[p] {
				best[p] = i
			}
		}
	}
	var out []time.Duration
	for i, r := range rows {
		if r.Window <= 0 {
			continue
		}
		win := i == cycle
		for _, b := range best {
			win = win || b == i
		}
		if win {
			out = append(out, r.Window)
		}
	}
	return out
}
