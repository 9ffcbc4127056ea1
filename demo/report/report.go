package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/sched"
)

// WindowLabel is the demo's label of a window: "learning" where none is
// fixed (w <= 0, the learning run's), else sched.WindowLabel ("125µs", "8ms").
func WindowLabel(w time.Duration) string {
	if w <= 0 {
		return "learning"
	}
	return sched.WindowLabel(w)
}

// Summary is the machine-readable part of the report, embedded as JSON in
// the page (element id "adaptio-summary") so tests and scripts can check the
// figures without parsing SVG.
type Summary struct {
	Mode        string                `json:"mode"`
	Elapsed     float64               `json:"elapsed"`
	Seconds     int                   `json:"seconds"`
	Iterations  int                   `json:"iterations"` // experiment iterations completed, each one run of every phase
	Planned     int                   `json:"planned"`    // experiment iterations planned (0: unknown)
	PhaseRuns   int                   `json:"phase_runs"` // phases completed, over all iterations
	Headline    string                `json:"headline"`   // the report's first sentence: what learning bought, and where that was measured
	Phases      []record.PhaseStats   `json:"phases"`
	Decisions   int                   `json:"decisions"` // node-seconds with a decision in force (non-idle)
	Explores    int                   `json:"explores"`  // of which explorations
	Estimates   []record.Estimate     `json:"estimates"`
	Static      []record.StaticResult `json:"static"`
	Learned     record.StaticResult   `json:"learned"`
	LearnedHalf record.StaticResult   `json:"learned_half"` // over the last half of the iterations
	Carried     int64                 `json:"carried_over"`
	WindowsUS   []int64               `json:"windows_us"` // the Council's arms in microseconds, as in the recording
	Rounds      record.Decisions      `json:"rounds"`     // the Council's deciding rounds, as in the decision log
}

// Summarize computes the Summary of a recording.
func Summarize(r record.Recording) Summary {
	p := record.ProgressOf(r.Meta, r.Iterations, r.Elapsed)
	s := Summary{Mode: r.Meta.Mode, Elapsed: r.Elapsed, Seconds: len(r.Seconds), Iterations: p.Iterations, Planned: p.Planned, PhaseRuns: p.PhaseRuns,
		Estimates: r.Estimates, Static: r.Static, Carried: r.Meta.CarriedOver, WindowsUS: record.MicrosOf(r.Meta.Windows),
		Learned: record.Summary(r.Iterations), LearnedHalf: record.SummaryHalf(r.Iterations), Rounds: r.Decisions}
	for _, p := range record.Phases(r.Iterations) {
		s.Phases = append(s.Phases, record.Stats(r.Iterations, p))
	}
	s.Headline = Headline(r)
	for _, sec := range r.Seconds {
		for _, n := range sec.Nodes {
			if n.Pattern == "" {
				continue
			}
			s.Decisions++
			if n.Explore {
				s.Explores++
			}
		}
	}
	return s
}

var phaseColors = []string{"#dbe8f7", "#f7e3d3", "#dcefd8", "#efe0f3", "#f5f0cf", "#e2e2e2"}

func phaseColor(phases []string, p string) string {
	i := slices.Index(phases, p)
	if i < 0 {
		return "none"
	}
	return phaseColors[i%len(phaseColors)]
}

type figure struct {
	Title   string
	Caption string
	SVGs    []template.HTML
}

type staticRow struct {
	Label  string
	Cells  []string
	Total  string
	Rel    string
	Learn  bool
	Best   bool
	Static bool
}

type page struct {
	Title      string
	Headline   string
	Meta       record.Meta
	Generated  string
	Lines      []string
	Figures    []figure
	PhaseCols  []string
	Static     []staticRow
	StaticSVG  template.HTML
	StaticNote string
	StaticOn   string // where the static windows ran, when not where the run did ("in the simulator, not on this machine")
	StaticRuns string // how many iterations each static window ran
	Legend     []legendItem
	Events     []record.Event
	JSON       template.JS
}

type legendItem struct{ Phase, Color string }

