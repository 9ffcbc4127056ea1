package council

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"pgregory.net/rapid"
)

// classByHandles is a test detector: the pattern is encoded in FileHandles
// (1 FPP, 2 SC, 3 SS, anything else unknown).
type classByHandles struct{}

func (classByHandles) Detect(o access.Observation) (access.Class, [3]float64) {
	var p [3]float64
	if o.FileHandles >= 1 && o.FileHandles <= 3 {
		p[o.FileHandles-1] = 1
		return access.Classes[o.FileHandles-1], p
	}
	return access.Unknown, p
}

// obs returns a busy observation of node under window w with pattern class.
func obs(node int, class access.Class, op rw.Op, w time.Duration, bw float64) access.Observation {
	return access.Observation{
		Node: node, Interval: time.Second, DataServers: 4, Clients: 8, Processes: 64, Op: op,
		FileHandles: int(class), ReqAvg: 32768, ReqMin: 32768, ReqMax: 32768, Bandwidth: bw,
		Bytes: int64(bw), Requests: int64(bw / 32768), Window: w,
	}
}

type reporter struct {
	seq map[int]uint64
}

func (r *reporter) report(o access.Observation, round uint64) Report {
	if r.seq == nil {
		r.seq = map[int]uint64{}
	}
	r.seq[o.Node]++
	return Report{Instance: uint64(o.Node) + 100, Seq: r.seq[o.Node], Round: round, Obs: o}
}

func newCouncil(t *testing.T, cfg Config) *Council {
	t.Helper()
	if cfg.Detector == nil {
		cfg.Detector = classByHandles{}
	}
	c, err := New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustObserve(t *testing.T, c *Council, now time.Duration, r Report) {
	t.Helper()
	if err := c.Observe(now, r); err != nil {
		t.Fatalf("Observe(node %d): %v", r.Obs.Node, err)
	}
}

func TestRoundClosesWhenAllKnownNodesReport(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 3, Policy: "greedy"})
	var rp reporter
	w := c.Window()
	for n := range 2 {
		mustObserve(t, c, time.Duration(n)*time.Millisecond, rp.report(obs(n, access.SS, rw.Write, w, 1e8), 0))
		if _, ok, wake := c.Poll(time.Duration(n) * time.Millisecond); ok || wake != DefaultTimeout {
			t.Fatalf("after %d of 3 reports: ok=%v wake=%v, want not due until %v", n+1, ok, wake, DefaultTimeout)
		}
	}
	mustObserve(t, c, 3*time.Millisecond, rp.report(obs(2, access.SS, rw.Write, w, 1e8), 0))
	d, ok, _ := c.Poll(3 * time.Millisecond)
	if !ok || d.Reason != "all" || d.Round != 1 || len(d.Nodes) != 3 || d.Voters != 3 || len(d.Missing) != 0 {
		t.Fatalf("got ok=%v %+v, want round 1 closed by all 3 nodes", ok, d)
	}
	if _, ok, wake := c.Poll(4 * time.Millisecond); ok || wake != 0 {
		t.Fatalf("empty round: ok=%v wake=%v, want nothing to do", ok, wake)
	}
}

func TestDeadNodeDoesNotStall(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 3, Timeout: 200 * time.Millisecond, Forget: 2, Policy: "greedy"})
	var rp reporter
	now := time.Duration(0)
	for round := uint64(1); round <= 3; round++ {
		now = time.Duration(round) * time.Second
		for n := range 2 { // node 2 is dead
			mustObserve(t, c, now, rp.report(obs(n, access.FPP, rw.Read, c.Window(), 1e8), round-1))
		}
		d, ok, wake := c.Poll(now)
		if round <= 2 {
			if ok || wake != now+200*time.Millisecond {
				t.Fatalf("round %d: closed=%v wake=%v before the deadline", round, ok, wake)
			}
			d, ok, _ = c.Poll(wake)
			if !ok || d.Reason != "deadline" || !slices.Equal(d.Missing, []int{2}) {
				t.Fatalf("round %d at deadline: ok=%v %+v, want closed by deadline missing [2]", round, ok, d)
			}
			continue
		}
		// Node 2 missed Forget=2 rounds: forgotten, rounds close at once.
		if !ok || d.Reason != "all" || c.Known() != 2 {
			t.Fatalf("round %d: ok=%v reason=%q known=%d, want closed by all, 2 known", round, ok, d.Reason, c.Known())
		}
	}
	// The dead node comes back: known again.
	mustObserve(t, c, now+time.Second, rp.report(obs(2, access.FPP, rw.Read, c.Window(), 1e8), 3))
	if c.Known() != 3 {
		t.Fatalf("known = %d after node 2 returned, want 3", c.Known())
	}
}

func TestRewardCreditedToWindowInForce(t *testing.T) {
	c := newCouncil(t, Config{Policy: "greedy", Credit: CreditRound})
	var rp reporter
	w250 := 250 * time.Microsecond
	// The node's pattern just changed to SC and it still ran 250us (an older
	// decision): the reward goes to (SC, write, 250us), whatever the Council
	// decided last.
	mustObserve(t, c, 0, rp.report(obs(0, access.SC, rw.Write, w250, 3e8), 0))
	if _, ok, _ := c.Poll(time.Hour); !ok { // the round closes at its deadline, crediting it
		t.Fatal("round not closed at its deadline")
	}
	st := c.Status()
	if len(st.Contexts) != 1 || st.Contexts[0].Context != "SC/write" {
		t.Fatalf("contexts %+v, want only SC/write", st.Contexts)
	}
	a := slices.Index(sched.Windows, w250)
	if got := st.Contexts[0].Counts[a]; got != 1 || st.Contexts[0].Values[a] != 3e8 {
		t.Fatalf("SC/write[250us]: count %d value %v, want 1, 3e8", got, st.Contexts[0].Values[a])
	}
}

