package fwdbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/workload"
)

// Pair is one round of a comparison: the same pattern through the
// forwarder and directly.
type Pair struct {
	Forwarded, Direct Result
	// DirectFirst tells which of the two ran first in this round.
	DirectFirst bool
}

// phases returns the round's forwarded and direct write phases (read
// false) or read phases.
func (r Pair) phases(read bool) (forwarded, direct Phase) {
	if read {
		return r.Forwarded.Read, r.Direct.Read
	}
	return r.Forwarded.Write, r.Direct.Write
}

// steal is the larger of the round's two phases' steal (Phase.Steal), if
// both are known.
func (r Pair) steal(read bool) (float64, bool) {
	f, d := r.phases(read)
	if !f.StealKnown || !d.StealKnown {
		return 0, false
	}
	return max(f.Steal, d.Steal), true
}

// NoisySteal is the steal (Phase.Steal) from which Comparison.Print calls
// a round noisy. Over 32 phases of adaptio bench --compare with 32 KiB
// requests on 2 virtual CPUs, fwd/direct had a median of 0.650 (0.544 to
// 0.836) in the 15 with under 2% steal and of 0.535 (0.378 to 0.608) in the
// 9 with 5% or more; the CPU per GiB moved with it (spinning threads wait
// longer for a descheduled one).
const NoisySteal = 0.05

// Comparison is the outcome of Compare.
type Comparison struct {
	Pattern workload.Pattern
	Rounds  []Pair
}

// Compare runs pattern p rounds times through the forwarder behind c (and
// o.Clients, as Run) and as many times directly on the local directory dir
// (as RunDirect), alternating the two, and alternating which goes first in
// a round, so that both see the same state of a shared machine and neither
// always follows the other. The ratios of their bandwidths within each
// round are forwarder over direct, the figure the forwarder's speed targets
// are stated in. dir should be on the file system the forwarder's backend
// writes to. It stops at the first error.
func Compare(ctx context.Context, c *client.Client, dir string, p workload.Pattern, o Options, rounds int) (Comparison, error) {
	cmp := Comparison{Pattern: p}
	if rounds < 1 {
		return cmp, fmt.Errorf("bench: %d comparison rounds: want >= 1", rounds)
	}
	for i := 0; i < rounds; i++ {
		pair := Pair{DirectFirst: i%2 == 1}
		for k := 0; k < 2; k++ {
			var err error
			if (k == 0) == pair.DirectFirst {
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "bench: round %d of %d: directly on %s\n", i+1, rounds, dir)
				}
				od := o
				od.Job, od.Jobs = "", 0 // jobs are the forwarder's
				pair.Direct, err = RunDirect(ctx, dir, p, od)
			} else {
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "bench: round %d of %d: through the forwarder\n", i+1, rounds)
				}
				pair.Forwarded, err = Run(ctx, c, p, o)
			}
			if err != nil {
				return cmp, err
			}
		}
		cmp.Rounds = append(cmp.Rounds, pair)
	}
	return cmp, nil
}

// Ratios returns, per round, the forwarded phase's bandwidth over the
// direct one's, for the write phase (read false) or the read phase.
func (c Comparison) Ratios(read bool) []float64 {
	return c.perRound(read, func(f, d Phase) (float64, bool) { return f.Bandwidth / d.Bandwidth, true })
}

// CPURatios returns, per round, the direct phase's CPU time per GiB over
// the forwarded one's (this process's and the daemon's), for the write
// phase (read false) or the read phase; nil unless every forwarded phase
// knows the daemon's CPU (Options.ForwarderCPU). Like the bandwidth ratio it
// is the forwarder's share of direct, 1 for no cost.
func (c Comparison) CPURatios(read bool) []float64 {
	return c.perRound(read, func(f, d Phase) (float64, bool) {
		if !f.ForwarderCPUKnown || f.CPUPerGiB() <= 0 {
			return 0, false
		}
		return d.CPUPerGiB() / f.CPUPerGiB(), true
	})
}

// QuietRatios returns Ratios of the rounds whose steal (Phase.Steal, the
// larger of the two runs') is known and below maxSteal.
func (c Comparison) QuietRatios(read bool, maxSteal float64) []float64 {
	var out []float64
	for _, r := range c.Rounds {
		f, d := r.phases(read)
		if s, ok := r.steal(read); ok && s < maxSteal && d.Bandwidth > 0 {
			out = append(out, f.Bandwidth/d.Bandwidth)
		}
	}
	return out
}

// perRound returns ratio of each round's forwarded and direct phases,
// skipping rounds without the phase (NoVerify); nil as soon as ratio has
// none for a round.
func (c Comparison) perRound(read bool, ratio func(f, d Phase) (float64, bool)) []float64 {
	out := make([]float64, 0, len(c.Rounds))
	for _, r := range c.Rounds {
		f, d := r.phases(read)
		if d.Bandwidth <= 0 {
			continue // no such phase (NoVerify)
		}
		x, ok := ratio(f, d)
		if !ok {
			return nil
		}
		out = append(out, x)
	}
	return out
}

