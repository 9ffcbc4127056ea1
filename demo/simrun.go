package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/statefile"
	"github.com/adaptio/adaptio/council/virtual"
	"github.com/adaptio/adaptio/demo/record"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// Files in the state directory.
const (
	SimStateFile   = "sim-council.json"    // the simulated Council's learned state
	SimDecisionLog = "decisions-sim.jsonl" // the simulated Council's decisions of the last --sim run
)

// newCore builds the Council core of the demo and restores its learned
// state from path if the file exists; it returns the pulls carried over.
func newCore(cfg Config, path string) (*council.Council, int64, error) {
	core, err := council.New(council.Config{Policy: cfg.Policy, Options: bandit.Options{Epsilon: cfg.Epsilon},
		Windows: sched.Windows, Nodes: cfg.Nodes, Timeout: min(council.DefaultTimeout, cfg.Interval/2), NoPlan: cfg.NoPlan, Credit: cfg.Credit, MaxPull: cfg.MaxPull, Shadow: cfg.Shadow}, rand.New(rand.NewPCG(cfg.Seed, 0xc0c1)))
	if err != nil {
		return nil, 0, fmt.Errorf("demo: %w", err)
	}
	if _, err := statefile.Load(core, path); err != nil {
		return nil, 0, fmt.Errorf("demo: %w", err)
	}
	return core, pulls(core.Status()), nil
}

func patternsOf(phases []Phase, iterations int) []workload.Pattern {
	var ps []workload.Pattern
	for range iterations {
		for _, p := range phases {
			ps = append(ps, p.Pattern)
		}
	}
	return ps
}

func (c Config) simConfig(iterations int, window time.Duration) sim.Config {
	if window == 0 {
		window = sched.DefaultWindow
	}
	// The simulator's guard against a run that never ends (24 h of
	// virtual time by default) grows with the iterations: a long demo
	// legitimately runs for days of virtual time (10,000 iterations of
	// the default workload: about 4 days).
	maxTime := max(sim.DefaultMaxTime, time.Duration(iterations)*time.Hour)
	return sim.Config{Patterns: patternsOf(c.Phases(), iterations), IONodes: c.Nodes, Servers: c.Servers,
		Scheduler: c.schedulerName(), Window: window, Seed: c.Seed, ServerTimeScale: c.ServerTimeScale, ReadAheadBytes: c.ServerReadAhead, Elevator: c.ServerElevator,
		AlignedWindows: !c.ReferenceWindows, MaxTime: maxTime, Interval: c.Interval, DispatchDelay: c.SimDispatchDelay}
}

