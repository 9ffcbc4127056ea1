package pfs

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type serverMetrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector
}

// newServerMetrics exports a server's counters, labelled with its index.
func newServerMetrics(reg prometheus.Registerer, id int, s *Server) *serverMetrics {
	labels := prometheus.Labels{"server": strconv.Itoa(id)}
	m := &serverMetrics{reg: reg}
	add := func(name, help string, f func() float64) {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, f)
		if err := reg.Register(c); err == nil {
			m.collectors = append(m.collectors, c)
		}
	}
	add("adaptio_pfs_requests_total", "Requests served by the emulated PFS data server.",
		func() float64 { return float64(s.requests.Load()) })
	add("adaptio_pfs_read_bytes_total", "Bytes read from the emulated PFS data server.",
		func() float64 { return float64(s.readBytes.Load()) })
	add("adaptio_pfs_written_bytes_total", "Bytes written to the emulated PFS data server.",
		func() float64 { return float64(s.writeBytes.Load()) })
	add("adaptio_pfs_busy_seconds_total", "Modelled device time of the emulated PFS data server.",
		func() float64 { return float64(s.busy.Load()) / 1e9 })
	return m
}

func (m *serverMetrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