func TestIdleAndForeignWindowTeachNothing(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 2, Policy: "greedy"})
	var rp reporter
	idle := access.Observation{Node: 0, Interval: time.Second, Window: c.Window()}
	mustObserve(t, c, 0, rp.report(idle, 0))
	foreign := obs(1, access.SS, rw.Read, 3*time.Millisecond, 5e8) // not an arm
	mustObserve(t, c, 0, rp.report(foreign, 0))
	d, ok, _ := c.Poll(0)
	if !ok || d.Reason != "all" {
		t.Fatalf("idle node must count as reported: ok=%v %+v", ok, d)
	}
	for _, cs := range c.Status().Contexts {
		for a, n := range cs.Counts {
			if n != 0 {
				t.Errorf("context %s arm %d has %d rewards, want none", cs.Context, a, n)
			}
		}
	}
	if !d.Nodes[0].Idle || d.Nodes[1].Credited {
		t.Errorf("node reports %+v: want node 0 idle, node 1 not credited", d.Nodes)
	}
}

// The tail of a phase: bytes still completing, but no request received in
// the interval. Its features are all zero and its operation unknown, so it
// must not invent a context (it once created "SS/op(0)").
func TestTailIntervalTeachesNothing(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Policy: "greedy"})
	var rp reporter
	tail := access.Observation{Node: 0, Interval: time.Second, Window: c.Window(), Bytes: 5 << 20, Bandwidth: 5 << 20}
	if tail.Idle() {
		t.Fatal("test premise: a tail interval is not idle")
	}
	mustObserve(t, c, 0, rp.report(tail, 0))
	d, ok, _ := c.Poll(0)
	if !ok || !d.Nodes[0].Idle || d.Nodes[0].Credited || d.Nodes[0].Context != "" {
		t.Fatalf("tail interval: ok=%v %+v, want idle, not credited, no context", ok, d.Nodes)
	}
	if n := len(c.Status().Contexts); n != 0 {
		t.Fatalf("tail interval created %d contexts: %+v", n, c.Status().Contexts)
	}
}

func TestNoVotesKeepsWindow(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Default: 2 * time.Millisecond})
	var rp reporter
	mustObserve(t, c, 0, rp.report(access.Observation{Node: 0, Interval: time.Second}, 0))
	d, ok, _ := c.Poll(0)
	if !ok || d.Window != 2*time.Millisecond || d.Prob != 1 || d.Explore || d.Voters != 0 {
		t.Fatalf("got %+v, want the default window kept with prob 1", d)
	}
}

func TestRejectsWithoutChangingState(t *testing.T) {
	c := newCouncil(t, Config{})
	var rp reporter
	good := rp.report(obs(0, access.SS, rw.Write, c.Window(), 1e8), 0)
	mustObserve(t, c, 0, good)
	before, _ := c.Snapshot()
	bad := obs(1, access.SS, rw.Write, c.Window(), 1e8)
	bad.ReqMin = 1 << 20 // min > avg
	tests := []struct {
		name string
		r    Report
		want error
	}{
		{"duplicate", good, ErrStale},
		{"older seq", Report{Instance: good.Instance, Seq: 0, Obs: good.Obs}, ErrInvalid},
		{"invalid", Report{Instance: 9, Seq: 1, Obs: bad}, ErrInvalid},
		{"node beyond MaxNodes", Report{Instance: 9, Seq: 1, Obs: func() access.Observation { o := good.Obs; o.Node = DefaultMaxNodes; return o }()}, ErrInvalid},
		{"nan", Report{Instance: 9, Seq: 1, Obs: func() access.Observation { o := good.Obs; o.Bandwidth = math.NaN(); return o }()}, ErrInvalid},
	}
	for _, tt := range tests {
		if err := c.Observe(0, tt.r); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	after, _ := c.Snapshot()
	if string(before) != string(after) {
		t.Fatalf("rejected reports changed the state:\n%s\n%s", before, after)
	}
	// A restarted Announcer (new instance) starts its sequence again.
	mustObserve(t, c, 0, Report{Instance: good.Instance + 1, Seq: 1, Obs: good.Obs})
}

func TestConsensus(t *testing.T) {
	// Nodes 0,1 run SS reads whose best window is 4 ms (low bandwidth);
	// node 2 runs FPP writes whose best is 125us (high bandwidth).
	w125, w4 := sched.Windows[0], sched.Windows[5]
	tests := []struct {
		rule string
		want time.Duration
	}{
		{Majority, w4},
		{Bandwidth, w125},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			c := newCouncil(t, Config{Nodes: 3, Consensus: tt.rule, Policy: "greedy", Credit: CreditRound})
			var rp reporter
			mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Read, w4, 1e7), 0))
			mustObserve(t, c, 0, rp.report(obs(1, access.SS, rw.Read, w4, 1e7), 0))
			mustObserve(t, c, 0, rp.report(obs(2, access.FPP, rw.Write, w125, 1e9), 0))
			d, ok, _ := c.Poll(0)
			if !ok || d.Window != tt.want || d.Explore || d.Prob != 1 {
				t.Fatalf("got ok=%v window %v explore %v prob %v, want %v exploited with prob 1", ok, d.Window, d.Explore, d.Prob, tt.want)
			}
			if d.Context != "SS/read" {
				t.Errorf("governing context %q, want SS/read (most nodes)", d.Context)
			}
		})
	}
}