// Write renders the self-contained report page of r to w: inline CSS and SVG,
// no scripts run, nothing fetched.
func Write(w io.Writer, r record.Recording) error {
	sum := Summarize(r)
	js, err := json.Marshal(sum)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	phases := record.Phases(r.Iterations)
	for _, p := range r.Meta.Phases {
		if !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
	}
	pg := page{
		Title:     r.Meta.Title,
		Headline:  sum.Headline,
		Meta:      r.Meta,
		Generated: time.Now().UTC().Format(time.RFC3339),
		JSON:      template.JS(strings.ReplaceAll(string(js), "</", `<\/`)),
	}
	if pg.Title == "" {
		pg.Title = "adaptio demo report"
	}
	for _, p := range phases {
		pg.Legend = append(pg.Legend, legendItem{p, phaseColor(phases, p)})
	}
	mode := "the real stack (Council service, emulated PFS, forwarding daemons, real bytes)"
	if r.Meta.Mode == "sim" {
		mode = "the deterministic simulator (virtual time)"
	}
	learn := "learning with " + r.Meta.Policy
	if r.Meta.StaticWindow > 0 {
		learn = "static window " + WindowLabel(r.Meta.StaticWindow) + " (no learning)"
	} else if r.Meta.Epsilon > 0 {
		learn += fmt.Sprintf(" (epsilon %.2f)", r.Meta.Epsilon)
	}
	pg.Lines = append(pg.Lines,
		fmt.Sprintf("Ran on %s: %d I/O nodes, %d data servers, %s.", mode, r.Meta.Nodes, r.Meta.Servers, learn),
		fmt.Sprintf("%s of run time%s: %s completed, each one run of every phase (%d phase runs); %d node-seconds with a decision in force, %d of them explorations.",
			record.Duration(r.Elapsed), virtual(r.Meta), iterationsDone(sum), sum.PhaseRuns, sum.Decisions, sum.Explores))
	if d := r.Decisions; d.Rounds > 0 {
		var parts []string
		for i, n := range d.ByWindow {
			if i < len(r.Meta.Windows) {
				parts = append(parts, fmt.Sprintf("%s %d", WindowLabel(r.Meta.Windows[i]), n))
			}
		}
		pg.Lines = append(pg.Lines, fmt.Sprintf("The Council closed %d deciding rounds, %d of them explorations (%.0f%%). Rounds per chosen window: %s.",
			d.Rounds, d.Explores, 100*float64(d.Explores)/float64(d.Rounds), strings.Join(parts, ", ")))
	}
	if r.Meta.DecisionLog != "" {
		pg.Lines = append(pg.Lines, "Every decision of the Council, with each node's metrics, detected pattern and reward, is in the decision log "+r.Meta.DecisionLog+" (JSON lines); the counts above are taken from it.")
	}
	if r.Meta.Workload != "" {
		pg.Lines = append(pg.Lines, "Workload: "+r.Meta.Workload)
	}
	if r.Meta.StateDir != "" {
		pg.Lines = append(pg.Lines, fmt.Sprintf("Learned state in %s; %d bandit pulls were carried over from earlier runs.", r.Meta.StateDir, r.Meta.CarriedOver))
	}
	pg.Lines = append(pg.Lines, r.Meta.Notes...)
	if r.SecondsDropped > 0 {
		pg.Lines = append(pg.Lines, fmt.Sprintf("A long run: the charts over time and the detection figures cover its last %d seconds; the first %d were let go to bound memory (iteration times and the Council's counts cover the whole run).",
			len(r.Seconds), r.SecondsDropped))
	}
	if r.EventsDropped > 0 {
		pg.Lines = append(pg.Lines, fmt.Sprintf("The event list keeps the last %d events; the first %d were let go to bound memory.", len(r.Events), r.EventsDropped))
	}
	if r.Interrupted || !r.Done {
		pg.Lines = append(pg.Lines, "The run was stopped before its planned end; this report shows what ran.")
	}

	pg.Figures = append(pg.Figures, fig6(r, sum))
	pg.Figures = append(pg.Figures, fig7(r, phases)...)
	pg.Figures = append(pg.Figures, fig8(r))
	pg.PhaseCols, pg.Static, pg.StaticSVG, pg.StaticNote = static(r, sum, phases)
	if r.Meta.StaticOn == "sim" && r.Meta.Mode != "sim" {
		pg.StaticOn = ", in the simulator, not on this machine"
	}
	if n := r.Meta.Compare; n > 0 {
		pg.StaticRuns = fmt.Sprintf(" Each static window ran %d iterations of its own.", n)
	}
	if n := len(r.Events); n > 200 {
		pg.Events = slices.Concat(r.Events[:100], []record.Event{{Kind: "…", Text: fmt.Sprintf("%d events omitted", n-200)}}, r.Events[n-100:])
	} else {
		pg.Events = r.Events
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pg); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteFile writes the report to path (via a temporary file, then rename).
func WriteFile(path string, r record.Recording) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return Write(w, r) }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// PaperRL cites the paper whose online experiment the demo runs and whose
// figures the report redraws: Bez et al., "Adaptive Request Scheduling for
// the I/O Forwarding Layer using Reinforcement Learning", FGCS 2020.
const PaperRL = "Bez et al., FGCS 2020"

