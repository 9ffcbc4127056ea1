package service

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/rw"
)

// openNATS starts a NATS server with JetStream and no authentication: the
// shared cluster of the operator's report, where anyone on the network
// may publish anything.
func openNATS(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns.ClientURL()
}

// report is a plausible busy interval of node under window w: bw bytes
// per second over one second.
func report(node int, seq uint64, w time.Duration, bw float64) []byte {
	o := access.Observation{Node: node, Interval: time.Second, Processes: 8, Op: rw.Write, FileHandles: 8,
		ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: bw, Bytes: int64(bw), Requests: 100, Window: w}
	b, err := councilmsg.MarshalReport(councilmsg.Report{Instance: uint64(node) + 1, Seq: seq, Obs: o})
	if err != nil {
		panic(err)
	}
	return b
}

// publish sends body on subject, signed by sg (nil: unsigned).
func publish(t *testing.T, nc *nats.Conn, sg *keyring.Signer, subject string, body []byte) {
	t.Helper()
	msg := &nats.Msg{Subject: subject, Data: body}
	if sg != nil {
		var err error
		if msg, err = sg.Msg(subject, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// persistedBytes writes the Council's learned state now and returns what
// the KV bucket holds.
func persistedBytes(t *testing.T, s *Service, nc *nats.Conn) []byte {
	t.Helper()
	if err := s.Persist(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, s.opts.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, stateKey)
	if err != nil {
		t.Fatal(err)
	}
	return e.Value()
}

// TestReportAttacks: on an open NATS cluster, a Council with the group's
// keyring learns from its three signed nodes and refuses, counts, and keeps
// out of its learned state (as persisted in KV) each forged report: a node
// that does not exist claiming 9e12 B/s, node 1's key on node 7's subject
// and on node 2's, an unsigned report, a genuine node claiming more than a
// node can move, and bandwidth that is not its bytes over its interval.
func TestReportAttacks(t *testing.T) {
	url := openNATS(t)
	set, err := keyring.Generate(3)
	if err != nil {
		t.Fatal(err)
	}
	s := startService(t, Options{URL: url, Prefix: "adaptio.sec", Keys: Keys{Ring: &set.Ring, Signer: set.Council},
		Core: council.Config{Nodes: 3, Credit: council.CreditRound, Timeout: 2 * time.Second}})
	defer s.Shutdown()
	subj := s.Subjects()
	nc := connect(t, url) // anonymous: anyone on the network
	dec := listen(t, nc, subj)

	// Genuine rounds: each node signs its reports with its own key.
	seq := uint64(0)
	for round := 1; round <= 3; round++ {
		seq++
		w := s.Status().Window
		for k := range 3 {
			publish(t, nc, set.Nodes[k], subj.Report(k), report(k, seq, w, 2e8))
		}
		poll.Until(t, "the round's decision", 10*time.Second, func() bool { _, n := dec.last(); return n >= round })
	}
	before := persistedBytes(t, s, nc)
	stBefore := s.Status()

	attacks := []struct {
		name, reason string
		signer       *keyring.Signer
		subject      string
		body         []byte
	}{
		{"fake node 7 claiming 9e12 B/s", "unknown-node", nil, subj.Report(7), report(7, 1, time.Millisecond, 9e12)},
		{"node 1's key on node 7's subject", "unknown-node", set.Nodes[1], subj.Report(7), report(7, 1, time.Millisecond, 9e12)},
		{"node 1's key on node 2's subject", "key", set.Nodes[1], subj.Report(2), report(2, seq+1, time.Millisecond, 9e12)},
		{"the Council's key on node 2's subject", "key", set.Council, subj.Report(2), report(2, seq+1, time.Millisecond, 9e12)},
		{"unsigned report as node 0", "unsigned", nil, subj.Report(0), report(0, seq+1, time.Millisecond, 9e12)},
		{"node 0 signed, but over the physical bound", "bandwidth", set.Nodes[0], subj.Report(0), report(0, seq+1, time.Millisecond, 9e12)},
		{"node 0 signed, bandwidth not its bytes", "inconsistent", set.Nodes[0], subj.Report(0), func() []byte {
			o := access.Observation{Node: 0, Interval: time.Second, Processes: 8, Op: rw.Write, FileHandles: 8,
				ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: 9e11, Bytes: 1 << 20, Requests: 1, Window: time.Millisecond}
			b, _ := councilmsg.MarshalReport(councilmsg.Report{Instance: 1, Seq: seq + 1, Obs: o})
			return b
		}()},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			c := s.m.rejected.WithLabelValues(a.reason)
			n0 := testutil.ToFloat64(c)
			publish(t, nc, a.signer, a.subject, a.body)
			poll.Until(t, "the rejection counted as "+a.reason, 5*time.Second, func() bool { return testutil.ToFloat64(c) == n0+1 })
		})
	}
	if got := testutil.ToFloat64(s.m.reports); got != 9 {
		t.Errorf("reports accepted: %v, want the 9 genuine ones", got)
	}
	if _, n := dec.last(); n != 3 {
		t.Errorf("%d decisions, want 3: a forged report closed a round", n)
	}
	if st := s.Status(); st.Round != stBefore.Round || totalCount(st) != totalCount(stBefore) || st.Window != stBefore.Window {
		t.Errorf("learned state changed: round %d -> %d, counts %d -> %d", stBefore.Round, st.Round, totalCount(stBefore), totalCount(st))
	}
	after := persistedBytes(t, s, nc)
	if !bytes.Equal(before, after) {
		t.Errorf("persisted state changed by the attacks:\nbefore %s\nafter  %s", before, after)
	}
	if bytes.Contains(after, []byte("e+12")) || bytes.Contains(after, []byte("e+11")) {
		t.Errorf("a poisoned reward reached the persisted state: %s", after)
	}
}

// TestUnknownNodeWithoutKeyring: without a keyring, --nodes registers
// nodes 0..N-1 and a report from any other is refused, never learned.
func TestUnknownNodeWithoutKeyring(t *testing.T) {
	s := startService(t, Options{Core: council.Config{Nodes: 2}})
	defer s.Shutdown()
	nc := connect(t, s.ClientURL())
	c := s.m.rejected.WithLabelValues("unknown-node")
	publish(t, nc, nil, s.Subjects().Report(7), report(7, 1, time.Millisecond, 9e12))
	poll.Until(t, "node 7 refused", 5*time.Second, func() bool { return testutil.ToFloat64(c) == 1 })
	if st := s.Status(); st.Known != 2 || totalCount(st) != 0 {
		t.Errorf("known %d, counts %d: want 2 and 0", st.Known, totalCount(st))
	}
}

// TestDecisionsSignedAndStamped: a Council with keys signs every decision
// with its key, over the decision subject, and stamps it with its epoch and
// the time.
func TestDecisionsSignedAndStamped(t *testing.T) {
	url := openNATS(t)
	set, err := keyring.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	s := startService(t, Options{URL: url, Keys: Keys{Ring: &set.Ring, Signer: set.Council}, Core: council.Config{Nodes: 1}})
	defer s.Shutdown()
	nc := connect(t, url)
	msgs := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe(s.Subjects().Decision(), msgs); err != nil {
		t.Fatal(err)
	}
	publish(t, nc, set.Nodes[0], s.Subjects().Report(0), report(0, 1, time.Millisecond, 1e8))
	var m *nats.Msg
	select {
	case m = <-msgs:
	case <-time.After(10 * time.Second):
		t.Fatal("no decision")
	}
	if err := set.Ring.VerifyCouncil(m.Header, m.Subject, m.Data); err != nil {
		t.Fatalf("decision not signed by the Council: %v", err)
	}
	d, err := councilmsg.UnmarshalDecision(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if d.Epoch != s.epoch || time.Since(d.Time).Abs() > 5*time.Second {
		t.Errorf("stamp: epoch %x time %v; want epoch %x and about now", d.Epoch, d.Time, s.epoch)
	}
}

func TestKeysValidation(t *testing.T) {
	a, _ := keyring.Generate(1)
	b, _ := keyring.Generate(1)
	for _, k := range []Keys{{Ring: &a.Ring}, {Ring: &a.Ring, Signer: b.Council}, {Ring: &a.Ring, Signer: a.Nodes[0]}} {
		if _, err := New(Options{Keys: k}); err == nil || !strings.Contains(err.Error(), "seed") {
			t.Errorf("New with keys %+v: got %v, want an error about the Council's seed", k, err)
		}
	}
}

// TestAdmitter: the admission rules on their own, time passed in.
func TestAdmitter(t *testing.T) {
	obs := func(ivl time.Duration, bw float64, bytes, reqs int64) councilmsg.Report {
		return councilmsg.Report{Instance: 1, Seq: 1, Obs: access.Observation{Interval: ivl, Bandwidth: bw, Bytes: bytes, Requests: reqs, Op: rw.Write, ReqMin: 1, ReqMax: 1, ReqAvg: 1}}
	}
	ad := newAdmitter(Admission{Interval: time.Second, MaxBandwidth: 1e10, MaxRequestRate: 1e6}, nil, 4)
	tests := []struct {
		name   string
		r      councilmsg.Report
		reason string // "": admitted
	}{
		{"plausible", obs(time.Second, 5e9, 5e9, 1000), ""},
		{"idle", obs(time.Second, 0, 0, 0), ""},
		{"short interval (a decision cut it)", obs(10*time.Millisecond, 1e9, 1e7, 10), ""},
		{"over the ceiling", obs(time.Second, 2e10, 2e10, 10), "bandwidth"},
		{"bytes beyond the ceiling", obs(time.Second, 0, 2e10, 10), "bytes"},
		{"bandwidth not bytes over the interval", obs(time.Second, 5e9, 1, 10), "inconsistent"},
		{"too many requests", obs(time.Second, 1e3, 1e3, 2e6), "requests"},
		{"interval far longer than configured", obs(time.Hour, 1, 3600, 1), "interval"},
		{"activity in no time", obs(0, 0, 10, 1), "interval"},
	}
	now := time.Duration(0)
	for _, tt := range tests {
		now += time.Second // within the rate
		err := ad.admit(now, tt.r)
		if got := ""; err != nil {
			got = rejectReason(err)
			if got != tt.reason {
				t.Errorf("%s: rejected as %q (%v), want %q", tt.name, got, err, tt.reason)
			}
		} else if tt.reason != "" {
			t.Errorf("%s: admitted, want %q", tt.name, tt.reason)
		}
	}
	r := obs(time.Second, 0, 0, 0)
	r.Obs.Node = 4
	if err := ad.admit(now, r); rejectReason(err) != "unknown-node" {
		t.Errorf("node 4 of 4: %v, want unknown-node", err)
	}
	op := obs(time.Second, 1e6, 1e6, 1)
	op.Obs.OpBytes, op.Obs.OpSpan = 1e6, time.Nanosecond // 1e15 B/s while it ran
	if err := ad.admit(now+time.Second, op); rejectReason(err) != "bandwidth" {
		t.Errorf("operation bandwidth 1e15 B/s: %v, want bandwidth", err)
	}
}

// TestRateLimit: a node gets a burst of 8 reports, then 4 per interval.
func TestRateLimit(t *testing.T) {
	ad := newAdmitter(Admission{Interval: time.Second}, nil, 0)
	idle := councilmsg.Report{Instance: 1, Seq: 1, Obs: access.Observation{Node: 3, Interval: time.Second}}
	t0 := 10 * time.Second
	for i := range 8 {
		if err := ad.admit(t0, idle); err != nil {
			t.Fatalf("report %d of the burst: %v", i, err)
		}
	}
	if err := ad.admit(t0, idle); rejectReason(err) != "rate" {
		t.Fatalf("ninth report at once: %v, want rate", err)
	}
	other := idle
	other.Obs.Node = 4
	if err := ad.admit(t0, other); err != nil {
		t.Fatalf("another node is not limited by node 3: %v", err)
	}
	if err := ad.admit(t0+250*time.Millisecond, idle); err != nil {
		t.Fatalf("a quarter interval later a token is back: %v", err)
	}
	if err := ad.admit(t0+250*time.Millisecond, idle); rejectReason(err) != "rate" {
		t.Fatalf("and only one: %v", err)
	}
	for i := range 100 { // one report per interval, forever, is never limited
		if err := ad.admit(t0+time.Duration(i+1)*time.Second, idle); err != nil {
			t.Fatalf("steady report %d: %v", i, err)
		}
	}
}

// TestAdmitJobs: a report's jobs are bounded in number and id length and
// together claim no more than their node.
func TestAdmitJobs(t *testing.T) {
	node := access.Observation{Interval: time.Second, Bandwidth: 1e6, Bytes: 1e6, Requests: 100, Op: rw.Write, ReqMin: 1, ReqMax: 1e4, ReqAvg: 1e4}
	job := func(id string, bytes, reqs int64) councilmsg.Job {
		return councilmsg.Job{ID: id, Obs: access.Observation{Interval: time.Second, Bandwidth: float64(bytes), Bytes: bytes, Requests: reqs,
			Op: rw.Write, ReqMin: 1, ReqMax: 1e4, ReqAvg: 1e4, OpBytes: bytes, OpSpan: time.Second}}
	}
	report := func(jobs ...councilmsg.Job) councilmsg.Report {
		return councilmsg.Report{Instance: 1, Seq: 1, Obs: node, Jobs: jobs}
	}
	var many []councilmsg.Job
	for i := range 4 {
		many = append(many, job(fmt.Sprint("j", i), 10, 1))
	}
	ad := newAdmitter(Admission{Interval: time.Second, MaxJobs: 3, MaxJobID: 8}, nil, 0)
	for _, tt := range []struct {
		name   string
		r      councilmsg.Report
		reason string
	}{
		{"two jobs within the node", report(job("a", 6e5, 50), job("b", 4e5, 50)), ""},
		{"no jobs (an older Announcer)", report(), ""},
		{"bytes above the node's", report(job("a", 6e5, 50), job("b", 5e5, 10)), "jobs"},
		{"requests above the node's", report(job("a", 10, 60), job("b", 10, 60)), "jobs"},
		{"more than MaxJobs", report(many...), "jobs"},
		{"id longer than MaxJobID", report(job("123456789", 10, 1)), "jobs"},
		{"id with a space", report(job("a b", 10, 1)), "jobs"},
		{"same id twice", report(job("a", 10, 1), job("a", 10, 1)), "jobs"},
		{"another interval", func() councilmsg.Report {
			r := report(job("a", 10, 1))
			r.Jobs[0].Obs.Interval = 2 * time.Second
			return r
		}(), "jobs"},
	} {
		err := ad.bounds(tt.r)
		if got := rejectReason(err); err != nil && got != tt.reason || err == nil && tt.reason != "" {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.reason)
		}
	}
}
