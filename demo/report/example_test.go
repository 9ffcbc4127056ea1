package report_test

import (
	"fmt"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
)

func ExampleWindowLabel() {
	for _, us := range []int64{125, 250, 1000, 8000} {
		fmt.Print(report.WindowLabel(us), " ")
	}
	fmt.Println()
	// Output: 125µs 250µs 1ms 8ms
}

func ExampleSummarize() {
	rec := record.New(record.Meta{Mode: "sim", Nodes: 1, WindowsUS: []int64{250, 8000}})
	for _, s := range []float64{30, 27, 26, 24} {
		rec.AddIteration(record.Iteration{Phase: "SS write", Seconds: s})
	}
	sum := report.Summarize(rec.Snapshot())
	p := sum.Phases[0]
	fmt.Printf("%s: first %.0f s, best %.0f s, trend %.1f s per iteration\n", p.Phase, p.First, p.Best, p.Slope)
	// Output: SS write: first 30 s, best 24 s, trend -1.9 s per iteration
}
