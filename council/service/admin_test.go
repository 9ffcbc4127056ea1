package service

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/sched"
)

var adminSeq atomic.Uint64

// adminRequest sends r (a fresh id and time unless set) on prefix's admin
// subject, signed by signer (nil: unsigned), and returns the reply.
func adminRequest(t *testing.T, nc *nats.Conn, prefix string, signer *keyring.Signer, r AdminRequest) (AdminReply, *nats.Msg) {
	t.Helper()
	r.V = 1
	if r.ID == "" {
		r.ID = fmt.Sprintf("test-%d", adminSeq.Add(1))
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: AdminSubject(prefix), Data: body}
	if signer != nil {
		if m, err = signer.Msg(AdminSubject(prefix), body); err != nil {
			t.Fatal(err)
		}
	}
	return sendAdmin(t, nc, m), m
}

func sendAdmin(t *testing.T, nc *nats.Conn, m *nats.Msg) AdminReply {
	t.Helper()
	resp, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		t.Fatalf("admin request: %v", err)
	}
	var reply AdminReply
	if err := json.Unmarshal(resp.Data, &reply); err != nil {
		t.Fatalf("admin reply %s: %v", resp.Data, err)
	}
	return reply
}

func readAudit(t *testing.T, path string) []AuditEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func openAudit(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestAdminRequestsSignedByAnOperator: with the group's keyring, an
// operator's signed requests pin, release and switch shadow mode, and are
// audited; unsigned, wrongly signed, replayed and stale requests are
// refused and change nothing; pins and shadow mode survive a restart.
func TestAdminRequestsSignedByAnOperator(t *testing.T) {
	set, dir := writeKeys(t, 1)
	state := t.TempDir()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	opts := Options{StateDir: state, Core: council.Config{Nodes: 1}, AuditLog: openAudit(t, auditPath),
		Security: Security{NKeySeedFile: filepath.Join(dir, keyring.CouncilSeed), Keys: &set.Ring}}
	s := startService(t, opts)
	defer s.Shutdown()
	prefix := s.Subjects().Prefix
	opOpt, err := Security{NKeySeedFile: filepath.Join(dir, keyring.OperatorSeed)}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s.ClientURL(), opOpt...)

	reply, pinMsg := adminRequest(t, nc, prefix, set.Operator, AdminRequest{Action: ActionPin, Pattern: "ss", Op: "write", Window: 4 * time.Millisecond, Reason: "vendor advice"})
	if !reply.OK || len(reply.Operator.Pins) != 1 || reply.Operator.Pins[0] != (council.Pin{Context: "SS/write", Window: 4 * time.Millisecond}) {
		t.Fatalf("pin: %+v, want SS/write pinned at 4ms", reply)
	}
	for _, tt := range []struct {
		name   string
		msg    func() *nats.Msg
		reason string
	}{
		{"unsigned", func() *nats.Msg {
			_, m := adminRequestMsg(t, prefix, nil, AdminRequest{Action: ActionReleaseAll})
			return m
		}, "not signed"},
		{"signed by an I/O node's key", func() *nats.Msg {
			_, m := adminRequestMsg(t, prefix, set.Nodes[0], AdminRequest{Action: ActionReleaseAll})
			return m
		}, "not the operator's key"},
		{"replayed", func() *nats.Msg { return pinMsg }, "already received"},
		{"stale", func() *nats.Msg {
			_, m := adminRequestMsg(t, prefix, set.Operator, AdminRequest{Action: ActionReleaseAll, At: time.Now().Add(-10 * time.Minute)})
			return m
		}, "from the Council's clock"},
		{"a window the Council does not have", func() *nats.Msg {
			_, m := adminRequestMsg(t, prefix, set.Operator, AdminRequest{Action: ActionPin, Pattern: "SC", Op: "read", Window: 3 * time.Millisecond})
			return m
		}, "not one of the Council's windows"},
		{"tampered after signing", func() *nats.Msg {
			_, m := adminRequestMsg(t, prefix, set.Operator, AdminRequest{Action: ActionReleaseAll})
			m.Data = []byte(strings.Replace(string(m.Data), "release-all", "shadow-on", 1))
			return m
		}, "does not match"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reply := sendAdmin(t, nc, tt.msg())
			if reply.OK || !strings.Contains(reply.Error, tt.reason) {
				t.Fatalf("reply %+v, want refused with %q", reply, tt.reason)
			}
			if op := s.Operator(); len(op.Pins) != 1 || op.Shadow {
				t.Fatalf("operator state %+v after a refused request, want the pin alone", op)
			}
		})
	}
	if reply, _ := adminRequest(t, nc, prefix, set.Operator, AdminRequest{Action: ActionShadowOn, Reason: "first week"}); !reply.OK || !reply.Operator.Shadow {
		t.Fatalf("shadow on: %+v", reply)
	}
	// The pin and shadow mode are persisted: a new Council on the same
	// state has them.
	s.Shutdown()
	s2 := startService(t, Options{StateDir: state, Core: council.Config{Nodes: 1}, Security: opts.Security})
	defer s2.Shutdown()
	if op := s2.Operator(); !op.Shadow || len(op.Pins) != 1 || op.Pins[0].Window != 4*time.Millisecond {
		t.Fatalf("after restart: %+v, want shadow and the pin", op)
	}
	nc2 := connect(t, s2.ClientURL(), opOpt...)
	if reply, _ := adminRequest(t, nc2, prefix, set.Operator, AdminRequest{Action: ActionRelease, Pattern: "SS", Op: "write"}); !reply.OK || len(reply.Operator.Pins) != 0 || len(reply.Released) != 1 {
		t.Fatalf("release: %+v", reply)
	}
	audit := readAudit(t, auditPath)
	if len(audit) != 2 || audit[0].Action != ActionPin || audit[0].Who != set.Operator.PublicKey() || audit[0].Pattern != "SS" || audit[0].Op != "write" ||
		audit[0].Window != 4*time.Millisecond || audit[0].Reason != "vendor advice" || audit[1].Action != ActionShadowOn || audit[0].Wall.IsZero() {
		t.Fatalf("audit log %+v, want the pin and shadow-on by the operator's key (the second Council has no audit log)", audit)
	}
}

