package main

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/selection"
)

// groupNode is one "adaptio forward --scheduler dynamic --council" in a
// test: a real daemon over a POSIX backend, its dynamic selection (settle,
// periods of 20 ms) and its Announcer (reports every 50 ms), started as
// runForward starts them, and a client writing through it until the test
// ends.
type groupNode struct {
	d   *fwd.Daemon
	ds  *daemonSelection
	reg *prometheus.Registry
}

func startGroupNode(t *testing.T, url string, node int, names []string, ring *keyring.Keyring, signer *keyring.Signer) *groupNode {
	t.Helper()
	const period, interval = 20 * time.Millisecond, 50 * time.Millisecond
	rng := rand.New(rand.NewPCG(uint64(node), 5))
	dr, err := selection.NewDriver(selection.DriverConfig{Bandit: selection.BanditConfig{Schedulers: names}, Period: period,
		Policy: selection.PolicySettle, Start: selectionNow(time.Now()).Truncate(period)}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	d, f := selectionDaemon(t, fwd.Options{Scheduler: dr.Current(0), Observe: true}, "group.dat")
	g := &groupNode{d: d, ds: &daemonSelection{dr: dr, follow: true, lapse: 3 * interval}, reg: prometheus.NewRegistry()}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g.ds.start(d, names, period, log, g.reg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		runSelection(ctx, d, g.ds, period, rng, log, g.reg, names)
	}()
	go func() { // a steady writer: 64 KiB blocks over 16 MiB, again and again
		defer wg.Done()
		buf := make([]byte, 64<<10)
		for off := int64(0); ctx.Err() == nil; off = (off + int64(len(buf))) % (16 << 20) {
			if _, err := f.WriteAt(buf, off); err != nil {
				return
			}
		}
	}()
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	cmd.SetErr(io.Discard)
	stop, err := startAnnouncer(cmd, forwardConfig{Council: url, CouncilPrefix: announce.DefaultPrefix, Node: node, Interval: interval, Scheduler: "dynamic"},
		d, g.ds, log, g.reg, ring, signer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); cancel(); wg.Wait() })
	return g
}

// group is the Council's algorithm the node follows ("": it chooses alone).
func (g *groupNode) group() string {
	g.ds.mu.Lock()
	defer g.ds.mu.Unlock()
	return g.ds.group
}

// counter is the value of the counter name{label=value} in reg.
func counter(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && (value == "" || l.GetValue() == value) {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// Two daemons with --scheduler dynamic and a Council: both run the
// algorithm the Council chooses for the group, switching as its decisions
// arrive (counted with source council), until the group's choice settles;
// with the Council gone, each chooses alone again (its own chooser decides
// once more, counted with source local).
func TestForwardFollowsTheCouncilsGroupChoice(t *testing.T) {
	names := []string{"mlf", "to-agg", "sjf", "to", "noop"}
	c, err := service.New(service.Options{Port: -1, StateDir: t.TempDir(), Core: council.Config{Nodes: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Shutdown()
		}
	}()
	nodes := []*groupNode{startGroupNode(t, c.ClientURL(), 0, names, nil, nil), startGroupNode(t, c.ClientURL(), 1, names, nil, nil)}
	var last council.Decision
	poll.Until(t, "the group's choice settled and both daemons running it", 20*time.Second, func() bool {
		last = c.LastDecision()
		if last.Select == nil || last.Select.Reason != "settled" {
			return false
		}
		for _, n := range nodes {
			if n.d.Scheduler() != last.Select.Scheduler || n.group() != last.Select.Scheduler {
				return false
			}
		}
		return true
	})
	t.Logf("settled on %s after %d rounds (estimates %v)", last.Select.Scheduler, last.Round, last.Select.Estimates)
	if st := c.Status(); st.GroupScheduler != last.Select.Scheduler || len(st.GroupNodes) != 2 {
		t.Errorf("status: group scheduler %q on nodes %v", st.GroupScheduler, st.GroupNodes)
	}
	for i, n := range nodes {
		if got := counter(t, n.reg, "adaptio_fwd_scheduler_changes_total", "source", sourceCouncil); got < 3 {
			t.Errorf("node %d: %v changes from the Council, want at least 3 (the group explored)", i, got)
		}
	}

	// The Council gone: after 3 periods without a decision naming an
	// algorithm, each daemon chooses alone again.
	local := make([]float64, len(nodes))
	for i, n := range nodes {
		local[i] = counter(t, n.reg, "adaptio_fwd_selection_decisions_total", "reason", "")
	}
	c.Shutdown()
	stopped = true
	for i, n := range nodes {
		poll.Until(t, "the daemon choosing alone again", 5*time.Second, func() bool {
			return n.group() == "" && counter(t, n.reg, "adaptio_fwd_selection_decisions_total", "reason", "") > local[i]
		})
	}
}

// With keys, a decision's algorithm is applied only when the Council
// signed it: a forged decision naming one, unsigned or signed by a node's
// key, is refused by the Announcer's guard and never runs.
func TestForwardRefusesAForgedGroupChoice(t *testing.T) {
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
	// A server that admits the Council and both nodes with every right:
	// node 1, compromised or misconfigured, can publish decisions.
	var users []*server.NkeyUser
	for _, sg := range []*keyring.Signer{set.Council, set.Nodes[0], set.Nodes[1]} {
		users = append(users, &server.NkeyUser{Nkey: sg.PublicKey()})
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir(), Nkeys: users})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	// The Council chooses between mlf and sjf; the forger names noop.
	c, err := service.New(service.Options{URL: ns.ClientURL(), Keys: service.Keys{Ring: &set.Ring, Signer: set.Council},
		Security: service.Security{NKeySeedFile: filepath.Join(dir, keyring.CouncilSeed)},
		Core:     council.Config{Nodes: 1, Select: council.SelectConfig{Schedulers: []string{"mlf", "sjf"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	n := startGroupNode(t, ns.ClientURL(), 0, []string{"mlf", "sjf", "noop"}, &set.Ring, set.Nodes[0])
	poll.Until(t, "the daemon following the Council's signed choice", 10*time.Second, func() bool { return n.group() != "" })

	nc, err := nats.Connect(ns.ClientURL(), set.Nodes[1].NATSOption())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject := councilmsg.Subjects{Prefix: announce.DefaultPrefix}.Decision()
	before := counter(t, n.reg, "adaptio_announce_decisions_rejected_total", "reason", "")
	for i := range 10 {
		last := c.LastDecision()
		body := councilmsg.MarshalDecision(councilmsg.Decision{Round: last.Round + 1, Window: time.Millisecond, Prob: 1, Nodes: 1, Reason: "all",
			Epoch: 1, Time: time.Now().UTC(), Scheduler: "noop"})
		msg := &nats.Msg{Subject: subject, Data: body}
		if i%2 == 1 { // signed, but by a node's key
			if msg, err = set.Nodes[1].Msg(subject, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if s := n.d.Scheduler(); s == "noop" {
			t.Fatalf("forged decision %d applied: the daemon runs %s", i, s)
		}
	}
	poll.Until(t, "the forged decisions counted as rejected", 5*time.Second, func() bool {
		return counter(t, n.reg, "adaptio_announce_decisions_rejected_total", "reason", "")-before >= 10
	})
	if g := n.group(); g == "noop" {
		t.Fatalf("the daemon follows the forged choice %q", g)
	}
}