// TestPropensity checks that the logged probability matches the observed
// frequency of each decision: over many rounds in the same state, the
// fraction of rounds choosing window w must approach the Prob logged with w.
func TestPropensity(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Policy: "egreedy", Options: banditEps(0.3)})
	var rp reporter
	w4 := sched.Windows[5]
	mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Read, w4, 1e7), 0))
	c.Poll(0)
	const rounds = 20000
	freq := map[time.Duration]int{}
	prob := map[time.Duration]float64{}
	for range rounds {
		// Idle-free reports under a foreign window: no learning, same state.
		mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Read, 3*time.Millisecond, 1e7), c.Round()))
		d, _, _ := c.Poll(0)
		freq[d.Window]++
		if p, seen := prob[d.Window]; seen && p != d.Prob {
			t.Fatalf("window %v logged with prob %v and %v in the same state", d.Window, p, d.Prob)
		}
		prob[d.Window] = d.Prob
	}
	sum := 0.0
	for w, p := range prob {
		sum += p
		got := float64(freq[w]) / rounds
		if math.Abs(got-p) > 0.01 {
			t.Errorf("window %v: chosen %.4f of rounds, logged prob %.4f", w, got, p)
		}
	}
	if len(prob) != len(sched.Windows) || math.Abs(sum-1) > 1e-9 {
		t.Errorf("probabilities of %d windows sum to %v, want 7 windows summing to 1", len(prob), sum)
	}
	if p := prob[w4]; math.Abs(p-(0.7+0.3/7)) > 1e-9 {
		t.Errorf("greedy window prob %v, want 1-eps+eps/k = %v", p, 0.7+0.3/7)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() []Decision {
		c := newCouncil(t, Config{Nodes: 4, Policy: "egreedy"})
		var rp reporter
		rng := rand.New(rand.NewPCG(7, 7))
		var out []Decision
		for round := range 50 {
			for n := range 4 {
				cls := access.Classes[(n+round/10)%3]
				mustObserve(t, c, time.Duration(round)*time.Second, rp.report(obs(n, cls, rw.Write, c.Window(), 1e8*rng.Float64()+1), uint64(round)))
			}
			d, ok, _ := c.Poll(time.Duration(round) * time.Second)
			if !ok {
				t.Fatal("round not closed")
			}
			out = append(out, d)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i].Window != b[i].Window || a[i].Prob != b[i].Prob || a[i].Explore != b[i].Explore {
			t.Fatalf("round %d differs between identical runs: %+v vs %+v", i+1, a[i], b[i])
		}
	}
}

func TestSnapshotRestoreContinues(t *testing.T) {
	cfg := Config{Nodes: 2, Policy: "egreedy", Credit: CreditRound}
	a := newCouncil(t, cfg)
	var rp reporter
	for round := range 20 {
		for n := range 2 {
			mustObserve(t, a, 0, rp.report(obs(n, access.FPP, rw.Write, a.Window(), float64(1e8*(n+1))), uint64(round)))
		}
		a.Poll(0)
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := newCouncil(t, cfg)
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	sa, sb := a.Status(), b.Status()
	if sb.Round != 20 || sb.Window != sa.Window || len(sb.Contexts) != 1 || !slices.Equal(sa.Contexts[0].Counts, sb.Contexts[0].Counts) || !slices.Equal(sa.Contexts[0].Values, sb.Contexts[0].Values) {
		t.Fatalf("restored status %+v, want %+v", sb, sa)
	}
	// Learning continues: the next reward adds to the restored counts.
	mustObserve(t, b, 0, rp.report(obs(0, access.FPP, rw.Write, b.Window(), 1e8), 20))
	d, ok, _ := b.Poll(time.Hour)
	if !ok || d.Round != 21 {
		t.Fatalf("round after restore: ok=%v round %d, want 21", ok, d.Round)
	}
	total := func(s Status) (n int64) {
		for _, x := range s.Contexts[0].Counts {
			n += x
		}
		return n
	}
	if got, want := total(b.Status()), total(sa)+1; got != want {
		t.Fatalf("rewards after restore %d, want %d", got, want)
	}
	// Mismatched configurations and garbage are refused, state unchanged.
	other := newCouncil(t, Config{Windows: sched.Windows[:3], Default: sched.Windows[0]})
	for _, in := range [][]byte{snap, []byte("{"), []byte(`{"v":2}`)} {
		if err := other.Restore(in); !errors.Is(err, ErrSnapshot) {
			t.Errorf("Restore(%.20s) on other config: %v, want ErrSnapshot", in, err)
		}
	}
	if other.Round() != 0 {
		t.Errorf("failed restore changed the round to %d", other.Round())
	}
	// A state learned under another policy says which policy continues it.
	warm := newCouncil(t, Config{Policy: "thompson-warm"})
	err = warm.Restore(snap)
	if !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), `configure policy "egreedy"`) {
		t.Errorf("Restore of an egreedy state under thompson-warm: %v, want ErrSnapshot naming the policy to configure", err)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []Config{
		{Policy: "nope"},
		{Consensus: "dictator"},
		{Reward: "joy"},
		{Credit: "sometimes"},
		{Default: 3 * time.Millisecond},
		{Windows: []time.Duration{1, 1}, Default: 1},
		{Nodes: -1},
		{Forget: -1},
		{Nodes: 10, MaxNodes: 5},
	}
	for _, cfg := range tests {
		if _, err := New(cfg, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v): %v, want ErrBadConfig", cfg, err)
		}
	}
}