// runSim runs the experiment in the simulator, with the Council core
// deciding the window every simulated second.
func runSim(ctx context.Context, cfg Config, rec *record.Recorder) error {
	statePath := filepath.Join(cfg.StateDir, SimStateFile)
	core, carried, err := newCore(cfg, statePath)
	if err != nil {
		return err
	}
	rec.UpdateMeta(func(m *record.Meta) {
		m.CarriedOver = carried
		m.DecisionLog = filepath.Join(cfg.StateDir, SimDecisionLog)
		m.Policy = core.Config().Policy
		m.Notes = append(m.Notes, "Simulated platform: the deterministic simulator's model of the papers' cluster (hard disks, 10 Gb/s network, TWINS on every I/O node).", learningNote(cfg))
	})
	if carried > 0 {
		rec.AddEvent(0, "info", fmt.Sprintf("learning continues from %s: %d bandit pulls carried over", statePath, carried))
	}
	logf, err := os.Create(filepath.Join(cfg.StateDir, SimDecisionLog))
	if err != nil {
		return fmt.Errorf("demo: decision log: %w", err)
	}
	logw := bufio.NewWriter(logf)
	defer logf.Close()
	trk := newTracker(rec, logw, sched.Windows, cfg.Static)

	// The static-window comparison runs alongside, in its own goroutine.
	var wg sync.WaitGroup
	var static []record.StaticResult
	var staticErr error
	if cfg.Compare > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			static, staticErr = staticSim(ctx, cfg)
		}()
	}

	scfg := cfg.simConfig(cfg.Iterations, cfg.Static)
	total := len(scfg.Patterns)
	s, err := sim.New(scfg, cfg.Logger)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	phases := cfg.Phases()
	names := func(i int) string { return phases[i%len(phases)].Name }
	cur := 0
	rec.AddEvent(0, "phase", "start "+names(0))
	wall := time.Now()
	loop := virtual.New(core)
	var runErr error
	for {
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		obs, done, err := s.Step()
		if err != nil {
			runErr = fmt.Errorf("demo: simulator: %w", err)
			break
		}
		now := s.Now()
		t := now.Seconds()
		if len(obs) > 0 {
			d, ok, err := loop.Interval(now, obs)
			if err != nil {
				cfg.Logger.Warn("observation rejected", "err", err)
			}
			if ok {
				trk.decision(t, names(cur), d, cfg.Nodes)
				if cfg.Static == 0 && !done {
					if err := virtual.Apply(s, d); err != nil {
						return fmt.Errorf("demo: %w", err)
					}
				}
			}
			if cfg.Static == 0 {
				rec.SetEstimates(estimates(core.Status()))
			}
		}
		res := s.Result()
		for ; cur < len(res.Phases); cur++ {
			p := phases[cur%len(phases)]
			start := t - res.Phases[cur].Seconds()
			rec.AddIteration(record.Iteration{Phase: p.Name, Workload: p.Pattern.String(), Start: start,
				Seconds: res.Phases[cur].Seconds(), Bytes: p.Pattern.BytesPerProcess() * int64(p.Pattern.Processes)})
			if cur+1 < total {
				rec.AddEvent(t, "phase", fmt.Sprintf("%s done in %.2f s; start %s", p.Name, res.Phases[cur].Seconds(), names(cur+1)))
			}
		}
		rec.SetElapsed(t)
		if done {
			break
		}
		if cfg.Duration > 0 && now >= cfg.Duration {
			rec.AddEvent(t, "info", fmt.Sprintf("stopped at --duration %v of virtual time", cfg.Duration))
			break
		}
		if cfg.Pace > 0 {
			target := wall.Add(time.Duration(t / cfg.Pace * float64(time.Second)))
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(target)):
			}
		}
	}
	if err := logw.Flush(); err != nil && runErr == nil {
		runErr = fmt.Errorf("demo: decision log: %w", err)
	}
	if trk.err != nil && runErr == nil {
		runErr = fmt.Errorf("demo: decision log: %w", trk.err)
	}
	if cfg.Static == 0 {
		if err := statefile.Save(core, statePath); err != nil && runErr == nil {
			runErr = fmt.Errorf("demo: %w", err)
		}
		rec.AddEvent(rec.Snapshot().Elapsed, "info", "learned state saved to "+statePath)
	}
	wg.Wait()
	if staticErr == nil && len(static) > 0 {
		rec.SetStatic(static)
	} else if staticErr != nil && !errors.Is(staticErr, context.Canceled) {
		rec.AddEvent(rec.Snapshot().Elapsed, "error", "static comparison: "+staticErr.Error())
	}
	if errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}

// staticSim runs Compare iterations of the experiment in the simulator under
// each TWINS window, without learning.
func staticSim(ctx context.Context, cfg Config) ([]record.StaticResult, error) {
	phases := cfg.Phases()
	out := make([]record.StaticResult, len(sched.Windows))
	for i, w := range sched.Windows {
		res, err := sim.Run(ctx, cfg.simConfig(cfg.Compare, w), sim.Hooks{})
		if err != nil {
			return nil, fmt.Errorf("window %v: %w", w, err)
		}
		sr := record.StaticResult{Window: w, Phases: map[string]float64{}}
		for k, m := range phaseMeans(res, len(phases)) {
			if m > 0 {
				sr.Phases[phases[k].Name] = m
				sr.Total += m
			}
		}
		out[i] = sr
	}
	return out, nil
}

// phaseMeans is the mean time in seconds of each of the n phases of an
// iteration over a simulated run of whole or partial iterations (0 for a
// phase that never ran).
func phaseMeans(res sim.Result, n int) []float64 {
	out := make([]float64, n)
	for i, ts := range simPhaseTimes(res, n) {
		out[i] = mean(ts)
	}
	return out
}
