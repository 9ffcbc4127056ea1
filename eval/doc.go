// Package eval holds the offline evaluations of the learning parts, as the
// papers ran them and beyond:
//
//   - the bandit evaluation of Bez et al., FGCS 2020, V-B on the simulator's dataset
//     (TwinsEnvs, EvaluateBandit: Fig. 4, Fig. 5, Tables II and IV for every
//     policy);
//   - the same on real FORGE measurements (read by package forge;
//     ForgeEnvs, EvaluateForge), where a context is an access pattern and the
//     arms are numbers of forwarders ("direct" for direct access), learned
//     cold or from the nearest known patterns (SimulateShared);
//   - detection-guided window choice against a fixed 1 ms window
//     (Bez et al., SBAC-PAD 2019, Tables VI and VII).
//
// An Env holds, per arm, the rewards measured for one context; a simulation
// draws one at random for each pull. Simulations are deterministic: every
// (context, repetition) has its own seeded stream, so results do not depend
// on the number of parallel workers.
//
//	rows, _ := eval.LoadForge(path) // forge.Load; ErrNoData when empty
//	envs, _, _ := eval.ForgeEnvs(rows)
//	curves, _ := eval.SimulateAll(ctx, envs, eval.DefaultSpecs(0), eval.Config{Reps: 100, Bin: 10, Steps: 200})
//	first, _ := curves[0][0].First() // precision of the first bin
//
// Reports are one self-contained HTML file with inline SVG plots plus CSVs.
package eval