// TestRapidInvariants drives the core with random valid and invalid reports
// and checks that it never panics, that only credited reports change the
// counts (each one with CreditNode; by default at most each, and at least
// one pull when any was credited, once the last round has closed), and that
// every decision names an arm with a probability in (0, 1].
func TestRapidInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodeCredit := rapid.Bool().Draw(t, "nodeCredit")
		credit := CreditPhase
		if nodeCredit {
			credit = CreditNode
		}
		c, err := New(Config{Credit: credit,
			Nodes: rapid.IntRange(0, 5).Draw(t, "nodes"), Detector: classByHandles{},
			Policy:    rapid.SampledFrom([]string{"egreedy", "ucb1", "softmax", "greedy"}).Draw(t, "policy"),
			Consensus: rapid.SampledFrom([]string{Majority, Bandwidth}).Draw(t, "consensus"),
			Reward:    rapid.SampledFrom([]string{RewardBandwidth, RewardPerProcess, RewardServed}).Draw(t, "reward"),
		}, rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0)))
		if err != nil {
			t.Fatal(err)
		}
		var credited int64
		now := time.Duration(0)
		seq := map[int]uint64{}
		for range rapid.IntRange(1, 100).Draw(t, "steps") {
			now += time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "dt"))
			node := rapid.IntRange(0, 6).Draw(t, "node")
			o := obs(node, access.Class(rapid.IntRange(0, 4).Draw(t, "class")), rw.Op(rapid.IntRange(0, 3).Draw(t, "op")),
				rapid.SampledFrom(append([]time.Duration{0, 3 * time.Millisecond}, sched.Windows...)).Draw(t, "win"),
				rapid.Float64Range(0, 1e10).Draw(t, "bw"))
			switch rapid.IntRange(0, 2).Draw(t, "idle") {
			case 1: // no I/O at all
				o.Requests, o.Bytes = 0, 0
			case 2: // a phase's tail: bytes completing, no request received
				o.Requests = 0
			}
			seq[node] += uint64(rapid.IntRange(0, 2).Draw(t, "seqstep"))
			err := c.Observe(now, Report{Instance: 1, Seq: seq[node], Round: rapid.Uint64Range(0, c.Round()+1).Draw(t, "round"), Obs: o})
			if err == nil && o.Requests > 0 && o.Op.Valid() && o.FileHandles >= 1 && o.FileHandles <= 3 && slices.Contains(sched.Windows, o.Window) {
				credited++
			}
			if d, ok, _ := c.Poll(now); ok {
				if !slices.Contains(sched.Windows, d.Window) || !(d.Prob > 0 && d.Prob <= 1) {
					t.Fatalf("decision %+v", d)
				}
			}
		}
		c.Poll(now + time.Hour) // closes the open round, crediting it
		c.creditRound()         // and credits the pulls it carries
		var n int64
		for _, cs := range c.Status().Contexts {
			for _, x := range cs.Counts {
				n += x
			}
		}
		if nodeCredit && n != credited || !nodeCredit && (n > credited || credited > 0 && n == 0) {
			t.Fatalf("node credit %v: counts sum %d, want %d credited reports", nodeCredit, n, credited)
		}
	})
}

func TestContextNames(t *testing.T) {
	for _, c := range access.Classes {
		for _, op := range []rw.Op{rw.Read, rw.Write} {
			if got, want := Context(c, op), c.String()+"/"+op.String(); got != want {
				t.Errorf("Context(%v, %v) = %q, want %q", c, op, got, want)
			}
		}
	}
}

// TestDiscoveryRound: without Config.Nodes (or after a restart) the first
// round waits for its deadline to learn which nodes exist, then rounds
// close as soon as all of them reported.
func TestDiscoveryRound(t *testing.T) {
	c := newCouncil(t, Config{Timeout: 100 * time.Millisecond, Policy: "greedy"})
	var rp reporter
	mustObserve(t, c, 0, rp.report(obs(0, access.FPP, rw.Write, c.Window(), 1e8), 0))
	if _, ok, wake := c.Poll(0); ok || wake != 100*time.Millisecond {
		t.Fatalf("discovery round closed at the first report (ok=%v wake=%v)", ok, wake)
	}
	mustObserve(t, c, 50*time.Millisecond, rp.report(obs(1, access.FPP, rw.Write, c.Window(), 1e8), 0))
	d, ok, _ := c.Poll(100 * time.Millisecond)
	if !ok || d.Reason != "deadline" || len(d.Nodes) != 2 {
		t.Fatalf("discovery round: ok=%v %+v", ok, d)
	}
	for n := range 2 {
		mustObserve(t, c, time.Second, rp.report(obs(n, access.FPP, rw.Write, c.Window(), 1e8), 1))
	}
	if d, ok, _ := c.Poll(time.Second); !ok || d.Reason != "all" {
		t.Fatalf("second round: ok=%v %+v, want closed by all", ok, d)
	}
}

// TestRecommendationsUseEstimatesAtClose: a reward that arrives late in the
// round updates the recommendations of the nodes that reported earlier.
func TestRecommendationsUseEstimatesAtClose(t *testing.T) {
	w125, w4 := sched.Windows[0], sched.Windows[5]
	c := newCouncil(t, Config{Nodes: 3, Policy: "greedy", Credit: CreditRound})
	var rp reporter
	mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Read, w125, 1e8), 0))
	mustObserve(t, c, 0, rp.report(obs(1, access.SS, rw.Read, w125, 1.1e8), 0))
	mustObserve(t, c, 0, rp.report(obs(2, access.SS, rw.Read, w4, 5e8), 0))
	d, ok, _ := c.Poll(0)
	if !ok || d.Window != w4 {
		t.Fatalf("got ok=%v window %v, want %v (the best estimate when the round closed)", ok, d.Window, w4)
	}
	for _, nr := range d.Nodes {
		if nr.Recommend != w4 {
			t.Errorf("node %d recommends %v, want %v", nr.Node, nr.Recommend, w4)
		}
	}
}

