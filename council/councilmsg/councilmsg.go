package councilmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// Version is the message format version this package writes and the only
// one it accepts.
const Version = 1

// MaxSize is the largest message, in bytes, a decoder accepts. A version-1
// report is about 400 bytes, with MaxJobs jobs at most about 3,800; a
// decision about 170.
const MaxSize = 4096

// Errors returned by the decoders; Reason maps them to metric labels.
var (
	ErrOversized = errors.New("councilmsg: message larger than MaxSize")
	ErrMalformed = errors.New("councilmsg: malformed message")
	ErrVersion   = errors.New("councilmsg: unknown message version")
	ErrInvalid   = errors.New("councilmsg: invalid observation")
	ErrSubject   = errors.New("councilmsg: subject does not match the message")
)

// Reason returns the metric label for a decoding error: "oversized",
// "malformed", "version", "invalid", "subject", or "other".
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrOversized):
		return "oversized"
	case errors.Is(err, ErrVersion):
		return "version"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	case errors.Is(err, ErrSubject):
		return "subject"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	}
	return "other"
}

// Reasons lists every label Reason returns, for pre-registering metrics.
var Reasons = []string{"oversized", "malformed", "version", "invalid", "subject", "other"}

// Report is what an Announcer sends once per interval: the observation of
// the interval just ended and where it stands in the protocol.
type Report struct {
	// Instance identifies one run of the Announcer (random, non-zero); a
	// restarted Announcer starts a new sequence.
	Instance uint64
	// Seq numbers the Announcer's intervals, from 1, increasing.
	Seq uint64
	// Round is the round of the last decision the Announcer applied (0:
	// none yet, running its default window).
	Round uint64
	// Obs is the interval's observation; Obs.Node is the reporting I/O
	// node and Obs.Window the window that was in force during it.
	Obs access.Observation
	// Scheduler is the scheduling algorithm the node ran at the end of
	// the interval ("": not reported; dynamic selection changes it), up to
	// MaxSchedulerName lower-case letters, digits and dashes.
	Scheduler string
	// Jobs are the jobs the node served in the interval, when it served
	// more than one (none: one job, or a node that does not tell them
	// apart): at most MaxJobs, the ones that moved the most bytes, each
	// with its own requests' metrics, together no more than the node's.
	// Optional on the wire ("jobs"): a Council that predates it ignores
	// it, and a report without it is a report of the node alone.
	Jobs []Job
	// Selection says whether the node selects its scheduling algorithm
	// dynamically: SelectionGroup (it runs the algorithm a decision names,
	// councilmsg.Decision.Scheduler, the Council's one choice for the
	// group), SelectionAlone (it chooses alone), or "" (it does not select,
	// or does not say). Optional on the wire ("sel"): a Council that
	// predates it ignores it.
	Selection string
}

// Report.Selection's values.
const (
	SelectionGroup = "group"
	SelectionAlone = "alone"
)

func validSelection(s string) bool { return s == "" || s == SelectionGroup || s == SelectionAlone }

// MaxSchedulerName bounds Report.Scheduler.
const MaxSchedulerName = 32

