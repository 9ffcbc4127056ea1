package lustre

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/knob"
	"github.com/adaptio/adaptio/tune/tunerun"
)

// LustreAutoConfig configures NewLustreAuto.
type LustreAutoConfig struct {
	Lustre   Lustre
	Interval time.Duration // one decision per interval (default 10 s, tune.IOPathTune's)
	PageSize int64         // bytes per client page (default 4096)
	// DirtyGrowth is IOPathTune's contention threshold (Config.DirtyGrowth;
	// default 0.2).
	DirtyGrowth float64
	Log         *slog.Logger          // nil: discard
	Registerer  prometheus.Registerer // nil: no metrics
}

// LustreAuto runs IOPathTune against a Lustre client's OSC targets: each
// interval (Tick) it reads every target's rpc_stats and parameters, gives
// the heuristic the client's observation (summed over the targets) and
// writes its moves to every target at once, all or nothing (Lustre.SetAll),
// logging each target's change with its reason. It is not safe for
// concurrent use: one goroutine ticks it (RunLustre).
type LustreAuto struct {
	cfg     LustreAutoConfig
	log     *slog.Logger
	targets []string
	start   []LustreWrite // the values found at start
	tn      *tune.IOPathTune
	knobs   []knob.Knob
	// per target, the last counts read, to take differences (a target
	// whose counts fall was cleared: its counts are all new)
	last   map[string]rpcTotals
	total  knob.Sample
	have   bool
	prev   knob.Sample
	prevAt time.Duration
	m      *lustreMetrics
}

type rpcTotals struct{ pages, rpcs int64 }

type lustreMetrics struct {
	param     *prometheus.GaugeVec
	changes   *prometheus.CounterVec
	failures  *prometheus.CounterVec
	bandwidth prometheus.Gauge
	pending   prometheus.Gauge
}

// NewLustreAuto reads every target's knobs and starts the heuristic from
// them. It refuses to start if a knob cannot be read or lies outside
// Lustre's range; targets whose values differ are brought to the first
// target's values at the first move.
func NewLustreAuto(cfg LustreAutoConfig) (*LustreAuto, error) {
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = 4096
	}
	if cfg.Interval < 0 || cfg.PageSize < 0 || cfg.DirtyGrowth < 0 {
		return nil, fmt.Errorf("%w: interval %v, page size %d, dirty growth %v", tune.ErrConfig, cfg.Interval, cfg.PageSize, cfg.DirtyGrowth)
	}
	a := &LustreAuto{cfg: cfg, log: cfg.Log, last: map[string]rpcTotals{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if a.targets, err = cfg.Lustre.Targets(); err != nil {
		return nil, err
	}
	a.knobs = tune.LustreKnobs()
	for ti, tg := range a.targets {
		for ki := range a.knobs {
			k := &a.knobs[ki]
			v, err := cfg.Lustre.Get(tg, k.Name)
			if err != nil {
				return nil, fmt.Errorf("%w: cannot tune without it", err)
			}
			if err := tune.CheckLustre(k.Name, v); err != nil {
				return nil, fmt.Errorf("%w: %s holds it; set it within range first (adaptio tune lustre --set)", err, tg)
			}
			a.start = append(a.start, LustreWrite{Target: tg, Name: k.Name, Value: v})
			if ti == 0 {
				k.Value = v
			} else if v != k.Value {
				a.log.Warn("lustre: targets differ; the first move sets them all", "target", tg, "parameter", k.Name, "value", v, "first_target_value", k.Value)
			}
		}
	}
	if err := a.restart(); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		a.m = &lustreMetrics{
			param: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "adaptio_lustre_param",
				Help: "Value in force of an OSC parameter (max_pages_per_rpc in pages, max_rpcs_in_flight in RPCs), as last read or written."}, []string{"target", "param"}),
			changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_lustre_changes_total",
				Help: "Parameter changes the tuner made (each applied to every target), by parameter and reason."}, []string{"param", "reason"}),
			failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_lustre_set_failures_total",
				Help: "Changes Lustre refused (rolled back on every target), by parameter."}, []string{"param"}),
			bandwidth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_lustre_bandwidth_bytes_per_second",
				Help: "Bytes per second the client's RPCs moved over the last interval, from rpc_stats (each RPC counted at its pages-per-RPC bucket)."}),
			pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_lustre_pending_write_bytes",
				Help: "Pages waiting to be written, over every target, in bytes, at the last interval's end."}),
		}
		for _, c := range []prometheus.Collector{a.m.param, a.m.changes, a.m.failures, a.m.bandwidth, a.m.pending} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("tune: registering Lustre metrics: %w", err)
			}
		}
		for _, w := range a.start {
			a.m.param.WithLabelValues(w.Target, w.Name).Set(float64(w.Value))
		}
	}
	return a, nil
}