// TestStragglerDoesNotShiftRounds: a report observed under an older
// decision, arriving after its round closed, is credited but neither opens
// nor completes the next round, so rounds stay in step with the nodes.
func TestStragglerDoesNotShiftRounds(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 2, Timeout: 100 * time.Millisecond, Policy: "greedy"})
	var rp reporter
	w := c.Window()
	for n := range 2 {
		mustObserve(t, c, 0, rp.report(obs(n, access.FPP, rw.Write, w, 1e8), 0))
	}
	if d, ok, _ := c.Poll(0); !ok || d.Round != 1 {
		t.Fatalf("round 1 not closed: %+v", d)
	}
	// Round 2: node 1 is slow; the round closes at its deadline.
	mustObserve(t, c, time.Second, rp.report(obs(0, access.FPP, rw.Write, w, 1e8), 1))
	if d, ok, _ := c.Poll(time.Second + 100*time.Millisecond); !ok || d.Reason != "deadline" {
		t.Fatalf("round 2: ok=%v %+v, want closed by deadline", ok, d)
	}
	// Node 1's report for round 2 arrives now: credited, but no round opens.
	before := totalCounts(c)
	mustObserve(t, c, time.Second+150*time.Millisecond, rp.report(obs(1, access.FPP, rw.Write, w, 1e8), 1))
	if got := totalCounts(c); got != before+1 {
		t.Fatalf("late report credited %d rewards, want 1", got-before)
	}
	if _, ok, wake := c.Poll(time.Second + 150*time.Millisecond); ok || wake != 0 || c.Deadline() != 0 {
		t.Fatalf("a late report opened a round (ok=%v wake=%v)", ok, wake)
	}
	// Round 3: both nodes, in step again.
	for n := range 2 {
		mustObserve(t, c, 2*time.Second, rp.report(obs(n, access.FPP, rw.Write, w, 1e8), 2))
	}
	d, ok, _ := c.Poll(2 * time.Second)
	if !ok || d.Round != 3 || d.Reason != "all" || len(d.Nodes) != 2 || len(d.Late) != 1 || d.Late[0].Node != 1 || !d.Late[0].Late {
		t.Fatalf("round 3: ok=%v %+v, want closed by all with node 1's late report logged", ok, d)
	}
}

func totalCounts(c *Council) (n int64) {
	for _, cs := range c.Status().Contexts {
		for _, x := range cs.Counts {
			n += x
		}
	}
	return n
}

// The status names the algorithm each node last reported running (dynamic
// selection changes it); a report that does not say keeps the last known.
func TestStatusNamesEachNodesScheduler(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 2, Policy: "greedy"})
	var rp reporter
	w := c.Window()
	for _, tt := range []struct {
		node  int
		sched string
		want  []NodeStatus
	}{
		{0, "to-agg", []NodeStatus{{0, "to-agg"}, {1, ""}}},
		{1, "mlf", []NodeStatus{{0, "to-agg"}, {1, "mlf"}}},
		{0, "", []NodeStatus{{0, "to-agg"}, {1, "mlf"}}},
		{0, "sjf", []NodeStatus{{0, "sjf"}, {1, "mlf"}}},
	} {
		r := rp.report(obs(tt.node, access.SS, rw.Write, w, 1e8), 0)
		r.Scheduler = tt.sched
		mustObserve(t, c, 0, r)
		if got := c.Status().Nodes; !slices.Equal(got, tt.want) {
			t.Fatalf("after node %d reported %q: %+v, want %+v", tt.node, tt.sched, got, tt.want)
		}
	}
}

// TestPlanExpectsTheNextPhase runs a cycle of phases (SS writes, SS reads,
// FPP writes, SC reads), one round each, and checks that each decision's
// plan names, for the other direction, the context that follows in the
// cycle, not merely the one last seen for that direction.
func TestPlanExpectsTheNextPhase(t *testing.T) {
	type phase struct {
		class access.Class
		op    rw.Op
	}
	cycle := []phase{{access.SS, rw.Write}, {access.SS, rw.Read}, {access.FPP, rw.Write}, {access.SC, rw.Read}}
	next := map[string]string{"SS/write": "SS/read", "SS/read": "FPP/write", "FPP/write": "SC/read", "SC/read": "SS/write"}
	for _, noPlan := range []bool{false, true} {
		c := newCouncil(t, Config{Nodes: 2, NoPlan: noPlan})
		var rp reporter
		now := time.Duration(0)
		for round := range 4 * len(cycle) {
			ph := cycle[round%len(cycle)]
			w := c.Window()
			for n := range 2 {
				mustObserve(t, c, now, rp.report(obs(n, ph.class, ph.op, w, 1e8), c.Round()))
			}
			d, ok, _ := c.Poll(now)
			if !ok {
				t.Fatalf("round %d not closed", round)
			}
			now += time.Second
			if noPlan {
				if d.Plan != nil || d.Wire().Plan != (rw.Pair[time.Duration]{}) {
					t.Fatalf("NoPlan: decision carries a plan %+v", d.Plan)
				}
				continue
			}
			ctx := Context(ph.class, ph.op)
			if d.Context != ctx {
				t.Fatalf("round %d governed by %q, want %q", round, d.Context, ctx)
			}
			other := rw.Read
			if ph.op == rw.Read {
				other = rw.Write
			}
			var own, expected *PlanEntry
			for i := range d.Plan {
				switch d.Plan[i].Op {
				case ph.op.String():
					own = &d.Plan[i]
				case other.String():
					expected = &d.Plan[i]
				}
			}
			if own == nil || own.Context != ctx || own.Window != d.Window || own.Prob != d.Prob {
				t.Fatalf("round %d: own direction's entry %+v, want %s with the decision's window %v", round, own, ctx, d.Window)
			}
			if round == 0 {
				if expected != nil {
					t.Fatalf("round 0: a plan for %v, never seen: %+v", other, expected)
				}
				continue
			}
			if round < len(cycle) {
				continue // the cycle is not known yet: the last context seen stands in
			}
			if expected == nil || expected.Context != next[ctx] {
				t.Fatalf("round %d (%s): plan for %v is %+v, want context %s", round, ctx, other, expected, next[ctx])
			}
			if slices.Index(c.cfg.Windows, expected.Window) < 0 || !(expected.Prob > 0 && expected.Prob <= 1) {
				t.Fatalf("round %d: plan entry %+v: window not an arm or probability out of (0, 1]", round, expected)
			}
			if d.Wire().Plan.For(other) != expected.Window {
				t.Fatalf("round %d: broadcast plan %v for %v, want %v", round, d.Wire().Plan.For(other), other, expected.Window)
			}
		}
	}
}

