package service

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
)

// Defaults of Admission.
const (
	// DefaultMaxBandwidth is the most bytes per second one I/O node is
	// believed to move: 1 TB/s, five times a node with eight 200 Gb/s
	// links. A report beyond it is a lie or a fault.
	DefaultMaxBandwidth = 1e12
	// DefaultMaxRequestRate is the most requests per second one I/O node
	// is believed to receive (100 million).
	DefaultMaxRequestRate = 1e8
	// DefaultMaxInterval bounds a report's interval when the Announcers'
	// interval is not configured.
	DefaultMaxInterval = time.Minute
	// IntervalFactor: with Admission.Interval set, a report's interval may
	// be up to this many times it (a daemon that stalled); shorter ones
	// are legitimate (an interval cut by a decision or a clock-aligned
	// tick), and their bytes are bounded by the bandwidth ceiling.
	IntervalFactor = 4
	// DefaultRate and DefaultBurst are the reports per second one node may
	// send, and in a burst, when the interval is not configured; with
	// Admission.Interval set, the defaults are 4 per interval and a burst
	// of 8.
	DefaultRate  = 100
	DefaultBurst = 200
)

// Admission bounds the reports that reach learning. Zero fields take the
// defaults.
type Admission struct {
	// Interval is the Announcers' report interval ("adaptio forward
	// --interval"; 0: not known). It bounds a report's interval (at most
	// IntervalFactor times it; DefaultMaxInterval when not known) and sets
	// the default rate.
	Interval time.Duration
	// MaxBandwidth is one I/O node's bandwidth ceiling in bytes per second
	// (default DefaultMaxBandwidth): reported bandwidth, bytes over the
	// interval and the majority operation's bytes over its span must stay
	// under it.
	MaxBandwidth float64
	// MaxRequestRate is one I/O node's ceiling of requests per second
	// (default DefaultMaxRequestRate).
	MaxRequestRate float64
	// Rate and Burst are a token bucket per node: reports per second, and
	// at most Burst at once (defaults: see DefaultRate).
	Rate  float64
	Burst float64
	// MaxJobs is the most jobs a report may list (default and at most
	// councilmsg.MaxJobs), MaxJobID the longest job id (default and at
	// most councilmsg.MaxJobID). A report beyond either, or whose jobs
	// together claim more bytes, requests or operation bytes than its
	// node, is refused as "jobs".
	MaxJobs  int
	MaxJobID int
}

func (a Admission) withDefaults() Admission {
	if a.MaxBandwidth <= 0 {
		a.MaxBandwidth = DefaultMaxBandwidth
	}
	if a.MaxRequestRate <= 0 {
		a.MaxRequestRate = DefaultMaxRequestRate
	}
	if a.Rate <= 0 {
		a.Rate = DefaultRate
		if a.Interval > 0 {
			a.Rate = 4 / a.Interval.Seconds()
		}
	}
	if a.Burst <= 0 {
		a.Burst = DefaultBurst
		if a.Interval > 0 {
			a.Burst = 8
		}
	}
	if a.MaxJobs <= 0 || a.MaxJobs > councilmsg.MaxJobs {
		a.MaxJobs = councilmsg.MaxJobs
	}
	if a.MaxJobID <= 0 || a.MaxJobID > councilmsg.MaxJobID {
		a.MaxJobID = councilmsg.MaxJobID
	}
	return a
}

func (a Admission) validate() error {
	switch {
	case a.Interval < 0:
		return fmt.Errorf("%w: admission interval %v", ErrBadOptions, a.Interval)
	case math.IsNaN(a.MaxBandwidth) || math.IsInf(a.MaxBandwidth, 0) || a.MaxBandwidth < 0:
		return fmt.Errorf("%w: bandwidth ceiling %v", ErrBadOptions, a.MaxBandwidth)
	case math.IsNaN(a.MaxRequestRate) || math.IsInf(a.MaxRequestRate, 0) || a.MaxRequestRate < 0:
		return fmt.Errorf("%w: request-rate ceiling %v", ErrBadOptions, a.MaxRequestRate)
	case math.IsNaN(a.Rate) || a.Rate < 0 || math.IsNaN(a.Burst) || a.Burst < 0:
		return fmt.Errorf("%w: report rate %v burst %v", ErrBadOptions, a.Rate, a.Burst)
	case a.MaxJobs < 0 || a.MaxJobs > councilmsg.MaxJobs || a.MaxJobID < 0 || a.MaxJobID > councilmsg.MaxJobID:
		return fmt.Errorf("%w: %d jobs of ids up to %d characters per report, want at most %d and %d", ErrBadOptions, a.MaxJobs, a.MaxJobID, councilmsg.MaxJobs, councilmsg.MaxJobID)
	}
	return nil
}

