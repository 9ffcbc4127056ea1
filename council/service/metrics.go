package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
)

type metrics struct {
	reports       prometheus.Counter
	rejected      *prometheus.CounterVec
	rounds        *prometheus.CounterVec
	explorations  prometheus.Counter
	persisted     prometheus.Counter
	persistErrors prometheus.Counter
	window        prometheus.Gauge
	round         prometheus.Gauge
	known         prometheus.Gauge
	roundNodes    prometheus.Histogram
	proc          prometheus.Histogram
	// The group's scheduling algorithm (council.Decision.Select).
	groupDecisions *prometheus.CounterVec
	groupChanges   prometheus.Counter
	groupSched     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reports: prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_council_reports_total",
			Help: "Reports accepted from Announcers."}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_council_rejected_messages_total",
			Help: "Report messages rejected, by reason: oversized, malformed, version, invalid, subject, stale, other (decoding and the core); " +
				"unknown-node (not registered), unsigned, signature, key (not the node's key), rate (too many reports), " +
				"interval, bandwidth, inconsistent (bandwidth is not bytes over the interval), bytes, requests (beyond a node's physical bounds), jobs (too many, an id too long, or more than their node)."}, []string{"reason"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_council_rounds_total",
			Help: "Rounds closed, by reason (all: every known node reported; deadline)."}, []string{"reason"}),
		explorations: prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_council_explorations_total",
			Help: "Rounds whose window was chosen to explore."}),
		persisted: prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_council_state_writes_total",
			Help: "Learned-state snapshots written to JetStream KV."}),
		persistErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_council_state_write_errors_total",
			Help: "Failed learned-state writes to JetStream KV."}),
		window: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_council_window_seconds",
			Help: "TWINS window decided last."}),
		round: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_council_round",
			Help: "Rounds closed since learning began (survives restarts)."}),
		known: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_council_known_nodes",
			Help: "I/O nodes the Council waits for in a round."}),
		roundNodes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "adaptio_council_round_nodes",
			Help: "I/O nodes that reported in a round.", Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
		proc: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "adaptio_council_round_processing_seconds",
			Help:    "Time the Council spent handling one round's reports (decode, detect, learn, decide).",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)}),
		groupDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_council_selection_decisions_total",
			Help: "Decisions naming the scheduling algorithm of the I/O nodes that select theirs with the group, by reason: explore, settled (the one in force stays), estimates (another is estimated faster), draw; " +
				"first (a node began to follow), transition (a following node ran another algorithm), missing (a following node did not report), idle (no bytes): the round taught nothing."}, []string{"reason"}),
		groupChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "adaptio_council_scheduler_changes_total",
			Help: "Changes of the group's scheduling algorithm."}),
		groupSched: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "adaptio_council_selected_scheduler",
			Help: "1 for the scheduling algorithm the Council chose for the group last, 0 for the others (all 0: no node follows)."}, []string{"scheduler"}),
	}
	for _, c := range []prometheus.Collector{m.reports, m.rejected, m.rounds, m.explorations, m.persisted,
		m.persistErrors, m.window, m.round, m.known, m.roundNodes, m.proc, m.groupDecisions, m.groupChanges, m.groupSched} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range append(append(append([]string(nil), councilmsg.Reasons...), "stale"), admitReasons...) {
		m.rejected.WithLabelValues(r)
	}
	for _, r := range []string{"all", "deadline"} {
		m.rounds.WithLabelValues(r)
	}
	for _, r := range council.GroupReasons {
		m.groupDecisions.WithLabelValues(r)
	}
	return m, nil
}