func TestSnapshotKeepsThePlansTransitions(t *testing.T) {
	a := newCouncil(t, Config{Nodes: 1})
	var rp reporter
	for round, ph := range []access.Class{access.SS, access.SS, access.FPP} {
		op := rw.Write
		if round == 1 {
			op = rw.Read
		}
		mustObserve(t, a, 0, rp.report(obs(0, ph, op, a.Window(), 1e8), a.Round()))
		a.Poll(0)
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := newCouncil(t, Config{Nodes: 1})
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := b.expect("SS/write", rw.Read); got != "SS/read" {
		t.Fatalf("restored Council expects %q after SS/write, want SS/read", got)
	}
	if got := b.expect("SS/read", rw.Write); got != "FPP/write" {
		t.Fatalf("restored Council expects %q after SS/read, want FPP/write", got)
	}
}

// TestPlanTakesEachContextsOwnWindow: a round whose nodes are in two
// phases votes across contexts, and the consensus may be the other
// context's best window; the plan's entry for the governing context's
// direction is still that context's own choice.
func TestPlanTakesEachContextsOwnWindow(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 4, Policy: "greedy", Credit: CreditRound})
	var rp reporter
	now := time.Duration(0)
	round := func(ctx func(n int) (access.Class, rw.Op, time.Duration, float64)) Decision {
		t.Helper()
		for n := range 4 {
			class, op, w, bw := ctx(n)
			mustObserve(t, c, now, rp.report(obs(n, class, op, w, bw), c.Round()))
		}
		d, ok, _ := c.Poll(now)
		if !ok {
			t.Fatal("round not closed")
		}
		now += time.Second
		return d
	}
	// Teach: SS writes are best under 8 ms, SS reads under 1 ms.
	for _, w := range []time.Duration{time.Millisecond, 8 * time.Millisecond} {
		round(func(int) (access.Class, rw.Op, time.Duration, float64) {
			return access.SS, rw.Write, w, map[bool]float64{true: 2e8, false: 1e7}[w == 8*time.Millisecond]
		})
		round(func(int) (access.Class, rw.Op, time.Duration, float64) {
			return access.SS, rw.Read, w, map[bool]float64{true: 1e8, false: 1e7}[w == time.Millisecond]
		})
	}
	// Two nodes read, two write (more bandwidth): the votes tie, the
	// writers' bandwidth makes 8 ms the consensus, and SS/read governs
	// (ties between contexts go to the first by name).
	d := round(func(n int) (access.Class, rw.Op, time.Duration, float64) {
		if n < 2 {
			return access.SS, rw.Read, time.Millisecond, 1e8
		}
		return access.SS, rw.Write, 8 * time.Millisecond, 2e8
	})
	if d.Context != "SS/read" || d.Window != 8*time.Millisecond || d.Explore {
		t.Fatalf("decision %s %v explore %v; the test wants SS/read governing an 8ms consensus", d.Context, d.Window, d.Explore)
	}
	if got := d.PlanWindow(rw.Read); got != time.Millisecond {
		t.Errorf("plan for reads %v, want SS/read's own 1ms (plan %+v)", got, d.Plan)
	}
	if got := d.PlanWindow(rw.Write); got != 8*time.Millisecond {
		t.Errorf("plan for writes %v, want SS/write's 8ms (plan %+v)", got, d.Plan)
	}
}

// The default reward is the interval's operation's bandwidth while it ran;
// the papers' interval bandwidth stays by name, and stands in for a report
// that does not measure its operation's span.
func TestRewardOpBandwidth(t *testing.T) {
	o := obs(0, access.SS, rw.Read, time.Millisecond, 5e7)
	o.OpBytes, o.OpSpan = 5e7, 250*time.Millisecond
	for _, tc := range []struct {
		reward string
		o      access.Observation
		want   float64
	}{
		{"", o, 2e8},
		{RewardBandwidth, o, 5e7},
		{"", obs(0, access.SS, rw.Read, time.Millisecond, 5e7), 5e7},
	} {
		c := newCouncil(t, Config{Nodes: 1, Reward: tc.reward})
		var rp reporter
		mustObserve(t, c, 0, rp.report(tc.o, 0))
		d, ok, _ := c.Poll(0)
		if !ok || len(d.Nodes) != 1 || d.Nodes[0].Reward != tc.want {
			t.Fatalf("reward %q: node report %+v, want reward %v", tc.reward, d.Nodes, tc.want)
		}
	}
}

// With CreditRound the nodes of one round under one window and context
// count as one pull with their mean reward; with CreditNode each node is a
// pull.
func TestRoundCreditCountsARoundOnce(t *testing.T) {
	for _, round := range []bool{false, true} {
		c := newCouncil(t, Config{Nodes: 4, Credit: map[bool]string{true: CreditRound, false: CreditNode}[round], Reward: RewardBandwidth})
		var rp reporter
		for r := uint64(0); r < 2; r++ {
			for n := range 4 {
				mustObserve(t, c, 0, rp.report(obs(n, access.SS, rw.Write, time.Millisecond, float64(1e6*(n+1))), r))
			}
			d, ok, _ := c.Poll(0)
			if !ok || len(d.Nodes) != 4 || !d.Nodes[3].Credited || d.Nodes[3].Reward != 4e6 {
				t.Fatalf("round credit %v, round %d: decision %+v, want 4 node reports, the last credited 4e6", round, r, d)
			}
		}
		p := c.bands.Policy(Context(access.SS, rw.Write)).(interface{ Counts() []int64 })
		a := c.arm(time.Millisecond)
		want := int64(8)
		if round {
			want = 2
		}
		if got := p.Counts()[a]; got != want {
			t.Errorf("round credit %v: 1 ms pulled %d times after 2 rounds of 4 nodes, want %d", round, got, want)
		}
		if v := c.bands.Policy(Context(access.SS, rw.Write)).Values()[a]; math.Abs(v-2.5e6) > 1e-6 {
			t.Errorf("round credit %v: 1 ms estimated %v, want the mean 2.5e6", round, v)
		}
	}
}