// restart starts the heuristic afresh from a.knobs.
func (a *LustreAuto) restart() error {
	tn, err := tune.NewIOPathTune(tune.Config{Knobs: a.knobs, Interval: a.cfg.Interval, DirtyGrowth: a.cfg.DirtyGrowth})
	if err != nil {
		return err
	}
	a.tn = tn
	return nil
}

// Targets lists the targets tuned.
func (a *LustreAuto) Targets() []string { return slices.Clone(a.targets) }

// Knobs returns the knobs at the values in force.
func (a *LustreAuto) Knobs() []knob.Knob { return slices.Clone(a.knobs) }

// sample sums the targets' rpc_stats into the running totals.
func (a *LustreAuto) sample() (knob.Sample, error) {
	var pending int64
	for _, tg := range a.targets {
		st, _, err := a.cfg.Lustre.ReadRPCStats(tg)
		if err != nil {
			return knob.Sample{}, err
		}
		rp, wp := st.Pages()
		rr, wr := st.Count()
		cur := rpcTotals{pages: rp + wp, rpcs: rr + wr}
		last := a.last[tg]
		d := rpcTotals{cur.pages - last.pages, cur.rpcs - last.rpcs}
		if d.pages < 0 || d.rpcs < 0 {
			d = cur // cleared since the last read
		}
		a.last[tg] = cur
		a.total.Bytes += d.pages * a.cfg.PageSize
		a.total.Requests += d.rpcs
		pending += int64(st.PendingWritePages) * a.cfg.PageSize
	}
	s := a.total
	s.Queued = pending
	s.Entered = s.Bytes + s.Queued // accepted: moved, or waiting
	return s, nil
}

// Tick is the end of the interval at now (time since the start, on the
// interval's schedule: Tick): it samples, lets the heuristic decide and
// applies its moves. The first tick only samples; an interval in which
// nothing moved or waited is not shown to the heuristic. A target whose
// rpc_stats cannot be read makes the interval skipped, and logged. A move
// Lustre refuses is rolled back on every target (Lustre.SetAll) and
// logged; the heuristic then starts afresh from the values in force, with
// the knob's bound lowered (or raised) to what Lustre took, so it does
// not ask again.
func (a *LustreAuto) Tick(now time.Duration) {
	cur, err := a.sample()
	if err != nil {
		a.log.Warn("lustre: interval skipped", "err", err)
		a.have = false
		return
	}
	if !a.have {
		a.prev, a.prevAt, a.have = cur, now, true
		return
	}
	dt := now - a.prevAt
	if dt <= 0 {
		dt = a.cfg.Interval
	}
	o := tune.Observe(a.prev, cur, dt)
	idle := cur.Bytes == a.prev.Bytes && cur.Queued == 0
	a.prev, a.prevAt = cur, now
	if a.m != nil {
		a.m.bandwidth.Set(o.Bandwidth)
		a.m.pending.Set(float64(o.DirtyBytes))
	}
	if idle {
		return
	}
	for _, c := range a.tn.Decide(now, o) {
		a.apply(c, o)
	}
}

