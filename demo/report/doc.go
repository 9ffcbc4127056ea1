// Package report writes the demo's report.html: one offline page with
// hand-drawn SVG figures (no scripts run, nothing fetched) after seed 000's
// online evaluation: execution time per iteration with the first, best and
// trend lines (Fig. 6), the window in force over time with phase changes
// marked (Fig. 7), the value estimates per window for each pattern (Fig. 8),
// and the same workload under each static window. The figures' numbers are
// also embedded as JSON (element id "adaptio-summary") for scripts and tests.
//
//	err := report.WriteFile("report.html", rec.Snapshot())
package report
