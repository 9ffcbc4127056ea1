package announce

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reports, dropped, decisions, badDecisions, applyErrors prometheus.Counter
	window, connected                                      prometheus.Gauge
	latency                                                prometheus.Histogram
	rejected                                               *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, node int) (*metrics, error) {
	l := prometheus.Labels{"node": strconv.Itoa(node)}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l})
	}
	m := &metrics{
		reports:      counter("adaptio_announce_reports_total", "Reports sent to the Council."),
		dropped:      counter("adaptio_announce_dropped_reports_total", "Intervals not reported (disconnected or invalid observation)."),
		decisions:    counter("adaptio_announce_decisions_total", "Council decisions received and applied."),
		badDecisions: counter("adaptio_announce_bad_decisions_total", "Decision messages that failed to decode."),
		applyErrors:  counter("adaptio_announce_apply_errors_total", "Decisions the Applier refused."),
		window: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_announce_window_seconds",
			Help: "TWINS window in force.", ConstLabels: l}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_announce_connected",
			Help: "1 when connected to the Council's NATS server.", ConstLabels: l}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "adaptio_announce_decision_latency_seconds",
			Help:    "Time from sending a report to receiving the round's decision.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 2, 16), ConstLabels: l}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_announce_decisions_rejected_total",
			Help: "Decisions refused, by reason: unsigned, signature (does not verify), key (not the Council's), " +
				"unstamped (no epoch and time, with a keyring), stale (older than the freshness bound), " +
				"future (beyond the clock-skew allowance), replay (round not above the last applied), " +
				"jump (round further ahead than a Council could have gone), other.",
			ConstLabels: l}, []string{"reason"}),
	}
	for _, r := range RejectReasons {
		m.rejected.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.reports, m.dropped, m.decisions, m.badDecisions, m.applyErrors, m.window, m.connected, m.latency, m.rejected} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
