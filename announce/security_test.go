package announce_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/internal/poll"
)

// rejected returns adaptio_announce_decisions_rejected_total{reason}.
func rejected(t *testing.T, g prometheus.Gatherer, reason string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "adaptio_announce_decisions_rejected_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no adaptio_announce_decisions_rejected_total{reason=%q}", reason)
	return 0
}

// TestDecisionAttacks: on an open NATS server, an Announcer holding the
// group's keyring applies the Council's signed decisions and refuses,
// counts, and ignores (window and round unchanged) a forged unsigned
// decision, one signed by a node's key, a genuine decision captured and
// replayed, a round far beyond what could have happened since, and a
// decision from the future.
func TestDecisionAttacks(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d := &daemon{}
	a, err := announce.New(announce.Options{URL: ns.ClientURL(), Node: 0, Interval: time.Hour, Default: time.Millisecond,
		Source: d, Applier: d, Keyring: &set.Ring, Signer: set.Nodes[0], Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	nc, err := nats.Connect(ns.ClientURL()) // anyone on the network
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subject := councilmsg.Subjects{Prefix: announce.DefaultPrefix}.Decision()
	send := func(sg *keyring.Signer, body []byte) *nats.Msg {
		t.Helper()
		m := &nats.Msg{Subject: subject, Data: body}
		if sg != nil {
			if m, err = sg.Msg(subject, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const epoch = 0x5eed
	genuine := func(round uint64, w time.Duration, at time.Time) []byte {
		return councilmsg.MarshalDecision(councilmsg.Decision{Round: round, Window: w, Prob: 1, Nodes: 2, Reason: "all", Epoch: epoch, Time: at.UTC()})
	}
	poll.Until(t, "connected", 5*time.Second, a.Connected)
	// Connected is not subscribed: wait until the server routes decisions
	// to the Announcer, or the first one may reach no one.
	poll.Until(t, "subscribed", 5*time.Second, func() bool {
		sz, err := ns.Subsz(&server.SubszOptions{Subscriptions: true, Test: subject})
		return err == nil && len(sz.Subs) > 0
	})

	// The Council's decision of round 40 is applied; it is captured.
	captured := send(set.Council, genuine(40, 2*time.Millisecond, time.Now()))
	poll.Until(t, "round 40 applied", 5*time.Second, func() bool { return a.Round() == 40 })
	send(set.Council, genuine(41, 4*time.Millisecond, time.Now().Add(time.Second)))
	poll.Until(t, "round 41 applied", 5*time.Second, func() bool { return a.Round() == 41 })

	attacks := []struct {
		name, reason string
		signer       *keyring.Signer
		body         []byte
		raw          *nats.Msg // re-published as is
	}{
		{"forged, unsigned", "unsigned", nil, []byte(`{"v":1,"round":999999999,"win_ns":8000000,"explore":false,"prob":1,"nodes":4,"reason":"all"}`), nil},
		{"signed by node 1's key", "key", set.Nodes[1], genuine(42, 8*time.Millisecond, time.Now().Add(time.Second)), nil},
		{"signed by the receiving node's own key", "key", set.Nodes[0], genuine(42, 8*time.Millisecond, time.Now().Add(time.Second)), nil},
		{"a genuine decision replayed", "replay", nil, nil, captured},
		{"a far-future round", "jump", set.Council, genuine(999999999, 8*time.Millisecond, time.Now().Add(2*time.Second)), nil},
		{"made an hour ahead", "future", set.Council, genuine(42, 8*time.Millisecond, time.Now().Add(time.Hour)), nil},
		{"made an hour ago", "stale", set.Council, genuine(42, 8*time.Millisecond, time.Now().Add(-time.Hour)), nil},
		{"unstamped, from the Council's key", "unstamped", set.Council,
			councilmsg.MarshalDecision(councilmsg.Decision{Round: 42, Window: 8 * time.Millisecond, Prob: 1, Reason: "all"}), nil},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			n0 := rejected(t, reg, at.reason)
			if at.raw != nil {
				if err := nc.PublishMsg(at.raw); err != nil {
					t.Fatal(err)
				}
			} else {
				send(at.signer, at.body)
			}
			poll.Until(t, "the rejection counted as "+at.reason, 5*time.Second, func() bool { return rejected(t, reg, at.reason) == n0+1 })
			if a.Round() != 41 || a.Window() != 4*time.Millisecond {
				t.Fatalf("after the attack: round %d window %v, want 41 and 4ms", a.Round(), a.Window())
			}
		})
	}
	// The Council's next decision still applies.
	send(set.Council, genuine(42, 500*time.Microsecond, time.Now().Add(3*time.Second)))
	poll.Until(t, "round 42 applied", 5*time.Second, func() bool { return a.Round() == 42 && a.Window() == 500*time.Microsecond })
}

// TestSignedEndToEnd: a Council with the group's keys on its embedded
// server and two Announcers with their node keys (which also authenticate
// them to NATS): reports are accepted, decisions applied, nothing is
// rejected, and an anonymous client cannot even connect.
func TestSignedEndToEnd(t *testing.T) {
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	creg := prometheus.NewRegistry()
	s, err := service.New(service.Options{Port: -1, Keys: service.Keys{Ring: &set.Ring, Signer: set.Council}, Registerer: creg,
		Core: council.Config{Nodes: 2, Detector: fpp{}, Timeout: time.Second}, Admission: service.Admission{Interval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to a Council with keys")
	}
	var anns []*announce.Announcer
	var regs []*prometheus.Registry
	for i := range 2 {
		reg := prometheus.NewRegistry()
		d := &daemon{}
		a, err := announce.New(announce.Options{URL: s.ClientURL(), Node: i, Interval: 50 * time.Millisecond, Source: d, Applier: d,
			Keyring: &set.Ring, Signer: set.Nodes[i], NATSOptions: []nats.Option{set.Nodes[i].NATSOption()}, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer a.Shutdown()
		anns, regs = append(anns, a), append(regs, reg)
	}
	poll.Until(t, "five rounds applied on both nodes", 20*time.Second, func() bool { return anns[0].Round() >= 5 && anns[1].Round() >= 5 })
	for i, reg := range regs {
		for _, r := range announce.RejectReasons {
			if n := rejected(t, reg, r); n != 0 {
				t.Errorf("node %d rejected %v genuine decisions as %s", i, n, r)
			}
		}
	}
	mfs, _ := creg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "adaptio_council_rejected_messages_total" {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() != 0 {
					t.Errorf("the Council rejected %v genuine reports (%v)", m.GetCounter().GetValue(), m.GetLabel())
				}
			}
		}
	}
}

// TestSignerMustBeTheNodes: a node given another node's seed is refused at
// New, saying which seed it needs.
func TestSignerMustBeTheNodes(t *testing.T) {
	set, _ := keyring.Generate(2)
	_, err := announce.New(announce.Options{URL: "nats://127.0.0.1:1", Node: 0, Source: &daemon{}, Keyring: &set.Ring, Signer: set.Nodes[1]})
	if err == nil {
		t.Fatal("node 0 accepted node 1's seed")
	}
}
