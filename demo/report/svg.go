package report

import (
	"fmt"
	"html"
	"math"
	"strings"
	"unicode/utf8"
)

// Series is one line (or set of points) of a Chart.
type Series struct {
	Name  string
	Color string
	X, Y  []float64
	Dash  bool    // dashed line
	Step  bool    // step line (value holds until the next point)
	Dots  bool    // draw points (and no line when Width is 0)
	Width float64 // line width; 0 with Dots: points only
}

// Band is a shaded x range (a workload phase).
type Band struct {
	X0, X1 float64
	Color  string
}

// Tick is a labelled axis position.
type Tick struct {
	V     float64
	Label string
}

// Chart is a hand-rolled SVG x/y chart: no external assets, no scripts.
type Chart struct {
	Title, XLabel, YLabel string
	W, H                  int
	Series                []Series
	VLines                []float64 // gray vertical markers
	Bands                 []Band
	YTicks                []Tick // custom y ticks (default: nice numbers)
	YMin, YMax            float64
	FixedY                bool // use YMin/YMax as given
	XMin, XMax            float64
	FixedX                bool
}

const (
	padL, padR, padT, padB = 64, 16, 28, 44
)

func esc(s string) string { return html.EscapeString(s) }

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100000:
		return fmt.Sprintf("%.0fk", v/1000)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
	case a >= 1:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// SVG renders the chart.