// virtual says, after a duration of a run, that it is virtual time.
func virtual(m record.Meta) string {
	if m.Mode == "sim" {
		return " (virtual time)"
	}
	return ""
}

// iterationsDone is "48 of 48 iterations" (or "12 iterations" without a plan).
func iterationsDone(sum Summary) string {
	if sum.Planned > 0 {
		return fmt.Sprintf("%d of %d iterations", sum.Iterations, sum.Planned)
	}
	return fmt.Sprintf("%d iterations", sum.Iterations)
}

func fig6(r record.Recording, sum Summary) figure {
	f := figure{Title: "Execution time per iteration (" + PaperRL + ", Fig. 6)",
		Caption: "Each panel is one phase of the experiment. Red dashed: the first iteration; green: the best; blue: the linear trend over iterations."}
	for _, st := range sum.Phases {
		its := record.OfPhase(r.Iterations, st.Phase)
		var xs, ys []float64
		for _, it := range its {
			xs = append(xs, float64(it.K))
			ys = append(ys, it.Seconds)
		}
		x0, x1 := xs[0], xs[len(xs)-1]
		if x1 == x0 {
			x1 = x0 + 1
		}
		// As in the paper, each panel has its own y range, fitted to the data.
		lo, hi := slices.Min(ys), slices.Max(ys)
		for _, v := range []float64{st.TrendFirst, st.TrendLast} {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		pad := math.Max((hi-lo)*0.12, hi*0.02+1e-3)
		c := Chart{Title: fmt.Sprintf("%s: first %.2f s, best %.2f s (iteration %d), trend %.2f → %.2f s", st.Phase, st.First, st.Best, st.BestK, st.TrendFirst, st.TrendLast),
			XLabel: "iteration", YLabel: "execution time (s)", W: 760, H: 240,
			FixedY: true, YMin: math.Max(lo-pad, 0), YMax: hi + pad,
			Series: []Series{
				{Name: "time", Color: "#555", X: xs, Y: ys, Dots: true, Width: 0.8},
				{Name: "first", Color: "#d62728", X: []float64{x0, x1}, Y: []float64{st.First, st.First}, Dash: true},
				{Name: "best", Color: "#2ca02c", X: []float64{x0, x1}, Y: []float64{st.Best, st.Best}},
				{Name: "trend", Color: "#1f5fbf", X: []float64{x0, x1}, Y: []float64{st.Intercept + st.Slope*x0, st.Intercept + st.Slope*x1}},
			}}
		f.SVGs = append(f.SVGs, template.HTML(c.SVG()))
	}
	if len(sum.Phases) == 0 {
		f.Caption = "No iteration completed."
	}
	return f
}

// fig7 plots the window in force over time. Every I/O node applies the
// Council's decision, so node 0 stands for all (the others are drawn thin
// when they differ). Long runs show their first and last 15 minutes.
func fig7(r record.Recording, phases []string) []figure {
	const seg = 900.0
	if len(r.Seconds) == 0 {
		return []figure{{Title: "Window in force over time (" + PaperRL + ", Fig. 7)", Caption: "No second recorded."}}
	}
	t0 := r.Seconds[0].T - 1
	t1 := r.Seconds[len(r.Seconds)-1].T
	type span struct {
		a, b  float64
		title string
	}
	spans := []span{{t0, t1, "Window in force over time (" + PaperRL + ", Fig. 7)"}}
	if t1-t0 > 2*seg {
		spans = []span{{t0, t0 + seg, "Window in force: the first 15 minutes (" + PaperRL + ", Fig. 7)"}, {t1 - seg, t1, "Window in force: the last 15 minutes"}}
	}
	var ticks []Tick
	for i, w := range r.Meta.Windows {
		ticks = append(ticks, Tick{float64(i), WindowLabel(w)})
	}
	var out []figure
	for _, sp := range spans {
		f := figure{Title: sp.title, Caption: "Blue: the window in force on I/O node 0 (every node applies the Council's decision; other nodes are drawn thin where they differ). Red dots: seconds whose window was chosen to explore. Shaded: the workload phase the clients ran (legend above). Gray lines: a change in the pattern the Council detected."}
		var bands []Band
		var vlines []float64
		var series []Series
		colors := []string{"#1f5fbf", "#ff7f0e", "#2ca02c", "#9467bd"}
		prev := ""
		for node := r.Meta.Nodes - 1; node >= 0; node-- {
			var xs, ys, ex, ey []float64
			for _, sec := range r.Seconds {
				if sec.T < sp.a || sec.T > sp.b || node >= len(sec.Nodes) {
					continue
				}
				if node == 0 {
					col := phaseColor(phases, sec.Phase)
					if len(bands) > 0 && bands[len(bands)-1].Color == col && bands[len(bands)-1].X1 >= sec.T-1 {
						bands[len(bands)-1].X1 = sec.T
					} else if sec.Phase != "" {
						bands = append(bands, Band{sec.T - 1, sec.T, col})
					}
				}
				n := sec.Nodes[node]
				k := slices.Index(r.Meta.Windows, n.Window)
				if k < 0 {
					continue
				}
				if len(ys) == 0 || ys[len(ys)-1] != float64(k) {
					xs = append(xs, sec.T-1)
					ys = append(ys, float64(k))
				}
				if node == 0 && n.Explore {
					ex = append(ex, sec.T-0.5)
					ey = append(ey, float64(k))
				}
				if node == 0 && n.Pattern != "" {
					cur := n.Pattern + " " + n.Op
					if prev != "" && cur != prev {
						vlines = append(vlines, sec.T-1)
					}
					prev = cur
				}
			}
			if len(xs) > 0 {
				xs = append(xs, sp.b)
				ys = append(ys, ys[len(ys)-1])
			}
			w := 0.7
			name := ""
			if node == 0 {
				w, name = 1.6, "node 0"
				series = append(series, Series{Name: name, Color: colors[0], X: xs, Y: ys, Step: true, Width: w},
					Series{Name: "explore", Color: "#d62728", X: ex, Y: ey, Dots: true})
			} else {
				series = append(series, Series{Color: colors[node%len(colors)], X: xs, Y: ys, Step: true, Width: w})
			}
		}
		c := Chart{XLabel: "time (s)", YLabel: "window", W: 960, H: 230,
			YTicks: ticks, FixedY: true, YMin: -0.5, YMax: float64(len(ticks)) - 0.5, FixedX: true, XMin: sp.a, XMax: sp.b,
			Bands: bands, VLines: vlines, Series: series}
		f.SVGs = append(f.SVGs, template.HTML(c.SVG()))
		out = append(out, f)
	}
	return out
}

func fig8(r record.Recording) figure {
	f := figure{Title: "Value estimates per window at the end (" + PaperRL + ", Fig. 8)",
		Caption: "One panel per bandit instance (detected pattern and operation). Bar height: the estimated reward of the window; above each bar: how many times it was chosen. Green: the greedy (best) window."}
	for _, e := range r.Estimates {
		var bars []Bar
		for i, v := range e.Values {
			br := Bar{Label: WindowLabel(r.Meta.Windows[min(i, len(r.Meta.Windows)-1)]), Value: v}
			if i < len(e.Counts) {
				br.Note = fmt.Sprintf("n=%d", e.Counts[i])
			}
			if i == e.Best {
				br.Color = "#2ca02c"
			}
			bars = append(bars, br)
		}
		f.SVGs = append(f.SVGs, template.HTML(BarChart(e.Context, "value estimate ("+r.Meta.ValueUnit+")", bars, 440, 230)))
	}
	if len(r.Estimates) == 0 {
		f.Caption = "No value estimates (static run, or nothing learned yet)."
	}
	return f
}

func static(r record.Recording, sum Summary, phases []string) ([]string, []staticRow, template.HTML, string) {
	if len(r.Static) == 0 {
		return nil, nil, "", "No static-window comparison was run."
	}
	cols := slices.Clone(phases)
	rows := slices.Clone(r.Static)
	learned := sum.Learned
	on := r.Meta.StaticOn
	if on == "" {
		on = r.Meta.Mode
	}
	if r.Meta.StaticWindow == 0 && len(r.Iterations) > 0 && on == r.Meta.Mode {
		rows = append(rows, sum.LearnedHalf, learned)
	}
	best := minStatic(r.Static)
	var out []staticRow
	var bars []Bar
	for _, s := range rows {
		row := staticRow{Label: s.Label, Total: fmt.Sprintf("%.2f", s.Total), Learn: s.Window == 0, Static: s.Window > 0}
		if row.Label == "" {
			row.Label = WindowLabel(s.Window)
		}
		if s.Confirmed {
			row.Label += ConfirmedMark
		}
		for _, p := range cols {
			if v, ok := s.Phases[p]; ok {
				row.Cells = append(row.Cells, fmt.Sprintf("%.2f", v))
			} else {
				row.Cells = append(row.Cells, "–")
			}
		}
		if best > 0 && !math.IsInf(best, 0) {
			row.Rel = fmt.Sprintf("%.0f%%", 100*s.Total/best)
		}
		row.Best = s.Window > 0 && s.Total == best
		col := "#9bb3d6"
		if row.Learn {
			col = "#ff7f0e"
		} else if row.Best {
			col = "#2ca02c"
		}
		label := row.Label
		bars = append(bars, Bar{Label: label, Value: s.Total, Note: fmt.Sprintf("%.1f", s.Total), Color: col})
		out = append(out, row)
	}
	svg := BarChart("One cycle of the experiment: seconds (lower is better)", "seconds", bars, 960, 260)
	note := phaseVerdict(rows, cols)
	if slices.ContainsFunc(rows, func(s record.StaticResult) bool { return s.Confirmed }) {
		note += " " + confirmedNote
	}
	return cols, out, template.HTML(svg), strings.TrimSpace(note)
}

// ConfirmedMark follows the label of a static window run again
// (record.StaticResult.Confirmed).
const ConfirmedMark = "*"

const confirmedNote = "Windows marked " + ConfirmedMark + " came out best in a phase or in the cycle and were run again: their rows are the means over both runs, since the lowest of seven noisy means is, on average, lower than its window's true time."

// phaseVerdict says, for each phase where the default window is 15% or
// more slower than the phase's best static window, how learning over the
// last half of its iterations compares with the default: what learning
// buys where the window matters.
func phaseVerdict(rows []record.StaticResult, phases []string) string {
	var half, def *record.StaticResult
	for i := range rows {
		switch r := &rows[i]; {
		case r.Window == 0 && r.Label == record.LabelLastHalf:
			half = r
		case r.Window == sched.DefaultWindow:
			def = r
		}
	}
	if half == nil || def == nil {
		return ""
	}
	var parts []string
	for _, p := range phases {
		best := math.Inf(1)
		var bestW time.Duration
		for _, r := range rows {
			if v, ok := r.Phases[p]; ok && r.Window > 0 && v < best {
				best, bestW = v, r.Window
			}
		}
		d, l := def.Phases[p], half.Phases[p]
		if !(best > 0) || d < 1.15*best || !(l > 0) {
			continue
		}
		than := "faster"
		if l > d {
			than = "slower"
		}
		pm := ""
		if se := gainSE(l, d, half.SE[p], def.SE[p]); se > 0 {
			pm = fmt.Sprintf(" ± %.1f", 100*se)
		}
		parts = append(parts, fmt.Sprintf("%s (the default %.0f%% slower than %s): learning %.1f%s%% %s than the default", p,
			100*(d/best-1), WindowLabel(bestW), 100*math.Abs(1-l/d), pm, than))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("In no phase is the default window (%s) 15%% or more slower than the best static window.", WindowLabel(sched.DefaultWindow))
	}
	return fmt.Sprintf("Over the last half of its iterations, learning takes %.2f s a cycle (%.0f%% of the best static window's). Where the default window matters: %s.%s",
		half.Total, 100*half.Total/minStatic(rows), strings.Join(parts, "; "), seNote(half, def))
}

// gainSE is the standard error of learning's gain 1 - l/d over the default
// (l and d mean seconds with standard errors sl and sd, independent; the
// first-order propagation); 0 when either is unknown.
func gainSE(l, d, sl, sd float64) float64 {
	if !(sl > 0) || !(sd > 0) || !(l > 0) || !(d > 0) {
		return 0
	}
	return l / d * math.Sqrt(sl*sl/(l*l)+sd*sd/(d*d))
}

// seNote says what the ± of phaseVerdict are, when it gave any.
func seNote(half, def *record.StaticResult) string {
	if len(half.SE) == 0 || len(def.SE) == 0 {
		return ""
	}
	return " ± is one standard error, from the spread of each phase's iterations (each static window runs --compare iterations)."
}

// minStatic is the shortest cycle of a static window.
func minStatic(rows []record.StaticResult) float64 {
	best := math.Inf(1)
	for _, r := range rows {
		if r.Window > 0 {
			best = math.Min(best, r.Total)
		}
	}
	return best
}

// comparison is a learning row against the best, the default (1 ms) and
// the worst static window of the same rows.
type comparison struct{ learn, best, def, worst *record.StaticResult }

// compareRows finds the comparison in rows: the learning row is the last
// with no window; ok is false without it or without a static window.
func compareRows(rows []record.StaticResult) (c comparison, ok bool) {
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Window == 0:
			c.learn = r
		default:
			if c.best == nil || r.Total < c.best.Total {
				c.best = r
			}
			if c.worst == nil || r.Total > c.worst.Total {
				c.worst = r
			}
			if r.Window == sched.DefaultWindow {
				c.def = r
			}
		}
	}
	return c, c.learn != nil && c.best != nil && c.learn.Total > 0
}

