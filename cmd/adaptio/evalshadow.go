package main

import (
	"fmt"
	"io"

	"github.com/adaptio/adaptio/eval"
)

// printShadow prints what a decision log says of the rounds the operator's
// controls steered: per context, the window in force, learning's agreement
// with it, and each window learning chose with the rewards the log holds
// for it, or "no support" and no interval where it holds none.
func printShadow(w io.Writer, r eval.ShadowReport) {
	fmt.Fprintf(w, "%d decisions, %d in shadow mode: windows in force against learning's choices\n", r.Decisions, r.Shadow)
	for _, c := range r.Contexts {
		in := "no logged reward"
		if c.InForce.N > 0 {
			in = fmt.Sprintf("mean reward %.4g over %d rewards", c.InForce.Mean, c.InForce.N)
		}
		fmt.Fprintf(w, "%s: %d rounds, %d steered; in force mostly %v (%s); learning agreed in %d (%.0f%%: gain 0 there)\n",
			c.Context, c.Rounds, c.Steered, c.Control, in, c.Agreed, pct(c.Agreed, c.Rounds))
		for _, ch := range c.Learned {
			if ch.Window == c.Control {
				continue
			}
			if !ch.Reward.Supported {
				fmt.Fprintf(w, "  learning chose %v in %d rounds: the log holds %d rewards for it in %s: no support, no estimate\n", ch.Window, ch.Rounds, ch.Reward.N, c.Context)
				continue
			}
			fmt.Fprintf(w, "  learning chose %v in %d rounds: %d logged rewards, mean %.4g [%.4g, %.4g] (95%%), %+.1f%% against the window in force\n",
				ch.Window, ch.Rounds, ch.Reward.N, ch.Reward.Mean, ch.Reward.Lo, ch.Reward.Hi, 100*ch.Reward.GainVsCtrl)
		}
		if c.Unsupported > 0 {
			fmt.Fprintf(w, "  what learning would have gained is not identified in %.0f%% of the %s rounds (the log never ran its windows there)\n", 100*c.Unsupported, c.Context)
		}
	}
	if u := r.UnsupportedContexts(); u != "" {
		fmt.Fprintf(w, "warning: no estimate of learning's gain in %s: a log that ran one window cannot say what others earn; let learning steer some patterns (shadow off, with the guardrail on: its control share keeps the default measured beside learning's windows) or pin other windows for a while, then evaluate again\n", u)
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