// readPart is an SS read interval of node whose reads ran span of its
// second at bw under window w.
func readPart(node int, w time.Duration, span time.Duration, bw float64) access.Observation {
	o := obs(node, access.SS, rw.Read, w, bw*span.Seconds())
	o.OpBytes, o.OpSpan = int64(bw*span.Seconds()), span
	return o
}

// By default the consecutive rounds in which a context ran one window are
// one pull, up to MaxPull of intervals, with the phase's bytes over its
// spans, credited when the round after the phase closes; the plan keeps
// the phase's window while its pull is open.
func TestPhaseCreditOnePullAPhase(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 2, Policy: "greedy"})
	ctx := Context(access.SS, rw.Read)
	var rp reporter
	const iv = 500 * time.Millisecond
	round := func(r uint64, o func(node int) access.Observation) Decision {
		t.Helper()
		for n := range 2 {
			x := o(n)
			x.Interval = iv
			mustObserve(t, c, 0, rp.report(x, r))
		}
		d, ok, _ := c.Poll(0)
		if !ok || d.Credit != CreditPhase {
			t.Fatalf("round %d: closed %v, credit %q, want closed, %q", r+1, ok, d.Credit, CreditPhase)
		}
		return d
	}
	pulls := func() (n int64) {
		for _, x := range c.bands.Policy(ctx).Counts() {
			n += x
		}
		return n
	}
	// Round 1 reads under a window that is not an arm (a node that did
	// not follow): nothing is credited, and the plan draws a read window P.
	d := round(0, func(n int) access.Observation { return readPart(n, 3*time.Millisecond, 450*time.Millisecond, 1e8) })
	p := d.PlanWindow(rw.Read)
	// Rounds 2 to 4 read under P, the last the phase's slow tail: the plan
	// holds P throughout, and nothing is credited while the phase runs.
	parts := []struct {
		span time.Duration
		bw   float64
	}{{500 * time.Millisecond, 2e8}, {500 * time.Millisecond, 1e8}, {400 * time.Millisecond, 3e7}}
	for i, x := range parts {
		d = round(uint64(i+1), func(n int) access.Observation { return readPart(n, p, x.span, x.bw) })
		if e := d.Plan[0]; e.Op != "read" || !e.Held || e.Window != p || e.Prob != 1 || e.Explore || pulls() != 0 {
			t.Fatalf("round %d: plan %+v, %d pulls; want the read window %v held with probability 1 and no pull yet", i+2, d.Plan, pulls(), p)
		}
	}
	// Round 5 has no reads: the phase is one pull, its bytes over its spans.
	d = round(4, func(n int) access.Observation { return obs(n, access.FPP, rw.Write, p, 1e8) })
	a := c.arm(p)
	if got := c.bands.Policy(ctx).Counts()[a]; got != 1 || pulls() != 1 {
		t.Fatalf("after the phase: %v pulled %d times (%d pulls in all), want 1", p, got, pulls())
	}
	var bytes, spans float64
	for _, x := range parts {
		bytes += 2 * float64(int64(x.bw*x.span.Seconds()))
		spans += 2 * x.span.Seconds()
	}
	if v := c.bands.Policy(ctx).Values()[a]; math.Abs(v-bytes/spans) > 1 {
		t.Errorf("phase pull %v, want the bytes over the spans %v", v, bytes/spans)
	}
	if len(d.Pulls) != 1 || d.Pulls[0].Context != ctx || d.Pulls[0].Window != p || d.Pulls[0].Reports != 6 {
		t.Errorf("round 5 logs pulls %+v, want one of %s under %v merging 6 reports", d.Pulls, ctx, p)
	}
	for _, e := range d.Plan {
		if e.Held {
			t.Errorf("round 5 plan %+v holds a window after the phase", d.Plan)
		}
	}
}

// A phase's first interval holds the turn from the phase before (its tail,
// then the new phase's first requests). When the window changes after it
// while the phase goes on, that interval alone would be a pull measuring the
// turn: it is set aside (Pull.Skipped). When the window holds it is part of
// the phase's pull, and a phase of that one interval is credited.
func TestPhaseCreditSetsAsideAnOpeningAlone(t *testing.T) {
	const w, w2 = time.Millisecond, 125 * time.Microsecond
	ctx := Context(access.SS, rw.Read)
	for _, tt := range []struct {
		name   string
		then   []time.Duration // windows of the read rounds after the opening (under w)
		counts map[time.Duration]int64
		skip   bool
	}{
		{"window changes", []time.Duration{w2, w2}, map[time.Duration]int64{w: 0, w2: 1}, true},
		{"window holds", []time.Duration{w, w}, map[time.Duration]int64{w: 1, w2: 0}, false},
		{"one-interval phase", nil, map[time.Duration]int64{w: 1, w2: 0}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCouncil(t, Config{Nodes: 2, Policy: "greedy", MaxPull: 10 * time.Second})
			var rp reporter
			var r uint64
			var pulls []Pull
			round := func(o func(node int) access.Observation) {
				t.Helper()
				for n := range 2 {
					mustObserve(t, c, 0, rp.report(o(n), r))
				}
				d, ok, _ := c.Poll(0)
				if !ok {
					t.Fatalf("round %d did not close", r+1)
				}
				pulls = append(pulls, d.Pulls...)
				r++
			}
			for range 2 {
				round(func(n int) access.Observation { return obs(n, access.SS, rw.Write, w, 1e8) })
			}
			// The opening: the write's tail, then 50 ms of reads.
			round(func(n int) access.Observation { return readPart(n, w, 50*time.Millisecond, 2e7) })
			for _, x := range tt.then {
				round(func(n int) access.Observation { return readPart(n, x, time.Second, 2e8) })
			}
			round(func(n int) access.Observation { return obs(n, access.FPP, rw.Write, w, 1e8) })
			counts := c.bands.Policy(ctx).Counts()
			for win, want := range tt.counts {
				if got := counts[c.arm(win)]; got != want {
					t.Errorf("%v pulled %d times, want %d (pulls %+v)", win, got, want, pulls)
				}
			}
			var skipped []Pull
			for _, p := range pulls {
				if p.Skipped != "" {
					skipped = append(skipped, p)
				}
			}
			if !tt.skip && len(skipped) > 0 {
				t.Errorf("pulls set aside %+v, want none", skipped)
			}
			if tt.skip && (len(skipped) != 1 || skipped[0].Context != ctx || skipped[0].Window != w || skipped[0].Reports != 2 || skipped[0].Skipped != SkippedOpening) {
				t.Errorf("pulls set aside %+v, want the opening of %s under %v (2 reports)", skipped, ctx, w)
			}
		})
	}
}