// Median is the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Print writes one line per round and phase with both bandwidths and their
// ratio (and, when the daemon's CPU is known, both CPU times per GiB and
// their ratio; when the machine's steal time is known, the round's), then
// each phase's median ratios and ranges, and, if some rounds were noisy
// (NoisySteal), which ones and the median of the others.
func (c Comparison) Print(w io.Writer) {
	printPattern(w, c.Pattern)
	fmt.Fprintf(w, "rounds     : %d (forwarder and direct alternated)\n", len(c.Rounds))
	withCPU := len(c.CPURatios(false)) > 0
	withSteal := len(c.Rounds) > 0
	for _, r := range c.Rounds {
		_, ok := r.steal(false)
		withSteal = withSteal && ok
	}
	fmt.Fprintf(w, "\n%-7s %6s %14s %14s %12s", "access", "round", "fwd(MiB/s)", "direct(MiB/s)", "fwd/direct")
	if withCPU {
		fmt.Fprintf(w, " %14s %14s %14s", "fwd cpu(s/GiB)", "direct cpu", "cpu direct/fwd")
	}
	if withSteal {
		fmt.Fprintf(w, " %9s", "steal(%)")
	}
	fmt.Fprintf(w, "\n%-7s %6s %14s %14s %12s", "------", "-----", "----------", "-------------", "----------")
	if withCPU {
		fmt.Fprintf(w, " %14s %14s %14s", "--------------", "----------", "--------------")
	}
	if withSteal {
		fmt.Fprintf(w, " %9s", "--------")
	}
	fmt.Fprintln(w)
	for _, read := range []bool{false, true} {
		if len(c.Ratios(read)) == 0 {
			continue
		}
		for i, r := range c.Rounds {
			f, d := r.phases(read)
			if d.Bandwidth <= 0 {
				continue
			}
			fmt.Fprintf(w, "%-7s %6d %14.2f %14.2f %12.3f", f.Op, i+1, f.Bandwidth/(1<<20), d.Bandwidth/(1<<20), f.Bandwidth/d.Bandwidth)
			if withCPU {
				fmt.Fprintf(w, " %14.3f %14.3f %14.3f", f.CPUPerGiB(), d.CPUPerGiB(), d.CPUPerGiB()/f.CPUPerGiB())
			}
			if s, ok := r.steal(read); ok && withSteal {
				fmt.Fprintf(w, " %9.1f", 100*s)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	for _, read := range []bool{false, true} {
		op := "write"
		if read {
			op = "read"
		}
		if ratios := c.Ratios(read); len(ratios) > 0 {
			fmt.Fprintf(w, "%-7s fwd/direct median %.3f (%.3f to %.3f over %d rounds)\n", op, Median(ratios), slices.Min(ratios), slices.Max(ratios), len(ratios))
		}
		if ratios := c.CPURatios(read); len(ratios) > 0 {
			fmt.Fprintf(w, "%-7s cpu direct/fwd median %.3f (%.3f to %.3f): CPU per GiB, this process's and the forwarder's\n", op, Median(ratios), slices.Min(ratios), slices.Max(ratios))
		}
	}
	if withSteal {
		c.printNoise(w)
	}
	verified := len(c.Rounds) > 0
	for _, r := range c.Rounds {
		verified = verified && r.Forwarded.Verified && r.Direct.Verified
	}
	if verified {
		fmt.Fprintf(w, "\nverification: every byte read back matched, in every run\n")
	}
}

// printNoise names the rounds in which the hypervisor took NoisySteal or
// more of the machine's CPU time, and gives the median ratio of the others.
func (c Comparison) printNoise(w io.Writer) {
	for _, read := range []bool{false, true} {
		op := "write"
		if read {
			op = "read"
		}
		var noisy []string
		for i, r := range c.Rounds {
			if s, ok := r.steal(read); ok && s >= NoisySteal {
				noisy = append(noisy, fmt.Sprint(i+1))
			}
		}
		if len(noisy) == 0 || len(c.Ratios(read)) == 0 {
			continue
		}
		fmt.Fprintf(w, "%-7s noisy rounds (%.0f%% or more of the CPU time stolen by the hypervisor): %s", op, 100*NoisySteal, strings.Join(noisy, ", "))
		if quiet := c.QuietRatios(read, NoisySteal); len(quiet) > 0 {
			fmt.Fprintf(w, "; fwd/direct median of the other %d: %.3f", len(quiet), Median(quiet))
		}
		fmt.Fprintln(w)
	}
}