// against says how learning's cycle compares with the static windows':
// "93% of the time of the best static window (8ms, 37.21 s, which nobody
// knows in advance), ...". whose qualifies the static windows ("the
// simulator's ").
func (c comparison) against(whose string) string {
	v := fmt.Sprintf("%.0f%% of the time of %sbest static window (%s, %.2f s, which nobody knows in advance)",
		100*c.learn.Total/c.best.Total, whose, WindowLabel(c.best.Window), c.best.Total)
	if c.def != nil {
		v += fmt.Sprintf(", %.0f%% of the default window's (%s, %.2f s)", 100*c.learn.Total/c.def.Total, WindowLabel(c.def.Window), c.def.Total)
	}
	return v + fmt.Sprintf(" and %.0f%% of the worst's (%s, %.2f s)", 100*c.learn.Total/c.worst.Total, WindowLabel(c.worst.Window), c.worst.Total)
}

// Headline is the report's first sentence: what learning bought against
// the static windows, and where both were measured. When the static
// windows ran where the learning did (the simulator, or the real stack
// with --compare-real), it compares the last quarter of the run's
// iterations with them. When a real run's comparison ran in the simulator,
// it says so first, compares the simulator's learning with the simulator's
// static windows, and says how to compare on this machine and what that
// costs in time. Empty for a run without learning or without a comparison.
func Headline(r record.Recording) string {
	if r.Meta.StaticWindow > 0 || len(r.Static) == 0 {
		return ""
	}
	on := r.Meta.StaticOn
	if on == "" {
		on = r.Meta.Mode
	}
	windows := len(r.Meta.Windows)
	if windows == 0 {
		windows = len(sched.Windows)
	}
	if on == r.Meta.Mode {
		if len(r.Iterations) == 0 {
			return ""
		}
		c, ok := compareRows(append(slices.Clone(r.Static), record.Summary(r.Iterations)))
		if !ok {
			return ""
		}
		where, static := "on this machine", "each static window run on this machine after learning"
		if r.Meta.Mode == "sim" {
			where, static = "in this simulated run", "each static window simulated alongside"
		}
		h := fmt.Sprintf("After learning, one cycle of the experiment takes %.2f s %s (the mean over the last quarter of each phase's iterations): %s; %s.",
			c.learn.Total, where, c.against("the "), static)
		if ran := staticWindows(r.Static); ran < windows {
			h += fmt.Sprintf(" Only %d of the %d static windows ran before the run stopped.", ran, windows)
		}
		return h
	}
	h := "Simulated comparison, not this machine's: the static windows below ran in the simulator."
	if c, ok := compareRows(r.Static); ok {
		h = fmt.Sprintf("Simulated comparison, not this machine's: in the simulator, after learning, one cycle of the experiment takes %.2f s: %s.",
			c.learn.Total, c.against("the simulator's "))
	}
	if len(r.Iterations) > 0 {
		h += fmt.Sprintf(" This run took %.2f s a cycle on this machine over the last quarter of its iterations, which the simulator's seconds do not measure.",
			record.Summary(r.Iterations).Total)
	}
	return h + " " + compareRealAdvice(r, windows)
}

