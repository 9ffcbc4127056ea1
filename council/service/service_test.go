package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// fpp is a detector for tests: every busy interval is FPP.
type fpp struct{}

func (fpp) Detect(access.Observation) (access.Class, [3]float64) {
	return access.FPP, [3]float64{1, 0, 0}
}

func startService(t *testing.T, o Options) *Service {
	t.Helper()
	o.Port = -1
	if o.Core.Detector == nil {
		o.Core.Detector = fpp{}
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if !s.Ready(5 * time.Second) {
		t.Fatal("service not ready")
	}
	return s
}

// node is a minimal test announcer on a raw connection.
type node struct {
	id   int
	seq  uint64
	nc   *nats.Conn
	subj councilmsg.Subjects
}

func (n *node) report(t *testing.T, w time.Duration, bw float64) {
	t.Helper()
	n.seq++
	o := access.Observation{Node: n.id, Interval: time.Second, Processes: 8, Op: rw.Write, FileHandles: 8,
		ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: bw, Bytes: int64(bw), Requests: 100, Window: w}
	b, err := councilmsg.MarshalReport(councilmsg.Report{Instance: uint64(n.id + 1), Seq: n.seq, Obs: o})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.nc.Publish(n.subj.Report(n.id), b); err != nil {
		t.Fatal(err)
	}
}

// decisions collects the decisions broadcast on s's group.
type decisions struct {
	mu  sync.Mutex
	got []councilmsg.Decision
}

func (d *decisions) last() (councilmsg.Decision, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		return councilmsg.Decision{}, 0
	}
	return d.got[len(d.got)-1], len(d.got)
}

