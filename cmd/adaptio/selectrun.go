package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/selection"
)

// selectSchedulers parses --select-from.
func selectSchedulers(from string) ([]string, error) {
	names := strings.Split(from, ",")
	for _, n := range names {
		if n == "dynamic" || !slices.Contains(sched.Names(), n) {
			return nil, fmt.Errorf("--select-from: unknown scheduler %q (known: %v)", n, sched.Names())
		}
	}
	return names, nil
}

// runSelection lets AGIOS's armed bandit choose the daemon's scheduling
// algorithm every period until ctx ends: each period's acknowledged bytes
// are the reward of the algorithm in force (an idle period changes
// nothing). The algorithm in force is exported as
// adaptio_fwd_selected_scheduler{scheduler} (1 for the one in force) and
// the changes as adaptio_fwd_scheduler_changes_total.
func runSelection(ctx context.Context, d *fwd.Daemon, dr *selection.Driver, period time.Duration, rng *rand.Rand, log *slog.Logger, reg prometheus.Registerer, names []string) {
	selected := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "adaptio_fwd_selected_scheduler",
		Help: "1 for the scheduling algorithm dynamic selection has in force, 0 for the others"}, []string{"scheduler"})
	changes := prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_fwd_scheduler_changes_total",
		Help: "changes of scheduling algorithm made by dynamic selection"})
	if reg != nil {
		reg.MustRegister(selected, changes)
	}
	show := func(cur string) {
		for _, n := range names {
			v := 0.0
			if n == cur {
				v = 1
			}
			selected.WithLabelValues(n).Set(v)
		}
	}
	show(dr.Current(0))
	start := time.Now()
	last := d.BytesTotal()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			total := d.BytesTotal()
			bytes := total - last
			last = total
			served := int64(0) // the daemon counts bytes, not requests: served or not
			if bytes > 0 {
				served = 1
			}
			next, change := dr.Interval(0, now.Sub(start), selection.Figures{Bytes: bytes, Served: served}, rng)
			if !change {
				continue
			}
			if err := d.SwitchScheduler(next); err != nil {
				log.Warn("dynamic selection: switching scheduler", "to", next, "err", err)
				continue
			}
			changes.Inc()
			show(next)
			log.Info("dynamic selection", "scheduler", next, "bytes_last_period", bytes)
		}
	}
}
