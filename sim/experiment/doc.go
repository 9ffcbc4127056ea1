// Package experiment runs experiments on the simulator (package sim) and
// judges them: the shell around the engine, with its goroutines, wall
// clock and files.
//
//   - The papers' grid (RunGrid, GridOptions): 144 scenarios x TWINS
//     windows and baselines, run in parallel and written as a dataset
//     (package dataset: observations.csv, summary.csv, then READY), byte
//     for byte the same whatever the workers, resumable; Run runs one
//     experiment and RunSeed derives its seed from its key.
//   - The papers' findings on a summary (Analyse, Outcomes, Findings).
//   - The check against real measurements (CompareForge): FORGE's
//     MareNostrum 4 bandwidths, read by package forge and grouped by
//     ForgePoints (writes through 1 to 8 forwarders; direct-access rows are
//     left out and counted), against the model configured by ForgeConfig,
//     with Spearman's rank correlation.
//
// A grid, its findings, and the FORGE check:
//
//	st, err := experiment.RunGrid(ctx, experiment.GridOptions{Out: dir, Workers: 4, Base: sim.Config{}})
//	exps, err := dataset.LoadSummary(dir)
//	experiment.Analyse(exps).Report(os.Stdout)
//
//	rows, err := forge.Load(path)
//	pts, direct := experiment.ForgePoints(rows)
//	rep, err := experiment.CompareForge(ctx, pts, experiment.ForgeOptions{Workers: 4})
//	rep.Report(os.Stdout)
package experiment