func (c Chart) SVG() string {
	if c.W == 0 {
		c.W = 760
	}
	if c.H == 0 {
		c.H = 280
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	for _, b := range c.Bands {
		xmin, xmax = math.Min(xmin, b.X0), math.Max(xmax, b.X1)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if c.FixedX {
		xmin, xmax = c.XMin, c.XMax
	}
	if c.FixedY {
		ymin, ymax = c.YMin, c.YMax
	} else {
		if ymin > 0 {
			ymin = 0
		}
		ymax += (ymax - ymin) * 0.08
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	padT := float64(padT)
	legendY := 12.0
	named := false
	for _, s := range c.Series {
		named = named || s.Name != ""
	}
	if named && c.Title != "" {
		padT, legendY = 40.0, 30.0
	}
	pw, ph := float64(c.W-padL-padR), float64(c.H-padB)-padT
	X := func(v float64) float64 { return padL + (v-xmin)/(xmax-xmin)*pw }
	Y := func(v float64) float64 { return padT + ph - (v-ymin)/(ymax-ymin)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="11">`, c.W, c.H, c.W, c.H)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`, c.W, c.H)
	if c.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`, padL, esc(c.Title))
	}
	for _, bd := range c.Bands {
		x0, x1 := math.Max(X(bd.X0), padL), math.Min(X(bd.X1), padL+pw)
		if x1 > x0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, padT, x1-x0, ph, bd.Color)
		}
	}
	// axes and grid
	yt := c.YTicks
	if len(yt) == 0 {
		for _, v := range niceTicks(ymin, ymax, 5) {
			yt = append(yt, Tick{v, fmtNum(v)})
		}
	}
	for _, t := range yt {
		if t.V < ymin-1e-9 || t.V > ymax+1e-9 {
			continue
		}
		y := Y(t.V)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, padL, y, padL+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padL-5, y, esc(t.Label))
	}
	for _, v := range niceTicks(xmin, xmax, 8) {
		if v < xmin-1e-9 || v > xmax+1e-9 {
			continue
		}
		x := X(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, x, padT+ph, x, padT+ph+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, padT+ph+16, fmtNum(v))
	}
	for _, v := range c.VLines {
		if v < xmin || v > xmax {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9a9a9a" stroke-width="0.8"/>`, X(v), padT, X(v), padT+ph)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#666"/>`, padL, padT, pw, ph)
	if c.XLabel != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, padL+pw/2, c.H-6, esc(c.XLabel))
	}
	if c.YLabel != "" {
		fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, padT+ph/2, esc(c.YLabel))
	}
	// series, clipped to the plot area
	fmt.Fprintf(&b, `<g>`)
	for _, s := range c.Series {
		if len(s.X) == 0 {
			continue
		}
		w := s.Width
		if w == 0 && !s.Dots {
			w = 1.5
		}
		if w > 0 {
			var p strings.Builder
			for i := range s.X {
				x, y := X(s.X[i]), Y(s.Y[i])
				switch {
				case i == 0:
					fmt.Fprintf(&p, "M%.1f %.1f", x, y)
				case s.Step:
					fmt.Fprintf(&p, "H%.1fV%.1f", x, y)
				default:
					fmt.Fprintf(&p, "L%.1f %.1f", x, y)
				}
			}
			dash := ""
			if s.Dash {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="%.1f"%s/>`, p.String(), s.Color, w, dash)
		}
		if s.Dots {
			for i := range s.X {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"/>`, X(s.X[i]), Y(s.Y[i]), s.Color)
			}
		}
	}
	fmt.Fprintf(&b, `</g>`)
	// legend
	lx := float64(padL) + pw
	for i := len(c.Series) - 1; i >= 0; i-- {
		s := c.Series[i]
		if s.Name == "" {
			continue
		}
		tw := float64(len(s.Name))*6 + 26
		lx -= tw
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`, lx, legendY, lx+16, legendY, s.Color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, lx+19, legendY+4, esc(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// Bar is one bar of a BarChart.
type Bar struct {
	Label string
	Value float64
	Note  string // printed above the bar
	Color string
}

// charWidth is a generous width of one character of the charts' 11 px
// sans-serif text: wider than the mean character of the fonts browsers
// pick for it (Liberation Sans, DejaVu Sans, Arial), so labels laid out with
// it do not touch.
const charWidth = 6.5

// lineHeight is the distance between the lines of a wrapped 11 px label.
const lineHeight = 13

// textWidth is the width label takes at font size 11 (charWidth each).
func textWidth(label string) float64 { return charWidth * float64(utf8.RuneCountInString(label)) }

// wrap breaks label at spaces into lines of at most width at font size 11;
// a word wider than width keeps a line of its own.
func wrap(label string, width float64) []string {
	var lines []string
	for _, word := range strings.Fields(label) {
		if n := len(lines); n > 0 && textWidth(lines[n-1]+" "+word) <= width {
			lines[n-1] += " " + word
			continue
		}
		lines = append(lines, word)
	}
	return lines
}

// BarChart renders vertical bars. A label wider than its bar's slot is
// wrapped onto more lines (the chart grows taller to hold them), and set
// smaller when one word is still wider.
func BarChart(title, ylabel string, bars []Bar, w, h int) string {
	if w == 0 {
		w = 380
	}
	if h == 0 {
		h = 240
	}
	slot := float64(w-padL-padR) / float64(max(len(bars), 1))
	labels := make([][]string, len(bars))
	lines := 1
	for i, br := range bars {
		labels[i] = wrap(br.Label, slot*0.95)
		lines = max(lines, len(labels[i]))
	}
	plotH := h
	h += (lines - 1) * lineHeight
	ymax := 0.0
	for _, br := range bars {
		ymax = math.Max(ymax, br.Value)
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax *= 1.15
	pw, ph := float64(w-padL-padR), float64(plotH-padT-padB)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="11">`, w, h, w, h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`, padL, esc(title))
	for _, v := range niceTicks(0, ymax, 4) {
		y := padT + ph - v/ymax*ph
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, padL, y, padL+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padL-5, y, fmtNum(v))
	}
	for i, br := range bars {
		x := padL + float64(i)*slot + slot*0.15
		bh := math.Max(br.Value, 0) / ymax * ph
		col := br.Color
		if col == "" {
			col = "#6b8fc7"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, padT+ph-bh, slot*0.7, bh, col)
		size, widest := "", 0.0
		for _, l := range labels[i] {
			widest = max(widest, textWidth(l))
		}
		if widest > slot*0.95 {
			size = fmt.Sprintf(` font-size="%.1f"`, 11*slot*0.95/widest)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle"%s>`, x+slot*0.35, padT+ph+14, size)
		for k, l := range labels[i] {
			dy := 0
			if k > 0 {
				dy = lineHeight
			}
			fmt.Fprintf(&b, `<tspan x="%.1f" dy="%d">%s</tspan>`, x+slot*0.35, dy, esc(l))
		}
		b.WriteString(`</text>`)
		if br.Note != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`, x+slot*0.35, padT+ph-bh-4, esc(br.Note))
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#666"/>`, padL, padT, pw, ph)
	fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, padT+ph/2, esc(ylabel))
	b.WriteString(`</svg>`)
	return b.String()
}