// ErrRejected is wrapped by every admission error; rejectReason returns
// its metric label.
var ErrRejected = errors.New("council/service: report rejected")

type rejection struct {
	reason string
	msg    string
}

func (r *rejection) Error() string { return "council/service: report rejected: " + r.msg }
func (r *rejection) Unwrap() error { return ErrRejected }

func reject(reason, format string, args ...any) error {
	return &rejection{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// admitReasons are the labels of admission rejections.
var admitReasons = []string{"unknown-node", "unsigned", "signature", "key", "rate", "interval", "bandwidth", "inconsistent", "bytes", "requests", "jobs"}

// rejectReason returns the metric label of an admission or keyring error.
func rejectReason(err error) string {
	var r *rejection
	if errors.As(err, &r) {
		return r.reason
	}
	return keyring.Reason(err)
}

// tokenBucket is a rate limit with the time passed in: tokens refill at
// rate per second up to burst; each report takes one.
type tokenBucket struct {
	tokens float64
	last   time.Duration
}

func (b *tokenBucket) allow(now time.Duration, rate, burst float64) bool {
	if el := now - b.last; el > 0 {
		b.tokens = math.Min(burst, b.tokens+el.Seconds()*rate)
	}
	b.last = max(b.last, now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// admitter decides which reports reach learning: registered nodes only,
// each within its rate and the physical bounds of its interval. It is a
// pure state machine (the caller passes the time) and not safe for
// concurrent use.
type admitter struct {
	a       Admission
	ring    *keyring.Keyring // nil: nodes < nodes are registered (any when nodes is 0)
	nodes   int
	buckets map[int]*tokenBucket
}

func newAdmitter(a Admission, ring *keyring.Keyring, nodes int) *admitter {
	return &admitter{a: a.withDefaults(), ring: ring, nodes: nodes, buckets: map[int]*tokenBucket{}}
}

// registered refuses a node that is not in the keyring, or (without one)
// not under the configured number of nodes.
func (ad *admitter) registered(node int) error {
	switch {
	case ad.ring != nil && ad.ring.Node(node) == "":
		return reject("unknown-node", "node %d is not in the keyring (%d nodes; add it with adaptio keys add-node)", node, len(ad.ring.Nodes))
	case ad.ring == nil && ad.nodes > 0 && node >= ad.nodes:
		return reject("unknown-node", "node %d is not under --nodes %d", node, ad.nodes)
	}
	return nil
}

// admit checks report r received at now (the service's clock): the
// node's rate, then the report's bounds. A rejected report changes nothing
// but its node's tokens.
func (ad *admitter) admit(now time.Duration, r councilmsg.Report) error {
	o := r.Obs
	if err := ad.registered(o.Node); err != nil {
		return err
	}
	b := ad.buckets[o.Node]
	if b == nil {
		b = &tokenBucket{tokens: ad.a.Burst, last: now}
		ad.buckets[o.Node] = b
	}
	if !b.allow(now, ad.a.Rate, ad.a.Burst) {
		return reject("rate", "node %d sends more than %.3g reports per second (burst %.0f)", o.Node, ad.a.Rate, ad.a.Burst)
	}
	return ad.bounds(r)
}

// bounds checks that a report claims no more than a node can do in its
// interval.
func (ad *admitter) bounds(r councilmsg.Report) error {
	o, a := r.Obs, ad.a
	maxIvl := DefaultMaxInterval
	if a.Interval > 0 {
		maxIvl = IntervalFactor * a.Interval
	}
	idle := o.Bytes == 0 && o.Requests == 0 && o.Bandwidth == 0 && o.OpBytes == 0
	switch {
	case o.Interval > maxIvl:
		return reject("interval", "node %d: interval %v longer than %v", o.Node, o.Interval, maxIvl)
	case o.Interval <= 0 && !idle:
		return reject("interval", "node %d: activity in an interval of %v", o.Node, o.Interval)
	case o.Bandwidth > a.MaxBandwidth:
		return reject("bandwidth", "node %d: bandwidth %.4g B/s above the ceiling %.4g B/s", o.Node, o.Bandwidth, a.MaxBandwidth)
	}
	secs := o.Interval.Seconds()
	limit := a.MaxBandwidth*secs*1.01 + 1
	if float64(o.Bytes) > limit {
		return reject("bytes", "node %d: %d bytes in %v, more than the ceiling %.4g B/s allows", o.Node, o.Bytes, o.Interval, a.MaxBandwidth)
	}
	if bw := o.Bandwidth * secs; math.Abs(bw-float64(o.Bytes)) > 0.01*math.Max(bw, float64(o.Bytes))+1 {
		return reject("inconsistent", "node %d: bandwidth %.4g B/s over %v is %.4g bytes, reported %d", o.Node, o.Bandwidth, o.Interval, bw, o.Bytes)
	}
	if float64(o.OpBytes) > limit || float64(o.OpBytes) > a.MaxBandwidth*o.OpSpan.Seconds()*1.01+1 {
		return reject("bandwidth", "node %d: %d bytes of its operation in %v, above the ceiling %.4g B/s", o.Node, o.OpBytes, o.OpSpan, a.MaxBandwidth)
	}
	if float64(o.Requests) > a.MaxRequestRate*secs+1 {
		return reject("requests", "node %d: %d requests in %v, above %.4g per second", o.Node, o.Requests, o.Interval, a.MaxRequestRate)
	}
	return ad.jobs(r)
}

// jobs checks a report's jobs: at most MaxJobs, ids of at most MaxJobID
// characters and distinct, each job's interval the node's, and together
// no more bytes, requests or operation bytes than the node's (each job's
// own bounds follow from those).
func (ad *admitter) jobs(r councilmsg.Report) error {
	o, a := r.Obs, ad.a
	if len(r.Jobs) > a.MaxJobs {
		return reject("jobs", "node %d: %d jobs, at most %d", o.Node, len(r.Jobs), a.MaxJobs)
	}
	var bytes, reqs, opBytes int64
	for i, j := range r.Jobs {
		switch {
		case len(j.ID) > a.MaxJobID || !councilmsg.ValidJobID(j.ID):
			return reject("jobs", "node %d: job %d: id of %d characters (at most %d printable, no space, '=', ';', '#')", o.Node, i, len(j.ID), a.MaxJobID)
		case j.Obs.Node != o.Node || j.Obs.Interval != o.Interval || j.Obs.Window != o.Window:
			return reject("jobs", "node %d: job %q: node, interval or window not the report's", o.Node, j.ID)
		case j.Obs.Bytes < 0 || j.Obs.Requests < 0 || j.Obs.OpBytes < 0 || j.Obs.OpSpan > o.Interval:
			return reject("jobs", "node %d: job %q: negative counts or an operation span beyond the interval", o.Node, j.ID)
		}
		for _, k := range r.Jobs[:i] {
			if k.ID == j.ID {
				return reject("jobs", "node %d: job %q listed twice", o.Node, j.ID)
			}
		}
		bytes += j.Obs.Bytes
		reqs += j.Obs.Requests
		opBytes += j.Obs.OpBytes
		if bytes < 0 || reqs < 0 || opBytes < 0 {
			return reject("jobs", "node %d: jobs' counts overflow", o.Node)
		}
	}
	switch {
	case bytes > o.Bytes:
		return reject("jobs", "node %d: jobs' %d bytes above the node's %d", o.Node, bytes, o.Bytes)
	case reqs > o.Requests:
		return reject("jobs", "node %d: jobs' %d requests above the node's %d", o.Node, reqs, o.Requests)
	case opBytes > bytes:
		return reject("jobs", "node %d: jobs' %d operation bytes above their %d bytes", o.Node, opBytes, bytes)
	}
	return nil
}

// authenticate checks, with a keyring, that a report on node k's subject
// is signed by node k's key (unregistered nodes refused first).
func (s *Service) authenticate(m *nats.Msg, node int) error {
	ring := s.opts.Keys.Ring
	if ring == nil {
		return nil
	}
	if err := s.adm.registered(node); err != nil {
		return err
	}
	return ring.VerifyNode(node, m.Header, m.Subject, m.Data)
}

// rejectReport counts a report refused for err's reason and logs it at
// WARN, at most once per reason every few seconds.
func (s *Service) rejectReport(node int, err error) {
	reason := rejectReason(err)
	s.m.rejected.WithLabelValues(reason).Inc()
	if ok, n := s.warns.Allow(reason, time.Now()); ok {
		s.log.Warn("report rejected", "node", strconv.Itoa(node), "reason", reason, "err", err, "suppressed", n)
	}
}
