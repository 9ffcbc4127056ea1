package announce_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/rw"
)

// daemon is a stand-in forwarding daemon: busy FPP writes whose bandwidth
// depends on the window, and a record of the windows applied.
type daemon struct {
	mu      sync.Mutex
	window  time.Duration
	applied []time.Duration
	fail    bool
}

func (d *daemon) CloseInterval(now time.Time) access.Observation {
	d.mu.Lock()
	defer d.mu.Unlock()
	bw := 1e8 / (1 + d.window.Seconds()*1000)
	return access.Observation{Interval: 50 * time.Millisecond, Processes: 4, Op: rw.Write, FileHandles: 4,
		ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: bw, Bytes: int64(bw * 0.05), Requests: 10, Window: d.window}
}

func (d *daemon) ApplyWindow(w time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return errors.New("refused")
	}
	d.window = w
	d.applied = append(d.applied, w)
	return nil
}

func (d *daemon) nApplied() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.applied)
}

type fpp struct{}

func (fpp) Detect(access.Observation) (access.Class, [3]float64) {
	return access.FPP, [3]float64{1, 0, 0}
}

func startCouncil(t *testing.T, port int, dir string) *service.Service {
	t.Helper()
	s, err := service.New(service.Options{Port: port, StateDir: dir, Core: council.Config{Nodes: 2, Detector: fpp{}, Timeout: 30 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func port(t *testing.T, s *service.Service) int {
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// TestReconnectKeepsWindow runs two Announcers against a Council, stops
// the Council (and its embedded NATS server), checks that they keep the
// window in force and drop reports, then starts the Council again on the
// same port and checks that decisions resume without intervention.
func TestReconnectKeepsWindow(t *testing.T) {
	dir := t.TempDir()
	s := startCouncil(t, -1, dir)
	p := port(t, s)
	reg := prometheus.NewRegistry()
	var ds [2]*daemon
	var as [2]*announce.Announcer
	for i := range as {
		ds[i] = &daemon{}
		var r prometheus.Registerer
		if i == 0 {
			r = reg
		}
		a, err := announce.New(announce.Options{URL: s.ClientURL(), Node: i, Interval: 50 * time.Millisecond,
			Default: 2 * time.Millisecond, Source: ds[i], Applier: ds[i], Registerer: r})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer a.Shutdown()
		as[i] = a
	}
	if w := as[0].Window(); w != 2*time.Millisecond {
		t.Fatalf("window before any decision %v, want the default 2ms", w)
	}
	poll.Until(t, "decisions", 5*time.Second, func() bool { return as[0].Round() >= 5 && as[1].Round() >= 5 })
	s.Shutdown()
	poll.Until(t, "disconnect", 5*time.Second, func() bool { return !as[0].Connected() })
	kept, round := as[0].Window(), as[0].Round()
	applied := ds[0].nApplied()
	poll.Until(t, "dropped reports while down", 5*time.Second, func() bool {
		return value(t, reg, "adaptio_announce_dropped_reports_total") >= 2
	})
	if as[0].Window() != kept || ds[0].nApplied() != applied {
		t.Fatalf("window changed while the Council was down: %v -> %v", kept, as[0].Window())
	}

	s2 := startCouncil(t, p, dir)
	defer s2.Shutdown()
	poll.Until(t, "reconnect and new decisions", 10*time.Second, func() bool {
		return as[0].Connected() && as[0].Round() > round+2 && as[1].Round() > round+2
	})
	if got := s2.Status().Round; got < round {
		t.Fatalf("restarted Council at round %d, want >= %d (resumed from KV)", got, round)
	}
}

// value returns the value of the counter or gauge name in g (0 if absent).
func value(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return 0
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestStartsBeforeCouncil: an Announcer started while no server is up
// applies its default window, keeps it, and joins once the Council starts.
func TestStartsBeforeCouncil(t *testing.T) {
	p := freePort(t)
	d := &daemon{}
	a, err := announce.New(announce.Options{URL: fmt.Sprintf("nats://127.0.0.1:%d", p), Node: 0,
		Interval: 20 * time.Millisecond, Default: 4 * time.Millisecond, Source: d, Applier: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	if a.Connected() || a.Window() != 4*time.Millisecond || d.nApplied() != 1 {
		t.Fatalf("connected=%v window=%v applied=%d, want disconnected with the default 4ms applied once", a.Connected(), a.Window(), d.nApplied())
	}
	s, err := service.New(service.Options{Port: p, Core: council.Config{Nodes: 1, Detector: fpp{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	poll.Until(t, "first decision", 10*time.Second, func() bool { return a.Round() >= 1 })
}

func TestApplierErrorKeepsWindow(t *testing.T) {
	s, err := service.New(service.Options{Port: -1, Core: council.Config{Nodes: 1, Detector: fpp{}, Default: 8 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	d := &daemon{fail: true}
	reg := prometheus.NewRegistry()
	a, _ := announce.New(announce.Options{URL: s.ClientURL(), Interval: 10 * time.Millisecond, Source: d, Applier: d, Registerer: reg})
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	poll.Until(t, "refused decisions", 5*time.Second, func() bool { return value(t, reg, "adaptio_announce_apply_errors_total") >= 1 })
	if a.Window() != 0 {
		t.Fatalf("window %v after the Applier refused, want unchanged (0)", a.Window())
	}
}

func TestOptionsValidation(t *testing.T) {
	d := &daemon{}
	for _, o := range []announce.Options{
		{URL: "nats://x"},
		{Source: d},
		{URL: "nats://x", Source: d, Node: -1},
		{URL: "nats://x", Source: d, Interval: -time.Second},
		{URL: "nats://x", Source: d, Prefix: "a.>"},
	} {
		if _, err := announce.New(o); !errors.Is(err, announce.ErrBadOptions) {
			t.Errorf("New(%+v): %v, want ErrBadOptions", o, err)
		}
	}
}

// namedDaemon is a daemon that says which algorithm it runs.
type namedDaemon struct{ daemon }

func (*namedDaemon) Scheduler() string { return "to-agg" }

// A Source that names its scheduler has it in its reports, and the
// Council's status shows it for the node.
func TestReportsNameTheScheduler(t *testing.T) {
	s := startCouncil(t, -1, t.TempDir())
	defer s.Shutdown()
	d := &namedDaemon{}
	a, err := announce.New(announce.Options{URL: s.ClientURL(), Node: 1, Interval: 20 * time.Millisecond, Source: d, Applier: d, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	poll.Until(t, "the Council's status to name node 1's scheduler", 5*time.Second, func() bool {
		for _, n := range s.Status().Nodes {
			if n.Node == 1 && n.Scheduler == "to-agg" {
				return true
			}
		}
		return false
	})
}

// planDaemon is a daemon that follows plans (announce.PlanApplier).
type planDaemon struct {
	daemon
	plans [][3]time.Duration // window, read, write of each ApplyPlan
}

func (d *planDaemon) ApplyPlan(w, read, write time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.window = w
	d.plans = append(d.plans, [3]time.Duration{w, read, write})
	return nil
}

// A PlanApplier gets each decision's plan beside its window (the writes
// the stand-in daemon reports are FPP: the plan has a write window, the
// decision's own, and none for reads, never seen); a plain Applier keeps
// getting the window only.
func TestPlanApplierGetsThePlan(t *testing.T) {
	s, err := service.New(service.Options{Port: -1, Core: council.Config{Nodes: 1, Detector: fpp{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	d := &planDaemon{}
	a, _ := announce.New(announce.Options{URL: s.ClientURL(), Interval: 10 * time.Millisecond, Source: d, Applier: d, Registerer: prometheus.NewRegistry()})
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	poll.Until(t, "plans applied", 5*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.plans) >= 3
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.applied); n != 0 {
		t.Fatalf("ApplyWindow called %d times on a PlanApplier", n)
	}
	for _, p := range d.plans[1:] { // the first may precede any report: no plan yet
		if p[1] != 0 || p[2] != p[0] {
			t.Fatalf("applied plan %v, want window w, read 0, write w", p)
		}
	}
}
