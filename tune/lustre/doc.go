// Package lustre is the shell that tunes a Lustre client: it reads and
// sets the client's OSC parameters through its parameter tree (sys, proc
// and debugfs files), parses rpc_stats, and runs IOPathTune (package
// tune, a pure core) against every target on the wall clock
// (`adaptio tune lustre --auto`). The ranges it enforces are tune's one
// table (tune.CheckLustre).
//
//	a, _ := lustre.NewLustreAuto(lustre.LustreAutoConfig{Lustre: lustre.Lustre{Root: "/"}})
//	err := lustre.RunLustre(ctx, a, true) // a decision per interval; restore the values on exit
package lustre
