package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/statefile"
	"github.com/adaptio/adaptio/council/virtual"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
)

// learnOptions are "adaptio sim run --learn"'s.
type learnOptions struct {
	Policy  string
	Epsilon float64
	State   string // learned state carried between runs ("" none)
	Seed    uint64
	Compare bool          // also run every static window and FIFO
	NoPlan  bool          // one window per decision (council.Config.NoPlan)
	Credit  string        // how rewards teach the bandits (council.Config.Credit)
	MaxPull time.Duration // the longest pull of the phase credit (council.Config.MaxPull)
}

// staticRun is one experiment without learning, for the comparison.
type staticRun struct {
	label string
	res   sim.Result
	err   error
}

// learnResult is a learning run and its comparison.
type learnResult struct {
	learned  sim.Result
	status   council.Status
	static   []staticRun
	rounds   int
	explores int
}

// simLearn runs cfg with the Council core choosing every I/O node's TWINS
// window each interval (package council/virtual), then, with Compare, the
// same experiment under each static window and FIFO, in parallel.
func simLearn(ctx context.Context, cfg sim.Config, o learnOptions, progress io.Writer) (learnResult, error) {
	if cfg.Scheduler != "" && cfg.Scheduler != "twins" {
		return learnResult{}, fmt.Errorf("--learn chooses TWINS windows: --scheduler %s cannot learn", cfg.Scheduler)
	}
	core, err := council.New(council.Config{Policy: o.Policy, Options: bandit.Options{Epsilon: o.Epsilon}, Windows: sched.Windows,
		Nodes: max(cfg.IONodes, 1), NoPlan: o.NoPlan, Credit: o.Credit, MaxPull: o.MaxPull}, rand.New(rand.NewPCG(o.Seed, 0xc0c1)))
	if err != nil {
		return learnResult{}, err
	}
	if o.State != "" {
		if _, err := statefile.Load(core, o.State); err != nil {
			return learnResult{}, fmt.Errorf("--state: %w", err)
		}
	}
	var out learnResult
	var wg sync.WaitGroup
	if o.Compare {
		// FIFO, then every TWINS window.
		settings := make([]sim.Config, 0, len(sched.Windows)+1)
		fifo := cfg
		fifo.Scheduler = "fifo"
		settings = append(settings, fifo)
		for _, w := range sched.Windows {
			c := cfg
			c.Scheduler, c.Window = "twins", w
			settings = append(settings, c)
		}
		out.static = make([]staticRun, len(settings))
		sem := make(chan struct{}, max(runtime.NumCPU()-1, 1))
		var mu sync.Mutex
		done := 0
		for i, c := range settings {
			label := c.Scheduler
			if label == "twins" {
				label = c.Window.String()
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				res, err := sim.Run(ctx, c, sim.Hooks{})
				out.static[i] = staticRun{label: label, res: res, err: err}
				mu.Lock()
				done++
				fmt.Fprintf(progress, "sim run --learn: static %s done (%d of %d)\n", label, done, len(settings))
				mu.Unlock()
			})
		}
	}
	loop := virtual.New(core)
	cfg.Scheduler = "twins"
	res, err := sim.Run(ctx, cfg, loop.Hooks(func(_ time.Duration, d council.Decision) {
		if d.Voters > 0 {
			out.rounds++
			if d.Explore {
				out.explores++
			}
		}
	}))
	wg.Wait()
	if err != nil {
		return out, err
	}
	fmt.Fprintln(progress, "sim run --learn: learning run done")
	out.learned, out.status = res, core.Status()
	if o.State != "" {
		if err := statefile.Save(core, o.State); err != nil {
			return out, fmt.Errorf("--state: %w", err)
		}
	}
	for _, s := range out.static {
		if s.err != nil {
			return out, fmt.Errorf("static %s: %w", s.label, s.err)
		}
	}
	return out, nil
}

// bestStatic is the static setting with the shortest makespan.
func (r learnResult) bestStatic() (staticRun, bool) {
	var best staticRun
	for _, s := range r.static {
		if best.label == "" || s.res.Makespan < best.res.Makespan {
			best = s
		}
	}
	return best, best.label != ""
}

// write prints what learning chose per pattern and how it compares.
func (r learnResult) write(w io.Writer) {
	fmt.Fprintf(w, "learning   makespan %.3f s, bandwidth %.1f MB/s; %d rounds decided, %d explored (policy %s)\n",
		r.learned.Makespan.Seconds(), r.learned.Bandwidth/1e6, r.rounds, r.explores, r.status.Policy)
	fmt.Fprintln(w, "\nwindow chosen per detected pattern (the Council's best estimate, and its pulls):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  pattern\tbest window\tpulls")
	for _, c := range r.status.Contexts {
		var n int64
		for _, k := range c.Counts {
			n += k
		}
		fmt.Fprintf(tw, "  %s\t%v\t%d\n", c.Context, c.Best, n)
	}
	tw.Flush()
	if len(r.static) == 0 {
		return
	}
	fmt.Fprintln(w, "\nthe same experiment without learning:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  setting\tmakespan (s)\tbandwidth (MB/s)\tlearning / setting (bandwidth)")
	for _, s := range r.static {
		fmt.Fprintf(tw, "  %s\t%.3f\t%.1f\t%.3f\n", s.label, s.res.Makespan.Seconds(), s.res.Bandwidth/1e6, r.learned.Bandwidth/s.res.Bandwidth)
	}
	tw.Flush()
	if best, ok := r.bestStatic(); ok {
		fmt.Fprintf(w, "\nbest static setting %s: learning reaches %.3f of its bandwidth\n", best.label, r.learned.Bandwidth/best.res.Bandwidth)
	}
}