// compareRealAdvice says how to compare learning with the static windows on
// the real stack, and how long that takes at this run's pace: every window
// runs Meta.Compare iterations, then each best in a phase or the cycle runs
// them again (at least one, at most one per phase and one for the cycle).
func compareRealAdvice(r record.Recording, windows int) string {
	const cmd = "To compare on this machine, run adaptio demo --compare-real"
	p := record.ProgressOf(r.Meta, r.Iterations, r.Elapsed)
	if r.Meta.Compare <= 0 || !(p.MeanSeconds > 0) {
		return cmd + ": after learning it runs each static window on this stack for --compare iterations, then the best ones again."
	}
	lo := float64((windows+1)*r.Meta.Compare) * p.MeanSeconds
	hi := float64((windows+min(p.PhasesPerIteration+1, windows))*r.Meta.Compare) * p.MeanSeconds
	more, h := record.Duration(lo), record.Duration(hi)
	switch a, ok := strings.CutSuffix(more, " min"); {
	case h == more:
	case ok && strings.HasSuffix(h, " min") && !strings.Contains(more+h, " h "):
		more = a + " to " + h // "6 to 9 min"
	default:
		more += " to " + h
	}
	return fmt.Sprintf("%s: after learning it runs each of the %d static windows on this stack for %d iterations, then the best ones again, about %s more at this run's %.1f s an iteration.",
		cmd, windows, r.Meta.Compare, more, p.MeanSeconds)
}

