// Package simplot draws the simulator's figures from a dataset summary with
// gonum/plot: Bez et al., FGCS 2020, Fig. 1-like makespans per window against FIFO and
// HBRR, the best window per scenario, and TWINS against FIFO per I/O node
// count.
//
//	exps, _ := dataset.LoadSummary(dir)
//	files, err := simplot.All(exps, outDir) // SVG and PNG files
package simplot

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim/experiment"
)

var (
	red  = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	blue = color.RGBA{R: 40, G: 90, B: 200, A: 255}
	grey = color.RGBA{R: 90, G: 90, B: 90, A: 255}
)

// save writes p as name.svg and name.png in dir and returns the paths.
func save(p *plot.Plot, w, h vg.Length, dir, name string) ([]string, error) {
	var out []string
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(dir, name+ext)
		if err := p.Save(w, h, path); err != nil {
			return out, fmt.Errorf("simplot: %s: %w", path, err)
		}
		out = append(out, path)
	}
	return out, nil
}

// Fig1 draws, for each I/O node count, the makespan of Bez et al., FGCS 2020, Fig. 1's
// scenario (128 processes, shared file, 32 KiB 1D-strided reads) with FIFO
// and HBRR (red) and TWINS with each window (blue): fig1-<n>ion.{svg,png}.
func Fig1(exps []dataset.Experiment, dir string) ([]string, error) {
	var files []string
	for _, o := range experiment.Outcomes(exps) {
		if !experiment.Fig1Pattern(o.Scenario.Pattern) {
			continue
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: makespan", o.Scenario)
		p.Y.Label.Text = "makespan (s)"
		var labels []string
		var vals plotter.Values
		var cols []color.Color
		for _, b := range []string{"fifo", "hbrr"} {
			if m, ok := o.Baselines[b]; ok {
				labels = append(labels, b)
				vals = append(vals, m.Seconds())
				cols = append(cols, red)
			}
		}
		for _, w := range sched.Windows {
			if m, ok := o.Twins[w]; ok {
				labels = append(labels, sched.WindowLabel(w))
				vals = append(vals, m.Seconds())
				cols = append(cols, blue)
			}
		}
		for i := range vals {
			one := make(plotter.Values, len(vals))
			one[i] = vals[i]
			bc, err := plotter.NewBarChart(one, vg.Points(22))
			if err != nil {
				return files, err
			}
			bc.Color = cols[i]
			bc.LineStyle.Width = 0
			p.Add(bc)
		}
		p.NominalX(labels...)
		f, err := save(p, 16*vg.Centimeter, 9*vg.Centimeter, dir, fmt.Sprintf("fig1-%dion", o.Scenario.IONodes))
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// BestWindow draws how many scenarios each window is the best for: best-window.{svg,png}.
func BestWindow(exps []dataset.Experiment, dir string) ([]string, error) {
	f := experiment.Analyse(exps)
	p := plot.New()
	p.Title.Text = "Best TWINS window per scenario"
	p.Y.Label.Text = "scenarios"
	var vals plotter.Values
	var labels []string
	for _, w := range sched.Windows {
		vals = append(vals, float64(f.BestWindowCount[w]))
		labels = append(labels, sched.WindowLabel(w))
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(24))
	if err != nil {
		return nil, err
	}
	bc.Color = blue
	bc.LineStyle.Width = 0
	p.Add(bc)
	p.NominalX(labels...)
	return save(p, 14*vg.Centimeter, 8*vg.Centimeter, dir, "best-window")
}

// TwinsVsFIFO draws, per I/O node count, the ratio of the best TWINS
// window's makespan to FIFO's for every scenario (below 1: TWINS is
// faster): twins-vs-fifo.{svg,png}. The 1 I/O node column is Bez et al.'s FGCS 2020 paper's
// third finding.
func TwinsVsFIFO(exps []dataset.Experiment, dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = "Best TWINS window / FIFO makespan, per scenario"
	p.X.Label.Text = "I/O nodes"
	p.Y.Label.Text = "makespan ratio"
	byN := map[int]plotter.XYs{}
	var ns []int
	for _, o := range experiment.Outcomes(exps) {
		_, bm, ok := o.BestWindow()
		fifo, ok2 := o.Baselines["fifo"]
		if !ok || !ok2 || fifo <= 0 {
			continue
		}
		n := o.Scenario.IONodes
		if _, seen := byN[n]; !seen {
			ns = append(ns, n)
		}
		k := len(byN[n])
		byN[n] = append(byN[n], plotter.XY{X: float64(len(ns)-1) + 0.6*(float64(k%36)/36-0.3), Y: bm.Seconds() / fifo.Seconds()})
	}
	slices.Sort(ns)
	var labels []string
	for i, n := range ns {
		pts := byN[n]
		for j := range pts {
			pts[j].X = float64(i) + 0.6*(float64(j)/float64(max(1, len(pts)))-0.3)
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.Color = blue
		p.Add(sc)
		labels = append(labels, fmt.Sprint(n))
	}
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(ns)) - 0.5, Y: 1}})
	if err != nil {
		return nil, err
	}
	one.Color = grey
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.NominalX(labels...)
	return save(p, 14*vg.Centimeter, 9*vg.Centimeter, dir, "twins-vs-fifo")
}

// All draws every figure into dir (created) and returns the files written.
func All(exps []dataset.Experiment, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simplot: %w", err)
	}
	var files []string
	for _, fn := range []func([]dataset.Experiment, string) ([]string, error){Fig1, BestWindow, TwinsVsFIFO} {
		f, err := fn(exps, dir)
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}