// validScheduler reports whether s may be a Report's Scheduler.
func validScheduler(s string) bool {
	if len(s) > MaxSchedulerName {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Decision is what the Council broadcasts when it closes a round.
type Decision struct {
	Round   uint64        // round closed, from 1
	Window  time.Duration // window every I/O node applies from now on
	Explore bool          // the window was chosen to explore
	Prob    float64       // probability with which the window was chosen, in (0, 1]
	Nodes   int           // I/O nodes that reported in the round
	Reason  string        // why the round closed: "all", "deadline"
	// Plan is the window a node applies when its requests turn to reads,
	// or to writes (0: none; keep Window). Absent from a Council that makes
	// no plan.
	Plan rw.Pair[time.Duration]
	// Epoch identifies one run of the Council (random, non-zero; 0: not
	// said). Rounds increase within an epoch; a restarted Council starts a
	// new one. Optional on the wire ("epoch").
	Epoch uint64
	// Time is the wall-clock time the decision was made, UTC (zero: not
	// said). Receivers use it to refuse replays and decisions from the
	// future (see package announce). Optional on the wire ("t_ns",
	// nanoseconds since the Unix epoch).
	Time time.Time
	// Scheduler is the scheduling algorithm every I/O node that selects
	// its algorithm dynamically runs from now on: the Council's one
	// choice for the group ("": none; the nodes choose alone). At most
	// MaxSchedulerName lower-case letters, digits and dashes. Optional on
	// the wire ("sched"): receivers that predate it ignore it.
	Scheduler string
}

// reportJSON is the version-1 report as it travels: one flat object,
// times in nanoseconds, sizes in bytes, bandwidth in bytes per second.
type reportJSON struct {
	V        int       `json:"v"`
	Node     int       `json:"node"`
	Instance uint64    `json:"inst"`
	Seq      uint64    `json:"seq"`
	Round    uint64    `json:"round"`
	Start    int64     `json:"start_ns"`
	Interval int64     `json:"ivl_ns"`
	Window   int64     `json:"win_ns"`
	DS       int       `json:"ds"`
	Clients  int       `json:"cl"`
	Procs    int       `json:"pr"`
	Op       string    `json:"op"`
	FH       int       `json:"fh"`
	ReqAvg   float64   `json:"ravg"`
	ReqMin   int64     `json:"rmin"`
	ReqMax   int64     `json:"rmax"`
	Dist     float64   `json:"odist"`
	PDist    float64   `json:"pdist"` // optional: absent in reports of announcers that predate it (decodes as 0)
	Sharers  float64   `json:"shr"`   // optional: likewise (access.Observation.Sharers)
	BW       float64   `json:"bw"`
	Bytes    int64     `json:"bytes"`
	Reqs     int64     `json:"reqs"`
	Sched    string    `json:"sched,omitempty"`    // optional: absent in reports of announcers that predate it, or that do not say
	OBytes   int64     `json:"obytes,omitempty"`   // optional: the majority operation's bytes served (access.Observation.OpBytes)
	OSpan    int64     `json:"ospan_ns,omitempty"` // optional: ... and the span they were served in, ns (OpSpan)
	Jobs     []jobJSON `json:"jobs,omitempty"`     // optional: the jobs of the interval (Report.Jobs)
	Sel      string    `json:"sel,omitempty"`      // optional: dynamic selection (Report.Selection)
}

type decisionJSON struct {
	V       int     `json:"v"`
	Round   uint64  `json:"round"`
	Window  int64   `json:"win_ns"`
	Explore bool    `json:"explore"`
	Prob    float64 `json:"prob"`
	Nodes   int     `json:"nodes"`
	Reason  string  `json:"reason"`
	Read    int64   `json:"rd_ns,omitempty"`
	Write   int64   `json:"wr_ns,omitempty"`
	Epoch   uint64  `json:"epoch,omitempty"` // optional: absent from Councils that predate it
	Time    int64   `json:"t_ns,omitempty"`  // optional: likewise
	Sched   string  `json:"sched,omitempty"` // optional: likewise
}

func opString(o rw.Op) string {
	switch o {
	case rw.Read:
		return "read"
	case rw.Write:
		return "write"
	}
	return ""
}

func parseOp(s string) (rw.Op, error) {
	switch s {
	case "":
		return 0, nil
	case "read":
		return rw.Read, nil
	case "write":
		return rw.Write, nil
	}
	return 0, fmt.Errorf("%w: op %q", ErrInvalid, s)
}

func appendField(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func appendFloat(b []byte, f float64) []byte { return strconv.AppendFloat(b, f, 'g', -1, 64) }

// AppendReport appends the version-1 encoding of r to b. It refuses a
// report whose observation does not pass Validate (ErrInvalid).
func AppendReport(b []byte, r Report) ([]byte, error) {
	o := &r.Obs
	if err := o.Validate(); err != nil {
		return b, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !validScheduler(r.Scheduler) {
		return b, fmt.Errorf("%w: scheduler name %q", ErrInvalid, r.Scheduler)
	}
	if !validSelection(r.Selection) {
		return b, fmt.Errorf("%w: selection %q", ErrInvalid, r.Selection)
	}
	if err := checkJobs(r); err != nil {
		return b, err
	}
	b = append(b, `{"v":1`...)
	b = appendField(b, "node")
	b = strconv.AppendInt(b, int64(o.Node), 10)
	b = appendField(b, "inst")
	b = strconv.AppendUint(b, r.Instance, 10)
	b = appendField(b, "seq")
	b = strconv.AppendUint(b, r.Seq, 10)
	b = appendField(b, "round")
	b = strconv.AppendUint(b, r.Round, 10)
	b = appendField(b, "start_ns")
	b = strconv.AppendInt(b, int64(o.Start), 10)
	b = appendField(b, "ivl_ns")
	b = strconv.AppendInt(b, int64(o.Interval), 10)
	b = appendField(b, "win_ns")
	b = strconv.AppendInt(b, int64(o.Window), 10)
	b = appendField(b, "ds")
	b = strconv.AppendInt(b, int64(o.DataServers), 10)
	b = appendField(b, "cl")
	b = strconv.AppendInt(b, int64(o.Clients), 10)
	b = appendField(b, "pr")
	b = strconv.AppendInt(b, int64(o.Processes), 10)
	b = appendField(b, "op")
	b = append(b, '"')
	b = append(b, opString(o.Op)...)
	b = append(b, '"')
	b = appendShape(b, o)
	b = appendField(b, "bw")
	b = appendFloat(b, o.Bandwidth)
	b = appendCounts(b, o)
	if r.Scheduler != "" {
		b = appendField(b, "sched")
		b = append(b, '"')
		b = append(b, r.Scheduler...)
		b = append(b, '"')
	}
	if r.Selection != "" {
		b = appendField(b, "sel")
		b = append(b, '"')
		b = append(b, r.Selection...)
		b = append(b, '"')
	}
	b = appendJobs(b, r.Jobs)
	return append(b, '}'), nil
}

// MarshalReport returns the version-1 encoding of r.
func MarshalReport(r Report) ([]byte, error) { return AppendReport(make([]byte, 0, 384), r) }

// peekVersion reports the "v" field of a JSON object, or ok=false.
func peekVersion(data []byte) (v int, ok bool) {
	var p struct {
		V json.RawMessage `json:"v"`
	}
	if json.Unmarshal(data, &p) != nil || p.V == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(p.V))
	if err != nil {
		return -1, true
	}
	return n, true
}

// UnmarshalReport decodes and validates a report. It never panics; every
// error wraps one of ErrOversized, ErrMalformed, ErrVersion or ErrInvalid.
func UnmarshalReport(data []byte) (Report, error) {
	if len(data) > MaxSize {
		return Report{}, ErrOversized
	}
	m, ok := fastReport(data)
	if !ok {
		var err error
		if m, err = slowReport(data); err != nil {
			return Report{}, err
		}
	}
	if m.V != Version {
		if m.V == 0 {
			if _, ok := peekVersion(data); !ok {
				return Report{}, fmt.Errorf("%w: no version field", ErrMalformed)
			}
		}
		return Report{}, fmt.Errorf("%w: %d", ErrVersion, m.V)
	}
	r, err := m.toReport()
	if err != nil {
		return Report{}, err
	}
	if err := r.Obs.Validate(); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if r.Obs.Start < 0 {
		return Report{}, fmt.Errorf("%w: negative start", ErrInvalid)
	}
	if r.Seq == 0 || r.Instance == 0 {
		return Report{}, fmt.Errorf("%w: seq and inst must be positive", ErrInvalid)
	}
	if !validScheduler(r.Scheduler) {
		return Report{}, fmt.Errorf("%w: scheduler name %q", ErrInvalid, r.Scheduler)
	}
	if !validSelection(r.Selection) {
		return Report{}, fmt.Errorf("%w: selection %q", ErrInvalid, r.Selection)
	}
	if err := checkJobs(r); err != nil {
		return Report{}, err
	}
	return r, nil
}

// slowReport decodes a report with encoding/json (any form it accepts).
func slowReport(data []byte) (reportJSON, error) {
	var m reportJSON
	if err := json.Unmarshal(data, &m); err != nil {
		if v, ok := peekVersion(data); ok && v != Version {
			return m, fmt.Errorf("%w: %d", ErrVersion, v)
		}
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}

// slowDecision decodes a decision with encoding/json.
func slowDecision(data []byte) (decisionJSON, error) {
	var m decisionJSON
	if err := json.Unmarshal(data, &m); err != nil {
		if v, ok := peekVersion(data); ok && v != Version {
			return m, fmt.Errorf("%w: %d", ErrVersion, v)
		}
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}

// AppendDecision appends the version-1 encoding of d to b.
func AppendDecision(b []byte, d Decision) []byte {
	b = append(b, `{"v":1`...)
	b = appendField(b, "round")
	b = strconv.AppendUint(b, d.Round, 10)
	b = appendField(b, "win_ns")
	b = strconv.AppendInt(b, int64(d.Window), 10)
	b = appendField(b, "explore")
	b = strconv.AppendBool(b, d.Explore)
	b = appendField(b, "prob")
	p := d.Prob
	if math.IsNaN(p) || math.IsInf(p, 0) {
		p = 0
	}
	b = appendFloat(b, p)
	b = appendField(b, "nodes")
	b = strconv.AppendInt(b, int64(d.Nodes), 10)
	b = appendField(b, "reason")
	b = strconv.AppendQuote(b, d.Reason)
	if d.Plan.Read != 0 {
		b = appendField(b, "rd_ns")
		b = strconv.AppendInt(b, int64(d.Plan.Read), 10)
	}
	if d.Plan.Write != 0 {
		b = appendField(b, "wr_ns")
		b = strconv.AppendInt(b, int64(d.Plan.Write), 10)
	}
	if d.Epoch != 0 {
		b = appendField(b, "epoch")
		b = strconv.AppendUint(b, d.Epoch, 10)
	}
	if ns := timeNS(d.Time); ns > 0 {
		b = appendField(b, "t_ns")
		b = strconv.AppendInt(b, ns, 10)
	}
	if d.Scheduler != "" && validScheduler(d.Scheduler) {
		b = appendField(b, "sched")
		b = append(b, '"')
		b = append(b, d.Scheduler...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// MarshalDecision returns the version-1 encoding of d.
func MarshalDecision(d Decision) []byte { return AppendDecision(make([]byte, 0, 128), d) }

// timeNS is t in nanoseconds since the Unix epoch, 0 for the zero time or
// a time not after 1970 or beyond what int64 nanoseconds hold.
func timeNS(t time.Time) int64 {
	ns := t.UnixNano()
	if t.IsZero() || ns <= 0 || !time.Unix(0, ns).Equal(t) {
		return 0
	}
	return ns
}

// UnmarshalDecision decodes and checks a decision (positive window, round
// >= 1, probability in (0, 1], plan windows not negative, time not
// negative).
func UnmarshalDecision(data []byte) (Decision, error) {
	if len(data) > MaxSize {
		return Decision{}, ErrOversized
	}
	m, ok := fastDecision(data)
	if !ok {
		var err error
		if m, err = slowDecision(data); err != nil {
			return Decision{}, err
		}
	}
	if m.V != Version {
		return Decision{}, fmt.Errorf("%w: %d", ErrVersion, m.V)
	}
	if m.Round == 0 || m.Window <= 0 || !(m.Prob > 0 && m.Prob <= 1) || m.Nodes < 0 {
		return Decision{}, fmt.Errorf("%w: decision round %d window %d prob %v", ErrInvalid, m.Round, m.Window, m.Prob)
	}
	if m.Read < 0 || m.Write < 0 {
		return Decision{}, fmt.Errorf("%w: decision plan read %d write %d", ErrInvalid, m.Read, m.Write)
	}
	if m.Time < 0 {
		return Decision{}, fmt.Errorf("%w: decision time %d", ErrInvalid, m.Time)
	}
	if !validScheduler(m.Sched) {
		return Decision{}, fmt.Errorf("%w: decision scheduler %q", ErrInvalid, m.Sched)
	}
	d := Decision{Round: m.Round, Window: time.Duration(m.Window), Explore: m.Explore, Prob: m.Prob, Nodes: m.Nodes, Reason: m.Reason,
		Plan: rw.Pair[time.Duration]{Read: time.Duration(m.Read), Write: time.Duration(m.Write)}, Epoch: m.Epoch, Scheduler: m.Sched}
	if m.Time > 0 {
		d.Time = time.Unix(0, m.Time).UTC()
	}
	return d, nil
}

// Subjects of one Council group. Prefix is a NATS subject prefix such as
// "adaptio.default"; its tokens must be non-empty and free of wildcards.
type Subjects struct{ Prefix string }

// Report returns the subject node publishes its reports on.
func (s Subjects) Report(node int) string { return s.Prefix + ".report." + strconv.Itoa(node) }

// Reports returns the wildcard subject the Council subscribes to.
func (s Subjects) Reports() string { return s.Prefix + ".report.*" }

// Decision returns the subject decisions are broadcast on.
func (s Subjects) Decision() string { return s.Prefix + ".decision" }

// NodeOf parses the node index from a report subject (ErrSubject when it
// is not one).
func (s Subjects) NodeOf(subject string) (int, error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".report.")
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrSubject, subject)
	}
	// Canonical decimal only: digits, no sign, no leading zero.
	if rest == "" || len(rest) > 9 || (rest[0] == '0' && len(rest) > 1) {
		return 0, fmt.Errorf("%w: %q", ErrSubject, subject)
	}
	n := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q", ErrSubject, subject)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// ValidPrefix checks a subject prefix: dot-separated non-empty tokens of
// letters, digits, '-' and '_'.
func ValidPrefix(p string) error {
	if p == "" {
		return fmt.Errorf("councilmsg: empty subject prefix")
	}
	for _, tok := range strings.Split(p, ".") {
		if tok == "" {
			return fmt.Errorf("councilmsg: subject prefix %q has an empty token", p)
		}
		for _, c := range tok {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("councilmsg: subject prefix %q: character %q not allowed", p, c)
			}
		}
	}
	return nil
}

// DecodeReport decodes a report received on subject and checks that the
// subject's node matches the message's.
func (s Subjects) DecodeReport(subject string, data []byte) (Report, error) {
	n, err := s.NodeOf(subject)
	if err != nil {
		return Report{}, err
	}
	r, err := UnmarshalReport(data)
	if err != nil {
		return r, err
	}
	if r.Obs.Node != n {
		return Report{}, fmt.Errorf("%w: subject node %d, message node %d", ErrSubject, n, r.Obs.Node)
	}
	return r, nil
}
