package report_test

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/demo/report"
)

func ExampleWindowLabel() {
	for _, w := range []time.Duration{0, 125 * time.Microsecond, 250 * time.Microsecond, time.Millisecond, 8 * time.Millisecond} {
		fmt.Print(report.WindowLabel(w), " ")
	}
	fmt.Println()
	// Output: learning 125µs 250µs 1ms 8ms
}

func ExampleSummarize() {
	rec := record.New(record.Meta{Mode: "sim", Nodes: 1, Windows: []time.Duration{250 * time.Microsecond, 8 * time.Millisecond}})
	for _, s := range []float64{30, 27, 26, 24} {
		rec.AddIteration(record.Iteration{Phase: "SS write", Seconds: s})
	}
	sum := report.Summarize(rec.Snapshot())
	p := sum.Phases[0]
	fmt.Printf("%s: first %.0f s, best %.0f s, trend %.1f s per iteration\n", p.Phase, p.First, p.Best, p.Slope)
	// Output: SS write: first 30 s, best 24 s, trend -1.9 s per iteration
}