// adminRequestMsg builds a request message without sending it.
func adminRequestMsg(t *testing.T, prefix string, signer *keyring.Signer, r AdminRequest) (AdminRequest, *nats.Msg) {
	t.Helper()
	r.V = 1
	r.ID = fmt.Sprintf("test-%d", adminSeq.Add(1))
	if r.At.IsZero() {
		r.At = time.Now()
	}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if signer == nil {
		return r, &nats.Msg{Subject: AdminSubject(prefix), Data: body}
	}
	m, err := signer.Msg(AdminSubject(prefix), body)
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

// TestAdminWithoutKeyring: a Council without a keyring accepts unsigned
// requests only when its NATS server is embedded on loopback; on an
// external server it refuses them, saying to configure a keyring.
func TestAdminWithoutKeyring(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	local := startService(t, Options{Core: council.Config{Nodes: 1}, AuditLog: openAudit(t, auditPath)})
	defer local.Shutdown()
	nc := connect(t, local.ClientURL())
	if reply, _ := adminRequest(t, nc, local.Subjects().Prefix, nil, AdminRequest{Action: ActionPin, Pattern: "FPP", Op: "read", Window: 250 * time.Microsecond}); !reply.OK {
		t.Fatalf("unsigned request on a loopback-embedded Council: %+v, want accepted", reply)
	}
	if a := readAudit(t, auditPath); len(a) != 1 || a[0].Who != "local" {
		t.Fatalf("audit %+v, want one action by local", a)
	}
	ext := startService(t, Options{URL: local.ClientURL(), Prefix: "adaptio.ext", Core: council.Config{Nodes: 1}})
	defer ext.Shutdown()
	reply, _ := adminRequest(t, nc, "adaptio.ext", nil, AdminRequest{Action: ActionShadowOn})
	if reply.OK || !strings.Contains(reply.Error, "--keys DIR") || ext.Operator().Shadow {
		t.Fatalf("unsigned request on a Council of an external server: %+v, want refused naming --keys", reply)
	}
}

// TestGuardrailFallbackAuditedAndCounted drives a Council through NATS
// with poisoned early rewards for 8 ms: the guardrail falls back to the
// default, logs it to the audit log and counts it.
func TestGuardrailFallbackAuditedAndCounted(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	reg := prometheus.NewRegistry()
	s := startService(t, Options{Registerer: reg, AuditLog: openAudit(t, auditPath), Core: council.Config{Nodes: 1, Credit: council.CreditRound,
		Guardrail: council.Guardrail{Share: 0.3, Threshold: 0.1, Span: 30, MinSamples: 3}}})
	defer s.Shutdown()
	nc := connect(t, s.ClientURL())
	dec := listen(t, nc, s.Subjects())
	n := &node{id: 0, nc: nc, subj: s.Subjects()}
	fell := 0
	for r := 1; r <= 150 && fell == 0; r++ {
		last, k := dec.last()
		w := last.Plan.Write
		if k == 0 || w == 0 {
			w = sched.DefaultWindow
		}
		bw := map[time.Duration]float64{sched.DefaultWindow: 100e6, 8 * time.Millisecond: 60e6}[w]
		switch {
		case w == 8*time.Millisecond && r <= 40:
			bw = 2000e6 // poisoned
		case bw == 0:
			bw = 80e6
		}
		n.report(t, w, bw)
		poll.Until(t, "decision", 5*time.Second, func() bool { _, m := dec.last(); return m > k })
		if len(s.LastDecision().Guardrail) > 0 {
			fell = r
		}
	}
	if fell == 0 {
		t.Fatalf("no fallback in 150 rounds: %+v", s.Operator())
	}
	if got := testutil.ToFloat64(s.om.fallbacks.WithLabelValues("FPP/write")); got != 1 {
		t.Errorf("adaptio_council_guardrail_fallbacks_total{pattern=FPP/write} = %v, want 1", got)
	}
	a := readAudit(t, auditPath)
	if len(a) != 1 || a[0].Action != "guardrail-fallback" || a[0].Who != "guardrail" || a[0].Pattern != "FPP" || a[0].Op != "write" ||
		a[0].Window != sched.DefaultWindow || !strings.Contains(a[0].Reason, "8ms") {
		t.Fatalf("audit %+v, want the fallback of FPP/write from 8ms to the default", a)
	}
	n.report(t, sched.DefaultWindow, 100e6)
	_, k := dec.last()
	poll.Until(t, "decision", 5*time.Second, func() bool { _, m := dec.last(); return m > k })
	if d, _ := dec.last(); d.Plan.Write != sched.DefaultWindow {
		t.Fatalf("after the fallback the write plan is %v, want the default", d.Plan.Write)
	}
}

// FuzzDecodeAdminRequest: the admin decoder never panics, and whatever it
// accepts is a valid request that encodes and decodes to itself.
func FuzzDecodeAdminRequest(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"id":"a","at":"2026-11-28T10:00:00Z","action":"pin","pattern":"SS","op":"write","win_ns":4000000,"reason":"x"}`,
		`{"v":1,"id":"b","at":"2026-11-28T10:00:00Z","action":"release","pattern":"fpp","op":"read"}`,
		`{"v":1,"id":"c","at":"2026-11-28T10:00:00Z","action":"release-all"}`,
		`{"v":1,"id":"d","at":"2026-11-28T10:00:00Z","action":"shadow-on"}`,
		`{"v":1,"id":"e","at":"2026-11-28T10:00:00Z","action":"status"}`,
		`{"v":2}`, `{}`, `[]`, `{"v":1,"id":"a","at":"x","action":"pin"}`, `{"v":1,"id":"a","at":"2026-11-28T10:00:00Z","action":"pin","pattern":"SS","op":"write","win_ns":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeAdminRequest(data)
		if err != nil {
			return
		}
		if r.V != 1 || r.ID == "" || r.At.IsZero() {
			t.Fatalf("accepted %+v", r)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeAdminRequest(b)
		if err != nil || r2.Action != r.Action || r2.Window != r.Window || r2.Pattern != r.Pattern || r2.ID != r.ID || !r2.At.Equal(r.At) {
			t.Fatalf("round trip of %+v: %+v, %v", r, r2, err)
		}
	})
}
