package eval

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// OffPolicyReport is the HTML report of `adaptio eval log`: one table of
// the estimates and one figure of their intervals. measured, if not nil,
// is the log's own mean reward per round (the policy that ran).
func OffPolicyReport(command, logPath string, samples int, level float64, es []Estimate, measured *float64) (*Report, error) {
	iv := func(i Interval) string {
		return fmt.Sprintf("%.4g [%.4g, %.4g]", i.Value, i.Lo, i.Hi)
	}
	block := 0
	for _, e := range es {
		block = max(block, e.Block)
	}
	tab := Table{
		Title: "Estimated mean reward per round",
		Note: fmt.Sprintf("%.0f%% percentile bootstrap intervals over blocks of %d consecutive rounds. Matched: rounds where the policy would have chosen the logged window (expected, for a learning policy). ESS: effective sample size of the importance weights; under 30 the estimate rests on few rounds. "+
			"Unsupported: the part of the policy's probability the log does not support (it never or almost never chose those windows in that context): in all, then per context. "+
			"Every interval bounds that part by the context's smallest and largest logged reward (the points value it at the context's mean); where nothing matched or half or more is unsupported, the estimate is refused.", 100*level, block),
		Header: []string{"policy", "kind", "matched", "ESS", "unsupported", "IPS", "SNIPS", "DR"},
	}
	for _, e := range es {
		kind := "static"
		if e.Learning {
			kind = "learning"
		}
		if e.Refused != "" {
			tab.Rows = append(tab.Rows, []string{e.Target, kind, strconv.FormatFloat(e.Matched, 'f', 0, 64), f1(e.ESS), supportCell(e), "refused: " + e.Refused, "refused", "refused"})
			continue
		}
		tab.Rows = append(tab.Rows, []string{e.Target, kind, strconv.FormatFloat(e.Matched, 'f', 0, 64), f1(e.ESS), supportCell(e), iv(e.IPS), iv(e.SNIPS), iv(e.DR)})
	}
	var shown []Estimate // refused estimates have nothing to draw
	for _, e := range es {
		if e.Refused == "" {
			shown = append(shown, e)
		}
	}
	fig, err := intervalPlot(shown, measured)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("%d logged samples of %s, each a window chosen with a known probability and the reward it earned in the next round (a round whose reads and writes ran under the windows of a plan gives one per direction).", samples, logPath)
	if measured != nil {
		text += fmt.Sprintf(" The policy that ran earned %.4g per round (dashed line).", *measured)
	}
	return &Report{
		Title:   "Off-policy evaluation of a decision log",
		Command: command,
		Intro: "What other policies would have earned on the run this log records, without running them: inverse propensity scoring (IPS), " +
			"self-normalised IPS and doubly robust (DR: a per-context, per-window mean reward model corrected by the importance-weighted logged rewards; " +
			"the model of each round is fitted on the other four fifths of the log, and each bootstrap resample refits it). " +
			"The bootstrap resamples blocks of consecutive rounds (the cube root of their number, rounded up), since consecutive seconds of a run are not independent. " +
			"Where the policy would choose windows the log never or almost never chose in a context, no estimator can see what they earn: " +
			"the intervals then bound that part between the smallest and the largest reward the log shows in the context (partial identification), the table says how large it is, and an estimate half or more of which is unsupported is refused. " +
			"A learning policy is replayed along the log from its initial state; where it draws a window the log did not choose it learns the mean reward the log shows for that window in that context up to that round.",
		Sections: []Section{{Title: "Estimates", Text: text, Tables: []Table{tab}, Figures: []template.HTML{fig}}},
	}, nil
}

// supportCell is an estimate's unsupported part, in all and per context.
func supportCell(e Estimate) string {
	out := fmt.Sprintf("%.1f%%", 100*e.Unsupported)
	var parts []string
	for _, c := range e.Support {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", c.Context, 100*c.Unsupported))
	}
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	return out
}

// intervalPlot draws each policy's three estimates with their intervals,
// side by side.
func intervalPlot(es []Estimate, measured *float64) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = "Estimates and intervals"
	p.Y.Label.Text = "mean reward per round"
	p.Add(plotter.NewGrid())
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Target
	}
	for k, est := range []string{"IPS", "SNIPS", "DR"} {
		pts, mids := make(plotter.XYs, len(es)), make(plotter.XYs, len(es))
		errs := make(plotter.YErrors, len(es))
		for i, e := range es {
			v := [3]Interval{e.IPS, e.SNIPS, e.DR}[k]
			pts[i].X, pts[i].Y = float64(i)+0.2*float64(k-1), v.Value
			// The bar is drawn around the interval's middle, so that it
			// spans the interval wherever the point lies in it.
			mids[i].X, mids[i].Y = pts[i].X, (v.Lo+v.Hi)/2
			errs[i].Low, errs[i].High = (v.Hi-v.Lo)/2, (v.Hi-v.Lo)/2
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return "", fmt.Errorf("eval: plot: %w", err)
		}
		s.Color = plotutil.Color(k)
		s.Shape = plotutil.Shape(k)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{mids, errs})
		if err != nil {
			return "", fmt.Errorf("eval: plot: %w", err)
		}
		eb.Color = plotutil.Color(k)
		p.Add(s, eb)
		p.Legend.Add(est, s)
	}
	if measured != nil {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: *measured}, {X: float64(len(es)) - 0.5, Y: *measured}})
		if err != nil {
			return "", fmt.Errorf("eval: plot: %w", err)
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("measured (logged policy)", l)
	}
	p.NominalX(names...)
	return svgOf(p, 5.2*vg.Inch, 3.4*vg.Inch)
}
