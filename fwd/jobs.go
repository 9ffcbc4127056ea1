package fwd

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/qos"
)

// DefaultJobLabels is the most job ids the per-job metrics name; requests
// of later jobs are counted under the label "other".
const DefaultJobLabels = 32

// UnknownJob is the metrics label of requests without a job (a client that
// sends no job: one older than protocol version 5, or a process outside
// any batch job).
const UnknownJob = "unknown"

// maxBoundProcesses bounds the process-to-job bindings of one session.
const maxBoundProcesses = 1 << 16

// connJobs is a session's jobs: its default and its processes' own
// (fwdproto.OpJob).
type connJobs struct {
	mu     sync.Mutex
	def    string
	byProc map[uint32]string
}

// jobOf is the job of a request of process p.
func (j *connJobs) jobOf(p uint32) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if job, ok := j.byProc[p]; ok {
		return job
	}
	return j.def
}

// setJob answers a job request: it binds (or with job "", unbinds) a
// process or the session's default.
func (c *conn) setJob(m *fwdproto.Msg) {
	reply := &fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true}
	if m.Job != "" {
		if err := qos.ValidJob(m.Job); err != nil {
			reply.Code, reply.Err = fwdproto.CodeBadArgument, err.Error()
			c.send(reply, nil)
			return
		}
	}
	j := &c.jobs
	j.mu.Lock()
	switch {
	case m.Process == fwdproto.AllProcesses:
		j.def = m.Job
	case m.Job == "":
		delete(j.byProc, m.Process)
	case len(j.byProc) >= maxBoundProcesses && j.byProc[m.Process] == "":
		reply.Code, reply.Err = fwdproto.CodeBadArgument, fmt.Sprintf("more than %d processes bound to jobs on one session: unbind the processes that ended (job \"\")", maxBoundProcesses)
	default:
		if j.byProc == nil {
			j.byProc = map[uint32]string{}
		}
		j.byProc[m.Process] = m.Job
	}
	j.mu.Unlock()
	c.send(reply, nil)
}

// jobMetric is one job label's counters.
type jobMetric struct {
	bytes, reqs [2]prometheus.Counter // [0] read, [1] write
	latency     prometheus.Observer
}

// jobMetrics are the per-job metrics, over a bounded set of labels.
type jobMetrics struct {
	max     int
	bytes   *prometheus.CounterVec
	reqs    *prometheus.CounterVec
	latency *prometheus.HistogramVec

	mu     sync.Mutex
	labels map[string]*jobMetric // by job id ("" for requests without a job)
	other  *jobMetric
}

func newJobMetrics(reg prometheus.Registerer, max int) (*jobMetrics, error) {
	if max <= 0 {
		max = DefaultJobLabels
	}
	jm := &jobMetrics{
		max: max,
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_job_bytes_total",
			Help: fmt.Sprintf("Bytes read and written for clients, by job (the first %d job ids seen by name, later ones as \"other\", requests without a job as %q) and operation.", max, UnknownJob),
		}, []string{"job", "op"}),
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptio_fwd_job_requests_total",
			Help: "Client read and write requests answered, by job (labels as adaptio_fwd_job_bytes_total) and operation.",
		}, []string{"job", "op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adaptio_fwd_job_request_duration_seconds",
			Help:    "Client read and write latency from receipt to response, by job (labels as adaptio_fwd_job_bytes_total); QoS throttling included.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18),
		}, []string{"job"}),
		labels: map[string]*jobMetric{},
	}
	for _, c := range []prometheus.Collector{jm.bytes, jm.reqs, jm.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("fwd: job metrics: %w", err)
		}
	}
	jm.other = jm.metric("other")
	return jm, nil
}

func (jm *jobMetrics) metric(label string) *jobMetric {
	return &jobMetric{
		bytes:   [2]prometheus.Counter{jm.bytes.WithLabelValues(label, "read"), jm.bytes.WithLabelValues(label, "write")},
		reqs:    [2]prometheus.Counter{jm.reqs.WithLabelValues(label, "read"), jm.reqs.WithLabelValues(label, "write")},
		latency: jm.latency.WithLabelValues(label),
	}
}

// label is the metrics label of job.
func (jm *jobMetrics) label(job string) string {
	if job == "" {
		return UnknownJob
	}
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if _, ok := jm.labels[job]; ok || len(jm.labels) < jm.max {
		return job
	}
	return "other"
}

// of returns job's counters, naming a new job while fewer than max are.
func (jm *jobMetrics) of(job string) *jobMetric {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if m, ok := jm.labels[job]; ok {
		return m
	}
	if len(jm.labels) >= jm.max {
		return jm.other
	}
	l := job
	if l == "" {
		l = UnknownJob
	}
	m := jm.metric(l)
	jm.labels[job] = m
	return m
}

// observe counts one answered read or write of job.
func (jm *jobMetrics) observe(m *jobMetric, write bool, n int, took time.Duration) {
	i := 0
	if write {
		i = 1
	}
	m.bytes[i].Add(float64(n))
	m.reqs[i].Inc()
	m.latency.Observe(took.Seconds())
}