// staticWindows counts the rows of static windows.
func staticWindows(rows []record.StaticResult) int {
	n := 0
	for _, r := range rows {
		if r.Window > 0 {
			n++
		}
	}
	return n
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs": func(t float64) string { return fmt.Sprintf("%.0f", t) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font-family:sans-serif;max-width:1000px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
.figs{display:flex;flex-wrap:wrap;gap:8px}.cap{color:#555;font-size:.9em}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
tr.learn td{background:#fff1e0;font-weight:bold}tr.best td{background:#e6f4e4}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #ccc;font-size:.85em}
.ev{font-family:monospace;font-size:.8em;max-height:20em;overflow:auto;border:1px solid #ddd;padding:4px}
</style></head><body>
<h1>{{.Title}}</h1>
{{if .Headline}}<p id="headline"><b>{{.Headline}}</b></p>{{end}}
{{range .Lines}}<p>{{.}}</p>{{end}}
<p class="cap">Generated {{.Generated}}. This page is self-contained: it loads nothing from the network.</p>
{{if .Legend}}<p class="legend">Phases: {{range .Legend}}<span style="background:{{.Color}}">{{.Phase}}</span>{{end}}</p>{{end}}
{{range .Figures}}<h2>{{.Title}}</h2><p class="cap">{{.Caption}}</p><div class="figs">{{range .SVGs}}{{.}}{{end}}</div>{{end}}
<h2>The same workload under each static window{{.StaticOn}}</h2>
{{if .Static}}
<p class="cap">Mean execution time per phase in seconds; "cycle" is one pass of every phase (one iteration).{{.StaticRuns}} The learning rows use the last half and the last quarter of each phase's iterations. Relative: to the best static window.</p>
<table id="static"><tr><th>window</th>{{range .PhaseCols}}<th>{{.}}</th>{{end}}<th>cycle (s)</th><th>relative</th></tr>
{{range .Static}}<tr class="{{if .Learn}}learn{{else if .Best}}best{{end}}"><td>{{.Label}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{.Total}}</td><td>{{.Rel}}</td></tr>
{{end}}</table>
{{if .StaticNote}}<p><b>{{.StaticNote}}</b></p>{{end}}
<div class="figs">{{.StaticSVG}}</div>
{{else}}<p>{{.StaticNote}}</p>{{end}}
<h2>Events</h2>
<div class="ev">{{range .Events}}<div>{{secs .T}}s [{{.Kind}}] {{.Text}}</div>{{end}}</div>
<script type="application/json" id="adaptio-summary">{{.JSON}}</script>
</body></html>
`))
