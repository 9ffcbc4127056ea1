package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	listenpolicy "github.com/adaptio/adaptio/internal/listen"
)

// AdminSubject is the subject operators send requests to (pin, release,
// shadow, status), signed with an operator key (keyring.Signer.Msg).
func AdminSubject(prefix string) string { return prefix + ".admin" }

// Admin actions (AdminRequest.Action).
const (
	ActionPin        = "pin"         // keep Window in force for Pattern/Op
	ActionRelease    = "release"     // remove Pattern/Op's pin and guardrail fallback
	ActionReleaseAll = "release-all" // remove every pin and fallback
	ActionShadowOn   = "shadow-on"   // shadow mode: the default window in force, learning logged
	ActionShadowOff  = "shadow-off"  // learning in force again
	ActionStatus     = "status"      // read the operator state and health; changes nothing
)

var adminActions = []string{ActionPin, ActionRelease, ActionReleaseAll, ActionShadowOn, ActionShadowOff, ActionStatus}

// Limits of admin requests.
const (
	maxAdminSize = 4096
	// AdminMaxSkew is how far a request's At may lie from the Council's
	// clock: older requests (a replay) and requests from a clock far off are
	// refused.
	AdminMaxSkew = 2 * time.Minute
	maxReasonLen = 512
)

// ErrAdmin is wrapped by every refusal of an admin request.
var ErrAdmin = errors.New("council/service: admin request refused")

// AdminRequest is an operator's request, as JSON on AdminSubject.
type AdminRequest struct {
	V       int           `json:"v"`                 // 1
	ID      string        `json:"id"`                // unique per request (1 to 64 characters): a repeat is refused
	At      time.Time     `json:"at"`                // when it was sent (the operator's clock), within AdminMaxSkew of the Council's
	Action  string        `json:"action"`            // one of the Action constants
	Pattern string        `json:"pattern,omitempty"` // FPP, SC or SS (pin, release)
	Op      string        `json:"op,omitempty"`      // read or write (pin, release)
	Window  time.Duration `json:"win_ns,omitempty"`  // pin: one of the Council's windows
	Reason  string        `json:"reason,omitempty"`  // why, for the audit log
}

// AdminReply is the Council's answer to an AdminRequest.
type AdminReply struct {
	OK       bool                   `json:"ok"`
	Error    string                 `json:"error,omitempty"`
	Round    uint64                 `json:"round"`
	Operator council.OperatorStatus `json:"operator"`
	Health   []string               `json:"health"` // reasons /healthz reports degraded (empty: ok)
	Released []string               `json:"released,omitempty"`
}

