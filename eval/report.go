package eval

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one line of a plot: Y[i] at X[i].
type Series struct {
	Name string
	X, Y []float64
}

// BinSeries is a curve's precision (or performance, perf true) against the
// number of observations at the end of each bin.
func BinSeries(name string, c Curve, perf bool) Series {
	s := Series{Name: name}
	y := c.Precision
	if perf {
		y = c.Performance
	}
	for i, v := range y {
		s.X = append(s.X, float64(min((i+1)*c.Bin, c.Steps)))
		s.Y = append(s.Y, v)
	}
	return s
}

// LinePlot renders series as an inline SVG (fonts not embedded; nothing
// loaded from the network).
func LinePlot(title, xlabel, ylabel string, series []Series, ymin, ymax float64) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if !math.IsNaN(ymin) {
		p.Y.Min = ymin
	}
	if !math.IsNaN(ymax) {
		p.Y.Max = ymax
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	for i, s := range series {
		xy := make(plotter.XYs, len(s.Y))
		for j := range s.Y {
			xy[j].X, xy[j].Y = s.X[j], s.Y[j]
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", fmt.Errorf("eval: plot %q: %w", title, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	if !math.IsNaN(ymin) {
		p.Y.Min = ymin
	}
	if !math.IsNaN(ymax) {
		p.Y.Max = ymax
	}
	p.Legend.XOffs = -vg.Points(18) // keep the line samples inside the canvas
	p.X.Max *= 1.04                 // room for the last tick label
	return svgOf(p, 5.2*vg.Inch, 3.4*vg.Inch)
}

// svgOf renders p as an inline SVG of w x h.
func svgOf(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("eval: plot %q: %w", p.Title.Text, err)
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:] // drop the XML prolog inside HTML
	}
	return template.HTML(svg), nil
}

// Table is a titled table for the HTML report (and a CSV file).
type Table struct {
	Title  string
	Note   string
	Header []string
	Rows   [][]string
}

// Section is one part of a report: text, tables and figures.
type Section struct {
	Title   string
	Text    string
	Tables  []Table
	Figures []template.HTML
}

// Report is one offline HTML report.
type Report struct {
	Title    string
	Command  string
	Intro    string
	Sections []Section
}

var reportTmpl = template.Must(template.New("r").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}
th{background:#eee} td:first-child,th:first-child{text-align:left}
.figs{display:flex;flex-wrap:wrap;gap:8px} .figs svg{border:1px solid #ddd}
code{background:#f4f4f4;padding:1px 4px} .note{color:#555;font-size:90%}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Produced by <code>{{.Command}}</code></p>
<p>{{.Intro}}</p>
{{range .Sections}}<h2>{{.Title}}</h2>
{{if .Text}}<p>{{.Text}}</p>{{end}}
{{range .Tables}}<h3>{{.Title}}</h3>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .Figures}}<div class="figs">{{range .Figures}}{{.}}{{end}}</div>{{end}}
{{end}}</body></html>
`))

// WriteHTML writes the report to path.
func (r *Report) WriteHTML(path string) error {
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, r); err != nil {
		return fmt.Errorf("eval: report: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// WriteCSV writes a header and rows to dir/name.
func WriteCSV(dir, name string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(header); err != nil {
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}

// f3 formats a number with 3 decimals (4 significant for large values).
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// f1 formats with 1 decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