func listen(t *testing.T, nc *nats.Conn, subj councilmsg.Subjects) *decisions {
	t.Helper()
	d := &decisions{}
	if _, err := nc.Subscribe(subj.Decision(), func(m *nats.Msg) {
		dec, err := councilmsg.UnmarshalDecision(m.Data)
		if err != nil {
			t.Errorf("bad decision %s: %v", m.Data, err)
			return
		}
		d.mu.Lock()
		d.got = append(d.got, dec)
		d.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return d
}

// runRounds has nodes report under the window in force and waits for each
// round's decision.
func runRounds(t *testing.T, nodes []*node, dec *decisions, rounds int) {
	t.Helper()
	for range rounds {
		last, n := dec.last()
		w := last.Window
		if n == 0 {
			w = sched.DefaultWindow
		}
		for i, nd := range nodes {
			nd.report(t, w, float64(1e8*(i+1))*(1+w.Seconds()*100))
		}
		poll.Until(t, "decision", 5*time.Second, func() bool { _, m := dec.last(); return m > n })
	}
}

func totalCount(st council.Status) (n int64) {
	for _, c := range st.Contexts {
		for _, x := range c.Counts {
			n += x
		}
	}
	return n
}

func connect(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestRestartResumesLearning kills the Council (Shutdown) and starts it again
// on the same state directory: the round counter, the value estimates and the
// counts continue where they stopped.
func TestRestartResumesLearning(t *testing.T) {
	dir := t.TempDir()
	var logbuf bytes.Buffer
	opts := Options{StateDir: dir, Prefix: "adaptio.g1", Core: council.Config{Nodes: 2, Credit: council.CreditRound}, Seed: 3, DecisionLog: &logbuf}

	started := time.Now()
	s1 := startService(t, opts)
	nc := connect(t, s1.ClientURL())
	nodes := []*node{{id: 0, nc: nc, subj: s1.Subjects()}, {id: 1, nc: nc, subj: s1.Subjects()}}
	dec := listen(t, nc, s1.Subjects())
	runRounds(t, nodes, dec, 10)
	ended := time.Now()
	before := s1.Status()
	// Both nodes run one window on one pattern: a round credits it once.
	if before.Round != 10 || totalCount(before) != 10 {
		t.Fatalf("before restart: round %d, %d rewards; want 10 rounds, 10 rewards", before.Round, totalCount(before))
	}
	// Persisted after every round, before any shutdown (a SIGKILL loses
	// at most the round in flight): the bucket already holds round 10.
	poll.Until(t, "state persisted", 5*time.Second, func() bool {
		return readPersisted(t, nc, s1.opts.Bucket).Round == 10
	})
	s1.Shutdown()
	if lines := strings.Count(logbuf.String(), "\n"); lines != 10 {
		t.Fatalf("decision log has %d lines, want 10", lines)
	}
	var first council.Decision
	if err := json.Unmarshal([]byte(strings.SplitN(logbuf.String(), "\n", 2)[0]), &first); err != nil || first.Round != 1 || len(first.Nodes) != 2 || first.Nodes[1].Pattern != "FPP" {
		t.Fatalf("first decision log line: %+v (%v)", first, err)
	}
	// Each line carries the wall-clock time of its round's close, in
	// order, within the run.
	var prev time.Time
	for i, line := range strings.Split(strings.TrimSpace(logbuf.String()), "\n") {
		var w struct {
			Wall time.Time `json:"wall"`
		}
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("decision log line %d: %v", i+1, err)
		}
		if w.Wall.Before(started.Add(-time.Second)) || w.Wall.After(ended.Add(time.Second)) || w.Wall.Before(prev) || w.Wall.Location() != time.UTC {
			t.Fatalf("decision log line %d: wall %v, want UTC, in order, within [%v, %v]", i+1, w.Wall, started, ended)
		}
		prev = w.Wall
	}

	opts.DecisionLog = nil
	s2 := startService(t, opts)
	defer s2.Shutdown()
	after := s2.Status()
	if after.Round != before.Round || after.Window != before.Window || len(after.Contexts) != len(before.Contexts) {
		t.Fatalf("after restart: %+v, want %+v", after, before)
	}
	for i := range before.Contexts {
		b, a := before.Contexts[i], after.Contexts[i]
		if b.Context != a.Context || !slices.Equal(b.Values, a.Values) || !slices.Equal(b.Counts, a.Counts) {
			t.Fatalf("context %d after restart %+v, want %+v", i, a, b)
		}
	}
	nc2 := connect(t, s2.ClientURL())
	for _, n := range nodes {
		n.nc = nc2
	}
	dec2 := listen(t, nc2, s2.Subjects())
	dec2.got = append(dec2.got, councilmsg.Decision{Round: before.Round, Window: before.Window})
	runRounds(t, nodes, dec2, 5)
	st := s2.Status()
	if st.Round != 15 || totalCount(st) != 15 {
		t.Fatalf("after 5 more rounds: round %d, %d rewards; want 15, 15", st.Round, totalCount(st))
	}
	if d, _ := dec2.last(); d.Round != 15 {
		t.Fatalf("last broadcast round %d, want 15", d.Round)
	}
}

func TestBadInputRejectedAndCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := startService(t, Options{Core: council.Config{Nodes: 1}, Registerer: reg, HTTPAddr: "127.0.0.1:0"})
	defer s.Shutdown()
	nc := connect(t, s.ClientURL())
	subj := s.Subjects()
	good, _ := councilmsg.MarshalReport(councilmsg.Report{Instance: 1, Seq: 1, Obs: access.Observation{Node: 0, Interval: time.Second}})
	bad := []struct {
		reason, subject string
		data            []byte
	}{
		{"malformed", subj.Report(0), []byte("node=0 bw=12")},
		{"malformed", subj.Report(0), []byte{0xff, 0xfe, '{'}},
		{"oversized", subj.Report(0), bytes.Repeat([]byte(" "), councilmsg.MaxSize+1)},
		{"version", subj.Report(0), bytes.Replace(good, []byte(`"v":1`), []byte(`"v":9`), 1)},
		{"invalid", subj.Report(0), bytes.Replace(good, []byte(`"bytes":0`), []byte(`"bytes":-5`), 1)},
		{"subject", subj.Report(1), good},
		{"subject", subj.Prefix + ".report.zero", good},
	}
	for _, b := range bad {
		if err := nc.Publish(b.subject, b.data); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]float64{}
	for _, b := range bad {
		want[b.reason]++
	}
	poll.Until(t, "rejections counted", 5*time.Second, func() bool {
		for r, n := range want {
			if testutil.ToFloat64(s.m.rejected.WithLabelValues(r)) != n {
				return false
			}
		}
		return true
	})
	if st := s.Status(); st.Round != 0 || len(st.Contexts) != 0 {
		t.Fatalf("bad input changed the state: %+v", st)
	}
	// The Council still works, and a replayed report is rejected as stale.
	dec := listen(t, nc, subj)
	nc.Publish(subj.Report(0), good)
	nc.Publish(subj.Report(0), good)
	poll.Until(t, "decision after bad input", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })
	poll.Until(t, "stale counted", 5*time.Second, func() bool { return testutil.ToFloat64(s.m.rejected.WithLabelValues("stale")) == 1 })

	// HTTP endpoints.
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body := get("/metrics")
	for _, w := range []string{`adaptio_council_rejected_messages_total{reason="malformed"} 2`, `adaptio_council_rounds_total{reason="all"} 1`, "adaptio_council_reports_total 1"} {
		if code != 200 || !strings.Contains(body, w) {
			t.Errorf("/metrics (%d) lacks %q", code, w)
		}
	}
	code, body = get("/status")
	var st struct {
		Prefix string `json:"prefix"`
		Round  uint64 `json:"round"`
		Window int64  `json:"win_ns"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.Round != 1 || st.Prefix != DefaultPrefix || st.Window <= 0 {
		t.Errorf("/status: %d %v %+v\n%s", code, err, st, body)
	}
}

func TestDeadNodeRoundClosesAtDeadline(t *testing.T) {
	s := startService(t, Options{Core: council.Config{Nodes: 3, Timeout: 100 * time.Millisecond}})
	defer s.Shutdown()
	nc := connect(t, s.ClientURL())
	dec := listen(t, nc, s.Subjects())
	nodes := []*node{{id: 0, nc: nc, subj: s.Subjects()}, {id: 1, nc: nc, subj: s.Subjects()}}
	start := time.Now()
	for _, n := range nodes {
		n.report(t, sched.DefaultWindow, 1e8)
	}
	poll.Until(t, "decision at deadline", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })
	d, _ := dec.last()
	if d.Reason != "deadline" || d.Nodes != 2 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("got %+v after %v, want closed by the deadline (100ms) with 2 nodes", d, time.Since(start))
	}
	want := `
# HELP adaptio_council_rounds_total Rounds closed, by reason (all: every known node reported; deadline).
# TYPE adaptio_council_rounds_total counter
adaptio_council_rounds_total{reason="all"} 0
adaptio_council_rounds_total{reason="deadline"} 1
`
	if err := testutil.CollectAndCompare(s.m.rounds, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestGroupsAreIndependent(t *testing.T) {
	a := startService(t, Options{Prefix: "adaptio.a", Core: council.Config{Nodes: 1}})
	defer a.Shutdown()
	// A second Council on the same NATS server, another group.
	b, err := New(Options{URL: a.ClientURL(), Prefix: "adaptio.b", Core: council.Config{Nodes: 1, Detector: fpp{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	nc := connect(t, a.ClientURL())
	da, db := listen(t, nc, a.Subjects()), listen(t, nc, b.Subjects())
	n := &node{id: 0, nc: nc, subj: b.Subjects()}
	n.report(t, sched.DefaultWindow, 1e8)
	poll.Until(t, "group b decision", 5*time.Second, func() bool { _, k := db.last(); return k == 1 })
	if _, k := da.last(); k != 0 || a.Status().Round != 0 {
		t.Fatalf("group a saw group b's report")
	}
}

func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	seedFile := filepath.Join(dir, "council.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	nodeKP, _ := nodeKeys(t, dir)
	s := startService(t, Options{Core: council.Config{Nodes: 1}, Security: Security{
		User: "ops", Password: "s3cret", NKeySeedFile: seedFile, AllowNKeys: []string{nodeKP.pub},
	}})
	defer s.Shutdown()
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted")
	}
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("ops", "wrong")); err == nil {
		nc.Close()
		t.Fatal("wrong password accepted")
	}
	pw := connect(t, s.ClientURL(), nats.UserInfo("ops", "s3cret"))
	opt, err := Security{NKeySeedFile: nodeKP.seedFile}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	nk := connect(t, s.ClientURL(), opt...)
	dec := listen(t, pw, s.Subjects())
	(&node{id: 0, nc: nk, subj: s.Subjects()}).report(t, sched.DefaultWindow, 1e8)
	poll.Until(t, "decision over authenticated connections", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })

	// An I/O node's key has the node role: it cannot publish a decision
	// (the server drops it and tells the client) nor read other nodes'
	// reports.
	violations := make(chan error, 4)
	nk2 := connect(t, s.ClientURL(), append(opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))...)
	forged := councilmsg.MarshalDecision(councilmsg.Decision{Round: 999, Window: 8 * time.Millisecond, Prob: 1, Nodes: 1, Reason: "all"})
	if err := nk2.Publish(s.Subjects().Decision(), forged); err != nil {
		t.Fatal(err)
	}
	if _, err := nk2.Subscribe(s.Subjects().Reports(), func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	_ = nk2.Flush()
	for i := range 2 {
		select {
		case err := <-violations:
			if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Errorf("violation %d: %v, want a permissions violation", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("an I/O node's key published a decision or subscribed to reports without a permissions violation (%d of 2 seen)", i)
		}
	}
	if _, n := dec.last(); n != 1 {
		t.Fatalf("%d decisions seen, want the Council's 1 (a forged one got through)", n)
	}
}

type nodeKey struct{ pub, seedFile string }

func nodeKeys(t *testing.T, dir string) (nodeKey, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f := filepath.Join(dir, "node.nk")
	if err := os.WriteFile(f, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return nodeKey{pub: pub, seedFile: f}, nil
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Prefix: "a.*"},
		{Prefix: "a..b"},
		{Bucket: "no.dots"},
		{Port: 70000},
		{Security: Security{Password: "x"}},
		{Core: council.Config{Consensus: "dictator"}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// readPersisted reads the learned state from the KV bucket as a client
// would, and restores it into a fresh core (the zero Status while nothing
// can be read yet).
func readPersisted(t *testing.T, nc *nats.Conn, bucket string) council.Status {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		// A cluster still electing the bucket's leader answers late:
		// nothing persisted yet, as for a missing key; callers poll.
		return council.Status{}
	}
	e, err := kv.Get(ctx, stateKey)
	if err != nil {
		return council.Status{}
	}
	c, err := council.New(council.Config{Detector: fpp{}}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(e.Value()); err != nil {
		t.Fatal(err)
	}
	return c.Status()
}

// TestFailedStartKeepsState: a Council that cannot restore the stored state
// (here: another window set) refuses to start and leaves the state intact.
func TestFailedStartKeepsState(t *testing.T) {
	dir := t.TempDir()
	opts := Options{StateDir: dir, Core: council.Config{Nodes: 1, Credit: council.CreditRound}}
	s1 := startService(t, opts)
	nc := connect(t, s1.ClientURL())
	dec := listen(t, nc, s1.Subjects())
	runRounds(t, []*node{{id: 0, nc: nc, subj: s1.Subjects()}}, dec, 3)
	s1.Shutdown()

	bad := opts
	bad.Port = -1
	bad.Core.Windows, bad.Core.Default = sched.Windows[:3], sched.Windows[0]
	bad.Core.Detector = fpp{}
	s2, err := New(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); !errors.Is(err, council.ErrSnapshot) {
		t.Fatalf("Start with another window set: %v, want ErrSnapshot", err)
	}
	s3 := startService(t, opts)
	defer s3.Shutdown()
	if st := s3.Status(); st.Round != 3 || totalCount(st) != 3 {
		t.Fatalf("state after a failed start: round %d, %d rewards; want 3, 3", st.Round, totalCount(st))
	}
}
