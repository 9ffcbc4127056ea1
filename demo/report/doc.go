// Package report writes the demo's report.html: one offline page with
// hand-drawn SVG figures (no scripts run, nothing fetched) after the online
// evaluation of Bez et al., "Adaptive Request Scheduling for the I/O
// Forwarding Layer using Reinforcement Learning" (FGCS 2020). It leads with
// a headline (Headline) that compares learning with the static windows and
// says where both ran. Then: execution time per iteration with the first,
// best and trend lines (Fig. 6), the window in force over time with phase
// changes marked (Fig. 7), the value estimates per window for each pattern
// (Fig. 8), and the same workload under each static window. The figures'
// numbers are also embedded as JSON (element id "adaptio-summary") for
// scripts and tests.
//
//	err := report.WriteFile("report.html", rec.Snapshot())
package report
