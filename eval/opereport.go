package eval

import (
	"fmt"
	"html/template"
	"strconv"

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
	tab := Table{
		Title:  "Estimated mean reward per round",
		Note:   fmt.Sprintf("%.0f%% percentile bootstrap intervals. Matched: rounds where the policy would have chosen the logged window (expected, for a learning policy). ESS: effective sample size of the importance weights; under 30 the estimate rests on few rounds.", 100*level),
		Header: []string{"policy", "kind", "matched", "ESS", "IPS", "SNIPS", "DR"},
	}
	for _, e := range es {
		kind := "static"
		if e.Learning {
			kind = "learning"
		}
		tab.Rows = append(tab.Rows, []string{e.Target, kind, strconv.FormatFloat(e.Matched, 'f', 0, 64), f1(e.ESS), iv(e.IPS), iv(e.SNIPS), iv(e.DR)})
	}
	fig, err := intervalPlot(es, measured)
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
			"A learning policy is replayed along the log from its initial state; where it draws a window the log did not choose it learns the mean reward the log shows for that window in that context up to that round.",
		Sections: []Section{{Title: "Estimates", Text: text, Tables: []Table{tab}, Figures: []template.HTML{fig}}},
	}, nil
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
		pts := make(plotter.XYs, len(es))
		errs := make(plotter.YErrors, len(es))
		for i, e := range es {
			v := [3]Interval{e.IPS, e.SNIPS, e.DR}[k]
			pts[i].X, pts[i].Y = float64(i)+0.2*float64(k-1), v.Value
			errs[i].Low, errs[i].High = v.Value-v.Lo, v.Hi-v.Value
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
		}{pts, errs})
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
