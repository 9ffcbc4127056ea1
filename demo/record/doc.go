// Package record is the data model of adaptio's demo: what each I/O node did
// each second (detected pattern, window in force, explore or exploit,
// bandwidth), each iteration's execution time, the Council's value estimates
// and the static-window comparison. The run writes into a Recorder; the
// terminal view, the web dashboard and the report read from it.
//
//	rec := record.New(record.Meta{Mode: "sim", Nodes: 4, Windows: sched.Windows})
//	rec.AddSecond(record.Second{T: 1, Phase: "SS write", Nodes: nodes})
//	rec.AddIteration(record.Iteration{Phase: "SS write", Seconds: 41.2})
//	d := rec.Since(seen[0], seen[1], seen[2], 600) // incremental, for the dashboard
//	all := rec.Snapshot()                           // for the report
package record