// ErrQoSOff is returned by SetQoSRules on a daemon started without QoS.
var ErrQoSOff = errors.New("fwd: the daemon runs without QoS (start it with Options.QoS)")

// initQoS puts the QoS gate in front of the scheduler when Options.QoS is
// set, and registers its metrics.
func (d *Daemon) initQoS(reg prometheus.Registerer) error {
	if !d.opts.QoS {
		return nil
	}
	g, err := qos.NewGate(qos.Config{Rules: d.opts.QoSRules, Fairness: d.opts.QoSFairness})
	if err != nil {
		return fmt.Errorf("fwd: %w", err)
	}
	d.q.node.SetGate(0, g, d.opts.QoSDepth)
	return reg.Register(&qosCollector{d: d})
}

// SetQoSRules replaces the QoS rules from now on (rules re-read by
// adaptio forward on SIGHUP). Requests queued by job stay queued and
// are classed by the new rules. It returns ErrQoSOff without QoS, and
// an error wrapping qos.ErrBadRule (nothing changed) for a bad rule.
func (d *Daemon) SetQoSRules(rules []qos.Rule) error {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	g := q.node.Gate()
	if g == nil {
		return ErrQoSOff
	}
	if err := g.SetRules(d.now(), rules); err != nil {
		return err
	}
	d.qosReloads++
	q.work.Broadcast() // uncapped requests may go at once
	return nil
}

// QoSRules returns the rules in force (nil without QoS).
func (d *Daemon) QoSRules() []qos.Rule {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	if g := d.q.node.Gate(); g != nil {
		return append([]qos.Rule(nil), g.Rules()...)
	}
	return nil
}

// QoSStats returns the gate's per-job counters (nil without QoS).
func (d *Daemon) QoSStats() []qos.JobStats {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	if g := d.q.node.Gate(); g != nil {
		return g.Stats()
	}
	return nil
}

// qosCollector exports the gate's per-job counters when scraped.
type qosCollector struct{ d *Daemon }

var (
	qosRulesDesc = prometheus.NewDesc("adaptio_qos_rules", "QoS rules in force (adaptio forward --qos-rules; re-read on SIGHUP).", nil, nil)
	qosLoadsDesc = prometheus.NewDesc("adaptio_qos_rule_reloads_total", "Times the QoS rules were replaced at run time.", nil, nil)
	qosRelDesc   = prometheus.NewDesc("adaptio_qos_released_bytes_total", "Bytes the QoS gate released to the scheduler, by job (labels as adaptio_fwd_job_bytes_total).", []string{"job"}, nil)
	qosThrDesc   = prometheus.NewDesc("adaptio_qos_throttled_seconds_total", "Time the head request of a job waited for its token bucket (a rate rule), by job.", []string{"job"}, nil)
	qosQueueDesc = prometheus.NewDesc("adaptio_qos_queued_requests", "Requests waiting in the QoS gate (for a token bucket, or for their turn on a saturated node), by job.", []string{"job"}, nil)
	qosWeightDsc = prometheus.NewDesc("adaptio_qos_job_weight", "Each job's weight under saturation (from the rules; 1 by default).", []string{"job"}, nil)
)

func (c *qosCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{qosRulesDesc, qosLoadsDesc, qosRelDesc, qosThrDesc, qosQueueDesc, qosWeightDsc} {
		ch <- d
	}
}

func (c *qosCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	d.q.mu.Lock()
	g := d.q.node.Gate()
	rules := len(g.Rules())
	stats := g.Stats()
	reloads := d.qosReloads
	d.q.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(qosRulesDesc, prometheus.GaugeValue, float64(rules))
	ch <- prometheus.MustNewConstMetric(qosLoadsDesc, prometheus.CounterValue, float64(reloads))
	type agg struct {
		rel, thr, queued, weight float64
	}
	byLabel := map[string]*agg{}
	var order []string
	for _, s := range stats {
		l := d.jobm.label(s.Job)
		a := byLabel[l]
		if a == nil {
			a = &agg{}
			byLabel[l] = a
			order = append(order, l)
		}
		a.rel += float64(s.ReleasedBytes)
		a.thr += s.ThrottledTime.Seconds()
		a.queued += float64(s.Queued)
		a.weight = max(a.weight, float64(s.Weight))
	}
	for _, l := range order {
		a := byLabel[l]
		ch <- prometheus.MustNewConstMetric(qosRelDesc, prometheus.CounterValue, a.rel, l)
		ch <- prometheus.MustNewConstMetric(qosThrDesc, prometheus.CounterValue, a.thr, l)
		ch <- prometheus.MustNewConstMetric(qosQueueDesc, prometheus.GaugeValue, a.queued, l)
		ch <- prometheus.MustNewConstMetric(qosWeightDsc, prometheus.GaugeValue, a.weight, l)
	}
}