// DecodeAdminRequest decodes and checks an admin request: at most 4096
// bytes of JSON, no unknown field, version 1, a known action with the
// fields it needs. It does not check freshness or the signature.
func DecodeAdminRequest(data []byte) (AdminRequest, error) {
	var r AdminRequest
	if len(data) > maxAdminSize {
		return r, fmt.Errorf("%w: %d bytes, at most %d", ErrAdmin, len(data), maxAdminSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: malformed: %v", ErrAdmin, err)
	}
	if dec.More() {
		return r, fmt.Errorf("%w: malformed: data after the request", ErrAdmin)
	}
	if r.V != 1 {
		return r, fmt.Errorf("%w: version %d, want 1", ErrAdmin, r.V)
	}
	if r.ID == "" || len(r.ID) > 64 || !utf8.ValidString(r.ID) {
		return r, fmt.Errorf("%w: id must be 1 to 64 characters", ErrAdmin)
	}
	if r.At.IsZero() {
		return r, fmt.Errorf("%w: no time (at)", ErrAdmin)
	}
	if len(r.Reason) > maxReasonLen || !utf8.ValidString(r.Reason) {
		return r, fmt.Errorf("%w: reason longer than %d bytes or not UTF-8", ErrAdmin, maxReasonLen)
	}
	if !slices.Contains(adminActions, r.Action) {
		return r, fmt.Errorf("%w: action %q, want one of %s", ErrAdmin, r.Action, strings.Join(adminActions, ", "))
	}
	switch r.Action {
	case ActionPin, ActionRelease:
		if _, err := council.ParseContext(r.Pattern, r.Op); err != nil {
			return r, fmt.Errorf("%w: %v", ErrAdmin, err)
		}
		if r.Action == ActionPin && r.Window <= 0 {
			return r, fmt.Errorf("%w: pin needs a positive window (win_ns)", ErrAdmin)
		}
		if r.Action == ActionRelease && r.Window != 0 {
			return r, fmt.Errorf("%w: release takes no window", ErrAdmin)
		}
	default:
		if r.Pattern != "" || r.Op != "" || r.Window != 0 {
			return r, fmt.Errorf("%w: %s takes no pattern, operation or window", ErrAdmin, r.Action)
		}
	}
	return r, nil
}

// AuditEntry is one line of the audit log: an operator's action or a
// guardrail's fallback.
type AuditEntry struct {
	Wall    time.Time     `json:"wall"`
	Action  string        `json:"action"` // an admin action, or "guardrail-fallback", "guardrail-retry"
	Who     string        `json:"who"`    // the operator's public key, "local" (unsigned, loopback), or "guardrail"
	Pattern string        `json:"pattern,omitempty"`
	Op      string        `json:"op,omitempty"`
	Window  time.Duration `json:"win_ns,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Round   uint64        `json:"round"`
	ID      string        `json:"id,omitempty"` // the request's id
}

// operatorMetrics count operator requests and guardrail fallbacks.
type operatorMetrics struct {
	admin     *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	shadow    prometheus.Gauge
	pins      prometheus.Gauge
}

func newOperatorMetrics(reg prometheus.Registerer) (*operatorMetrics, error) {
	m := &operatorMetrics{
		admin: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_council_admin_requests_total",
			Help: "Operator requests on <prefix>.admin, by result (ok, refused)."}, []string{"result"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "adaptio_council_guardrail_fallbacks_total",
			Help: "Guardrail fallbacks to the control window, by pattern (the context, e.g. SS/write)."}, []string{"pattern"}),
		shadow: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_council_shadow",
			Help: "1 while the Council is in shadow mode (the default window in force, learning only logged)."}),
		pins: prometheus.NewGauge(prometheus.GaugeOpts{Name: "adaptio_council_pins",
			Help: "Contexts whose window an operator pinned."}),
	}
	for _, c := range []prometheus.Collector{m.admin, m.fallbacks, m.shadow, m.pins} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.admin.WithLabelValues("ok")
	m.admin.WithLabelValues("refused")
	return m, nil
}

// subscribeAdmin subscribes to the group's admin subject.
func (s *Service) subscribeAdmin() error {
	sub, err := s.nc.Subscribe(AdminSubject(s.opts.Prefix), s.onAdmin)
	if err != nil {
		return err
	}
	s.adminSub = sub
	return nil
}

// adminLocal reports whether unsigned admin requests may be accepted: the
// Council has no keyring and runs its NATS server embedded, listening on
// loopback only, so only processes of this host can send them.
func (s *Service) adminLocal() bool {
	return s.opts.Security.Keys == nil && s.ns != nil && listenpolicy.LocalHost(s.opts.Host)
}

// authorize checks who sent m: with a keyring, an operator's (or the
// Council's) valid signature; without one, a loopback-embedded Council
// accepts any request (signed ones are checked and named by their key).
func (s *Service) authorize(m *nats.Msg) (string, error) {
	if ring := s.opts.Security.Keys; ring != nil {
		if err := ring.VerifyOperator(m.Header, m.Subject, m.Data); err != nil {
			return "", fmt.Errorf("%w: %v (sign it with an operator key of the keyring: --keys DIR or --operator-seed FILE)", ErrAdmin, err)
		}
		return m.Header.Get(keyring.HeaderKey), nil
	}
	if !s.adminLocal() {
		return "", fmt.Errorf("%w: this Council has no keyring and its NATS server is not embedded on loopback: start it with --keys DIR to accept operators' signed requests", ErrAdmin)
	}
	if m.Header.Get(keyring.HeaderKey) == "" && m.Header.Get(keyring.HeaderSig) == "" {
		return "local", nil
	}
	pub, err := keyring.Verify(m.Header, m.Subject, m.Data)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAdmin, err)
	}
	return pub, nil
}

// onAdmin handles one admin request (on the subscription's goroutine).
func (s *Service) onAdmin(m *nats.Msg) {
	reply := s.admin(m)
	if reply.OK {
		s.om.admin.WithLabelValues("ok").Inc()
	} else {
		s.om.admin.WithLabelValues("refused").Inc()
		s.log.Warn("admin request refused", "err", reply.Error)
	}
	if m.Reply == "" {
		return
	}
	b, err := json.Marshal(reply)
	if err != nil {
		return
	}
	if err := m.Respond(b); err != nil {
		s.log.Warn("admin reply", "err", err)
	}
}

func (s *Service) admin(m *nats.Msg) AdminReply {
	refuse := func(err error) AdminReply {
		s.mu.Lock()
		defer s.mu.Unlock()
		return AdminReply{Error: err.Error(), Round: s.core.Round(), Operator: s.core.Operator(), Health: s.healthLocked(time.Now())}
	}
	who, err := s.authorize(m)
	if err != nil {
		return refuse(err)
	}
	r, err := DecodeAdminRequest(m.Data)
	if err != nil {
		return refuse(err)
	}
	now := time.Now()
	if d := now.Sub(r.At); d > AdminMaxSkew || d < -AdminMaxSkew {
		return refuse(fmt.Errorf("%w: sent at %s, %v from the Council's clock (at most %v): a replay, or a clock to set right (NTP); send it again", ErrAdmin,
			r.At.UTC().Format(time.RFC3339), d.Round(time.Second), AdminMaxSkew))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return AdminReply{Error: "council/service: stopping"}
	}
	for id, at := range s.adminIDs {
		if now.Sub(at) > 2*AdminMaxSkew {
			delete(s.adminIDs, id)
		}
	}
	if _, dup := s.adminIDs[r.ID]; dup {
		return AdminReply{Error: fmt.Errorf("%w: request %q already received (a replay?): send a new request", ErrAdmin, r.ID).Error(),
			Round: s.core.Round(), Operator: s.core.Operator(), Health: s.healthLocked(now)}
	}
	s.adminIDs[r.ID] = now
	out := AdminReply{OK: true}
	entry := AuditEntry{Wall: now.UTC(), Action: r.Action, Who: who, Window: r.Window, Reason: r.Reason, Round: s.core.Round(), ID: r.ID}
	ctx := ""
	if r.Pattern != "" {
		ctx, _ = council.ParseContext(r.Pattern, r.Op)
		pattern, op, _ := strings.Cut(ctx, "/")
		entry.Pattern, entry.Op = pattern, op
	}
	changed := true
	switch r.Action {
	case ActionPin:
		if err := s.core.Pin(ctx, r.Window); err != nil {
			out = AdminReply{Error: err.Error()}
			changed = false
		}
	case ActionRelease:
		pin, fallback, err := s.core.Release(ctx)
		if err != nil {
			out = AdminReply{Error: err.Error()}
			changed = false
			break
		}
		entry.Window = pin
		if pin != 0 || fallback {
			out.Released = []string{ctx}
		}
	case ActionReleaseAll:
		out.Released = s.core.ReleaseAll()
	case ActionShadowOn, ActionShadowOff:
		s.core.SetShadow(r.Action == ActionShadowOn)
	case ActionStatus:
		changed = false
	}
	out.Round, out.Operator, out.Health = s.core.Round(), s.core.Operator(), s.healthLocked(now)
	s.om.shadow.Set(b2f(out.Operator.Shadow))
	s.om.pins.Set(float64(len(out.Operator.Pins)))
	if !changed {
		return out
	}
	s.audit(entry)
	s.log.Info("operator action", "action", r.Action, "who", who, "pattern", entry.Pattern, "op", entry.Op,
		"window", r.Window, "reason", r.Reason, "released", out.Released)
	s.queueSnapshotLocked()
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// noteDecision logs, counts and audits the guardrail's events of d. Called
// with s.mu held.
func (s *Service) noteDecision(d council.Decision) {
	for _, e := range d.Guardrail {
		pattern, op, _ := strings.Cut(e.Context, "/")
		entry := AuditEntry{Wall: time.Now().UTC(), Action: "guardrail-" + e.Action, Who: "guardrail", Pattern: pattern, Op: op,
			Window: e.Control, Round: d.Round}
		if e.Action == council.GuardFallback {
			s.om.fallbacks.WithLabelValues(e.Context).Inc()
			entry.Reason = fmt.Sprintf("learned window %v earned %.4g on average over the last %d rounds (%d pulls), the control %v %.4g (%d pulls): more than %.0f%% worse",
				e.Learned, e.LearnedMean, e.Span, e.LearnedN, e.Control, e.ControlMean, e.ControlN, 100*s.opts.Core.Guardrail.Threshold)
			s.log.Warn("guardrail: falling back to the control window", "pattern", e.Context, "learned", e.Learned,
				"learned_mean", e.LearnedMean, "control", e.Control, "control_mean", e.ControlMean, "span_rounds", e.Span,
				"until_round", e.Until, "release", "adaptio council release --pattern "+pattern+" --op "+op)
		} else {
			entry.Reason = "cool-down over: learning in force again"
			s.log.Info("guardrail: cool-down over, learning in force again", "pattern", e.Context)
		}
		s.audit(entry)
	}
}

// audit appends e to the audit log and syncs it. Called with s.mu held.
func (s *Service) audit(e AuditEntry) {
	w := s.opts.AuditLog
	if w == nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		s.log.Error("audit log: write failed: the action took effect but is not recorded", "action", e.Action, "err", err)
		return
	}
	if f, ok := w.(interface{ Sync() error }); ok {
		if err := f.Sync(); err != nil {
			s.log.Error("audit log: sync failed", "err", err)
		}
	}
}

// queueSnapshotLocked queues the learned state for writing to KV (a newer
// snapshot replaces a pending one). Called with s.mu held.
func (s *Service) queueSnapshotLocked() {
	if !s.serving || s.stopped {
		return
	}
	snap, err := s.core.Snapshot()
	if err != nil {
		return
	}
	select {
	case s.persistc <- snap:
	default:
		select {
		case <-s.persistc:
		default:
		}
		s.persistc <- snap
	}
}

// Operator returns the operator's view of the Council (shadow, pins, guardrail).
func (s *Service) Operator() council.OperatorStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Operator()
}