// A phase longer than MaxPull is a pull every MaxPull (2 rounds of 1 s),
// its window held within a pull (once a plan gave it) and drawn afresh
// between them.
func TestPhaseCreditLongPhase(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Policy: "greedy", Reward: RewardBandwidth, Windows: []time.Duration{time.Millisecond}})
	var rp reporter
	w := c.Window()
	ctx := Context(access.SS, rw.Write)
	for r, want := range []struct {
		pulls int64
		held  bool
	}{{0, false}, {0, false}, {1, true}, {1, false}, {2, true}} {
		mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Write, w, 1e8*float64(r+1)), 0))
		d, _, _ := c.Poll(0)
		var held bool
		for _, e := range d.Plan {
			held = held || e.Held
		}
		if got := c.bands.Policy(ctx).Counts()[c.arm(w)]; got != want.pulls || held != want.held {
			t.Fatalf("after round %d: %d pulls, plan held %v; want %d, %v", r+1, got, held, want.pulls, want.held)
		}
	}
	mustObserve(t, c, 0, rp.report(obs(0, access.FPP, rw.Read, w, 1e8), 0))
	c.Poll(0)
	if got := c.bands.Policy(ctx).Counts()[c.arm(w)]; got != 3 {
		t.Fatalf("after the phase: %d pulls, want 3", got)
	}
	// Pulls of rounds {1, 2}, {3, 4}, {5}: means 1.5e8, 3.5e8, 5e8.
	if v := c.bands.Policy(ctx).Values()[c.arm(w)]; math.Abs(v-10e8/3) > 1 {
		t.Errorf("estimate %v, want the mean of the pulls %v", v, 10e8/3)
	}
}

// Config.MaxPull sets how many rounds of one phase a pull holds: a phase of
// 5 rounds of 1 s is 3 pulls by default (2 s), 2 with 3 s, one with 5 s;
// a negative MaxPull is refused.
func TestPhaseCreditMaxPull(t *testing.T) {
	for _, tt := range []struct {
		max   time.Duration
		pulls int64
	}{{0, 3}, {3 * time.Second, 2}, {5 * time.Second, 1}} {
		c := newCouncil(t, Config{Nodes: 1, Policy: "greedy", Reward: RewardBandwidth, Windows: []time.Duration{time.Millisecond}, MaxPull: tt.max})
		var rp reporter
		w := c.Window()
		for r := range 5 {
			mustObserve(t, c, 0, rp.report(obs(0, access.SS, rw.Write, w, 1e8*float64(r+1)), 0))
			c.Poll(0)
		}
		mustObserve(t, c, 0, rp.report(obs(0, access.FPP, rw.Read, w, 1e8), 0))
		c.Poll(0)
		if got := c.bands.Policy(Context(access.SS, rw.Write)).Counts()[c.arm(w)]; got != tt.pulls {
			t.Errorf("MaxPull %v: %d pulls of a 5-round phase, want %d", tt.max, got, tt.pulls)
		}
	}
	if _, err := New(Config{MaxPull: -time.Second}, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrBadConfig) {
		t.Errorf("MaxPull -1s: %v, want ErrBadConfig", err)
	}
}

// An operation that runs a small part of every interval for long is a pull
// every MaxPull (2 rounds of 1 s), and its plan is drawn afresh as often.
func TestPhaseCreditBoundsPulls(t *testing.T) {
	c := newCouncil(t, Config{Nodes: 1, Policy: "greedy"})
	ctx := Context(access.SS, rw.Read)
	var rp reporter
	held := 0
	const rounds = 40
	for r := range uint64(rounds) {
		w := c.Window()
		if d := c.plan; len(d) > 0 {
			w = d[0].Window
		}
		mustObserve(t, c, 0, rp.report(readPart(0, w, 200*time.Millisecond, 1e8), r))
		d, ok, _ := c.Poll(0)
		if !ok {
			t.Fatalf("round %d did not close", r+1)
		}
		if len(d.Plan) > 0 && d.Plan[0].Held {
			held++
		} else {
			held = 0
		}
		if held >= 3 {
			t.Fatalf("round %d: the plan held for %d rounds in a row", r+1, held)
		}
	}
	var n int64
	for _, x := range c.bands.Policy(ctx).Counts() {
		n += x
	}
	if n < rounds/3-1 {
		t.Errorf("%d pulls after %d rounds of a partial operation, want about one every 3 rounds", n, rounds)
	}
}