// apply writes one move to every target.
func (a *LustreAuto) apply(c tune.Change, o tune.Observation) {
	ws := make([]LustreWrite, 0, len(a.targets))
	for _, tg := range a.targets {
		ws = append(ws, LustreWrite{Target: tg, Name: c.Knob, Value: c.Value})
	}
	ki := slices.IndexFunc(a.knobs, func(k knob.Knob) bool { return k.Name == c.Knob })
	changed, err := a.cfg.Lustre.SetAll(ws)
	if err != nil {
		a.refused(ki, c, err)
		return
	}
	a.knobs[ki].Value = c.Value
	for _, ch := range changed {
		a.log.Info("lustre: parameter changed", "target", ch.Target, "parameter", ch.Name, "old", ch.Old, "new", ch.New,
			"reason", string(c.Reason), "bandwidth_bytes_per_second", int64(o.Bandwidth), "pending_write_bytes", o.DirtyBytes)
		if a.m != nil {
			a.m.param.WithLabelValues(ch.Target, ch.Name).Set(float64(ch.New))
		}
	}
	if a.m != nil && len(changed) > 0 {
		a.m.changes.WithLabelValues(c.Knob, string(c.Reason)).Inc()
	}
}

// refused handles a move Lustre did not take.
func (a *LustreAuto) refused(ki int, c tune.Change, err error) {
	k := &a.knobs[ki]
	if c.Value > k.Value {
		k.Max = k.Value
	} else {
		k.Min = k.Value
	}
	a.log.Warn("lustre: change refused; the heuristic restarts from the values in force",
		"parameter", c.Knob, "old", k.Value, "new", c.Value, "reason", string(c.Reason), "range_now", fmt.Sprintf("[%d, %d]", k.Min, k.Max), "err", err)
	if a.m != nil {
		a.m.failures.WithLabelValues(c.Knob).Inc()
	}
	var se *SetError
	if errors.As(err, &se) && len(se.Stuck) > 0 {
		a.log.Error("lustre: targets left with different values", "err", err)
	}
	if rerr := a.restart(); rerr != nil {
		a.log.Error("lustre: cannot restart the heuristic", "err", rerr)
	}
}

// Restore puts back, on every target, the values found at start (all or
// nothing) and logs each.
func (a *LustreAuto) Restore() error {
	changed, err := a.cfg.Lustre.SetAll(a.start)
	if err != nil {
		return fmt.Errorf("tune: restoring the values found at start: %w", err)
	}
	for _, ch := range changed {
		a.log.Info("lustre: parameter restored", "target", ch.Target, "parameter", ch.Name, "old", ch.Old, "new", ch.New, "reason", "restore")
		if a.m != nil {
			a.m.param.WithLabelValues(ch.Target, ch.Name).Set(float64(ch.New))
		}
	}
	return nil
}

// Start describes the values found at start ("T max_pages_per_rpc=256, ...").
func (a *LustreAuto) Start() string {
	var parts []string
	for _, w := range a.start {
		parts = append(parts, fmt.Sprintf("%s %s=%d", w.Target, w.Name, w.Value))
	}
	return strings.Join(parts, ", ")
}

// RunLustre ticks a every interval until ctx ends; then, if restore, it
// puts back the values found at start (else it leaves the values in
// force). It returns nil when ctx ended and the restore, if asked, worked.
func RunLustre(ctx context.Context, a *LustreAuto, restore bool) error {
	start := time.Now()
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	a.Tick(0)
	for {
		select {
		case <-ctx.Done():
			if restore {
				return a.Restore()
			}
			a.log.Info("lustre: stopped; values left in force", "knobs", fmt.Sprint(a.knobs))
			return nil
		case at := <-t.C:
			a.Tick(tunerun.Tick(at, start, a.cfg.Interval))
		}
	}
}
