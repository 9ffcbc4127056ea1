package fwd

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

type metrics struct {
	window prometheus.Gauge
	// Bytes acknowledged, read and written: plain counters exported as
	// adaptio_fwd_bytes_total, also read by the Announcer's interval
	// closes (one atomic add per request serves both).
	readBytes  atomic.Uint64
	writeBytes atomic.Uint64
	latency    *prometheus.HistogramVec
	errors     *prometheus.CounterVec
	batches    prometheus.Counter
	bandwidth  prometheus.Gauge
	conns      prometheus.Gauge
	badFrames  prometheus.Counter
	refused    *prometheus.CounterVec // sessions refused, by reason (auth.go)
	received   *prometheus.CounterVec
	viaFrame   prometheus.Counter // requests received as frames
	viaRing    prometheus.Counter // requests taken from submission rings
	wakeups    *prometheus.CounterVec
	doorbells  prometheus.Counter       // wake frames received
	wakes      prometheus.Counter       // wake frames sent
	lat        [256]prometheus.Observer // by fwdproto.Op
	wake       prometheus.Histogram     // idle workers' wake-up latency (WakeStats)
	// knobChanges counts changes of the dispatch knobs (knobs.go).
	knobChanges *prometheus.CounterVec
}

// newMetrics registers the daemon's metrics; depth gives the requests
// queued for a data server, read when the metrics are scraped.
func newMetrics(reg prometheus.Registerer, servers int, depth func(server int) float64) (*metrics, error) {
	m := &metrics{
		window: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "adaptio_fwd_window_seconds", Help: "TWINS time window in force (0 for other schedulers).",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "adaptio_fwd_request_duration_seconds", Help: "Client request latency from receipt to response, by operation.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18),
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_request_errors_total", Help: "Client requests answered with an error, by operation.",
		}, []string{"op"}),
		bandwidth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "adaptio_fwd_interval_bandwidth_bytes_per_second", Help: "Bandwidth of the last closed observation interval (bytes acknowledged / interval), as reported to the Council.",
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adaptio_fwd_batches_total", Help: "Batches executed on the backend.",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "adaptio_fwd_connections", Help: "Open client connections.",
		}),
		badFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "adaptio_fwd_bad_frames_total", Help: "Malformed or oversized frames (each closes its connection).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_sessions_refused_total", Help: "Client sessions refused and closed, by reason: unauthenticated (a request before authentication), bad_proof (another token), protocol (an auth step out of order or an unknown auth version), tls (the TLS handshake failed: no or an unverified client certificate).",
		}, []string{"reason"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_requests_received_total", Help: "Client requests received, by path: a frame on the socket, or an entry of a submission ring in shared memory.",
		}, []string{"path"}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_ring_wakeups_total", Help: "Wake-up frames of the ring transport: doorbells received (the ring poller slept) and wakes sent (a client's callers slept).",
		}, []string{"direction"}),
		wake: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "adaptio_fwd_worker_wake_seconds", Help: "How late an idle worker starts after requests are queued for it (the host's scheduling latency; requests arriving meanwhile are dispatched together).",
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 16),
		}),
	}
	m.viaFrame, m.viaRing = m.received.WithLabelValues("frame"), m.received.WithLabelValues("ring")
	for _, r := range refusals {
		m.refused.WithLabelValues(r)
	}
	m.doorbells, m.wakes = m.wakeups.WithLabelValues("received"), m.wakeups.WithLabelValues("sent")
	bytes := func(op string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "adaptio_fwd_bytes_total", Help: "Bytes acknowledged to clients, by operation (rate() gives bandwidth).",
			ConstLabels: prometheus.Labels{"op": op},
		}, func() float64 { return float64(v.Load()) })
	}
	collectors := []prometheus.Collector{bytes("read", &m.readBytes), bytes("write", &m.writeBytes), m.window, m.bandwidth, m.latency, m.errors, m.batches, m.conns, m.badFrames, m.refused, m.received, m.wakeups, m.wake}
	for s := 0; s < servers; s++ {
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "adaptio_fwd_queue_depth", Help: "Requests queued in the scheduler per PFS data server.",
			ConstLabels: prometheus.Labels{"server": strconv.Itoa(s)},
		}, func() float64 { return depth(s) }))
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for op := fwdproto.OpHello; op.Valid(); op++ {
		m.lat[op] = m.latency.WithLabelValues(op.String())
	}
	return m, nil
}

// observe records a request of op that started at start and ended at end.
func (m *metrics) observe(op fwdproto.Op, start, end time.Time, err error) {
	if op.Valid() {
		m.lat[op].Observe(end.Sub(start).Seconds())
	}
	if err != nil {
		m.errors.WithLabelValues(op.String()).Inc()
	}
}

func (m *metrics) bytes(write bool, n int) {
	if write {
		m.writeBytes.Add(uint64(n))
	} else {
		m.readBytes.Add(uint64(n))
	}
}

// bytesTotal is the bytes acknowledged so far, read and written.
func (m *metrics) bytesTotal() int64 { return int64(m.readBytes.Load() + m.writeBytes.Load()) }
