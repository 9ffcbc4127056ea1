package sched

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"pgregory.net/rapid"
)

// The property tests drive every algorithm with random request streams,
// random clock steps, random completions and random parameter changes, and
// check each batch against a naive model of what is queued.

type qent struct {
	r         Request
	seq       uint64
	addIdx    int // index in model.added
	batches   int // batches dispatched when it was added
	queued    int // requests queued when it was added
	swEpoch   int // SWWindow changes before it was added
	streamKey skey
}

type model struct {
	t       *rapid.T
	s       algo
	name    string
	now     time.Duration
	seq     uint64
	queued  map[uint64]*qent
	added   []*qent
	flight  map[uint64]Batch
	batches int
	swEpoch int
	nextID  uint64
	cursor  map[skey]int64

	// twins: the model's own window (twinsNext), never read from the
	// scheduler
	twServer  int
	twStart   time.Duration
	twStarted bool
	// mlf, hbrr: for each waiting stream, the streams that dispatched since
	// it last did (true: their block is closed).
	seen    map[skey]map[skey]bool
	lastKey skey
	hasLast bool
	// aioli
	maxTS time.Duration
	// wfq: bytes dispatched by each queue since queue i last dispatched
	// (or became non-empty); rows for empty queues are ignored.
	wfqBytes [][]int64
	// extremes of the parameters over the run, for the bounds
	maxAllot, minAllot []int64
	minQuantum         int64
}

func (m *model) trackParams() {
	cfg := m.cfg()
	m.minQuantum = min(m.minQuantum, cfg.Quantum)
	m.maxTS = max(m.maxTS, cfg.Timeslice)
	if w, ok := m.s.(*wfq); ok {
		for i := range w.queues {
			m.maxAllot[i] = max(m.maxAllot[i], w.allot(i))
			m.minAllot[i] = min(m.minAllot[i], w.allot(i))
		}
	}
}

func keyOf(r *Request) skey { return skey{r.Queue, r.File, r.Op} }

func drawConfig(t *rapid.T) Config {
	node := rapid.IntRange(0, 5).Draw(t, "node")
	return Config{
		Servers:      rapid.IntRange(1, 5).Draw(t, "servers"),
		Node:         node,
		Nodes:        node + 1 + rapid.IntRange(0, 2).Draw(t, "extraNodes"),
		Window:       rapid.SampledFrom(Windows).Draw(t, "window"),
		SkipEmpty:    rapid.Bool().Draw(t, "skipEmpty"),
		MaxAggregate: int64(rapid.IntRange(1, 16).Draw(t, "maxAggKiB")) << 10,
		MaxBatch:     rapid.IntRange(1, 16).Draw(t, "maxBatch"),
		Quantum:      int64(rapid.IntRange(1, 16).Draw(t, "quantumKiB")) << 10,
		Timeslice:    time.Duration(rapid.IntRange(50, 2000).Draw(t, "timesliceUs")) * time.Microsecond,
		SWWindow:     time.Duration(rapid.IntRange(50, 2000).Draw(t, "swWindowUs")) * time.Microsecond,
	}
}

func drawParams(t *rapid.T, cfg Config) Config {
	p := drawConfig(t)
	p.Servers, p.Node, p.Nodes = cfg.Servers, cfg.Node, cfg.Nodes // fixed at construction
	if rapid.Bool().Draw(t, "weights") {
		p.Weights = make([]float64, cfg.Servers)
		for i := range p.Weights {
			p.Weights[i] = float64(rapid.IntRange(1, 4).Draw(t, "w"))
		}
	}
	return p
}

func newModel(t *rapid.T, name string, cfg Config) *model {
	a, err := newAlgo(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{t: t, s: a, name: name, queued: map[uint64]*qent{}, flight: map[uint64]Batch{},
		cursor: map[skey]int64{}, seen: map[skey]map[skey]bool{}, maxTS: a.base().cfg.Timeslice}
	m.wfqBytes = make([][]int64, cfg.Servers)
	for i := range m.wfqBytes {
		m.wfqBytes[i] = make([]int64, cfg.Servers)
	}
	m.maxAllot = make([]int64, cfg.Servers)
	m.minAllot = make([]int64, cfg.Servers)
	for i := range m.minAllot {
		m.minAllot[i] = 1 << 62
	}
	m.minQuantum = 1 << 62
	m.trackParams()
	return m
}

func (m *model) cfg() Config { return m.s.base().cfg }

func (m *model) add() {
	t := m.t
	cfg := m.cfg()
	r := Request{
		Queue:  rapid.IntRange(0, cfg.Servers-1).Draw(t, "queue"),
		File:   uint64(rapid.IntRange(0, 3).Draw(t, "file")),
		Op:     rapid.SampledFrom([]rw.Op{rw.Read, rw.Write}).Draw(t, "op"),
		Length: int64(rapid.IntRange(1, 8).Draw(t, "lenKiB")) << 10,
		App:    uint32(rapid.IntRange(0, 2).Draw(t, "app")),
	}
	k := keyOf(&r)
	if rapid.IntRange(0, 9).Draw(t, "contiguous") < 7 {
		r.Offset = m.cursor[k]
	} else {
		r.Offset = int64(rapid.IntRange(0, 63).Draw(t, "offKiB")) << 10
	}
	m.cursor[k] = r.End()
	m.nextID++
	r.ID = m.nextID * 7 // any ids, not dense
	if err := m.s.Add(m.now, r); err != nil {
		t.Fatalf("Add(%+v): %v", r, err)
	}
	r.Arrival = m.now
	m.seq++
	wasEmpty := m.streamEmpty(k)
	e := &qent{r: r, seq: m.seq, addIdx: len(m.added), batches: m.batches, queued: len(m.queued), swEpoch: m.swEpoch, streamKey: k}
	m.queued[r.ID] = e
	m.added = append(m.added, e)
	if wasEmpty {
		m.seen[k] = map[skey]bool{}
	}
	if m.queueLen(r.Queue) == 1 {
		clear(m.wfqBytes[r.Queue])
	}
}

func (m *model) streamEmpty(k skey) bool {
	for _, e := range m.queued {
		if e.streamKey == k {
			return false
		}
	}
	return true
}

func (m *model) queueLen(q int) int {
	n := 0
	for _, e := range m.queued {
		if e.r.Queue == q {
			n++
		}
	}
	return n
}

// sortedQueued returns the queued entries in admission order.
func (m *model) sortedQueued() []*qent {
	out := make([]*qent, 0, len(m.queued))
	for _, e := range m.queued {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *qent) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// heads returns each stream's head (lowest offset, then oldest).
func (m *model) heads() map[skey]*qent {
	h := map[skey]*qent{}
	for _, e := range m.queued {
		c := h[e.streamKey]
		if c == nil || e.r.Offset < c.r.Offset || (e.r.Offset == c.r.Offset && e.seq < c.seq) {
			h[e.streamKey] = e
		}
	}
	return h
}

func (m *model) next() {
	t := m.t
	var ai *aioli
	var aiCur *stream
	var aiStart time.Duration
	if x, ok := m.s.(*aioli); ok {
		ai, aiCur, aiStart = x, x.cur, x.turnStart
	}
	qlens := make([]int, m.cfg().Servers)
	for _, e := range m.queued {
		qlens[e.r.Queue]++
	}

	var tw twinsWant
	if m.name == "twins" {
		tw = m.twinsNext(qlens)
	}

	b, ok, retry := m.s.Next(m.now)

	if m.name == "twins" {
		m.checkTWINS(tw, b, ok, retry)
	}
	if !ok {
		if len(b.Requests) != 0 || b.ID != 0 {
			t.Fatalf("Next returned ok=false with a batch %+v", b)
		}
		if retry != 0 && retry <= m.now {
			t.Fatalf("retryAt %v not after now %v", retry, m.now)
		}
		if m.s.Len() != len(m.queued) {
			t.Fatalf("Len %d, model %d", m.s.Len(), len(m.queued))
		}
		if len(m.queued) > 0 && m.s.InFlight() == 0 && retry == 0 {
			t.Fatalf("%d queued, none in flight, and Next gives no batch nor retry time", len(m.queued))
		}
		return
	}
	m.checkBatch(b)
	if ai != nil && (ai.cur != aiCur || ai.turnStart != aiStart) {
		m.checkAIOLiSelection(b)
	}
	if ai != nil && ai.turnStart != m.now && m.now-ai.turnStart >= 16*m.maxTS {
		t.Fatalf("aioli turn started at %v still dispatching at %v (bound 16 Timeslice = %v)", ai.turnStart, m.now, 16*m.maxTS)
	}
	m.remove(b)
}

// twinsWant is what the model expects of one TWINS Next: a batch from
// server's queue, or (ok false) none and a retry at the window's end.
type twinsWant struct {
	server int
	ok     bool
	retry  time.Duration
}

// twinsNext advances the model's own TWINS window for a Next at m.now with
// qlens requests queued per server, by the rules of Bez et al.'s TWINS as
// adaptio states them: the first window starts at the first Next that
// finds a request queued, on server Node mod Servers; a window [start,
// start+Window) (Window as it is now: SetParams keeps the start) ends at
// the first Next at or after its end, which moves exactly one server on
// and starts the next window then; an empty current queue waits for the
// window's end, or with SkipEmpty moves at once to the next non-empty
// queue and starts a window there.
func (m *model) twinsNext(qlens []int) twinsWant {
	cfg := m.cfg()
	if len(m.queued) == 0 {
		return twinsWant{server: -1}
	}
	switch {
	case !m.twStarted:
		m.twStarted, m.twServer, m.twStart = true, cfg.Node%cfg.Servers, m.now
	case m.now >= m.twStart+cfg.Window:
		m.twServer, m.twStart = (m.twServer+1)%cfg.Servers, m.now
	}
	if qlens[m.twServer] == 0 {
		if !cfg.SkipEmpty {
			return twinsWant{server: m.twServer, retry: m.twStart + cfg.Window}
		}
		for qlens[m.twServer] == 0 {
			m.twServer = (m.twServer + 1) % cfg.Servers
		}
		m.twStart = m.now
	}
	return twinsWant{server: m.twServer, ok: true}
}

// checkTWINS compares a TWINS Next with the model's expectation.
func (m *model) checkTWINS(want twinsWant, b Batch, ok bool, retry time.Duration) {
	t := m.t
	switch {
	case want.server < 0:
		if ok {
			t.Fatalf("twins dispatched to server %d with nothing queued", b.Queue)
		}
	case ok != want.ok:
		t.Fatalf("twins at %v: dispatched %v (server %d), want %v: window server %d from %v (window %v, skip empty %v)",
			m.now, ok, b.Queue, want.ok, m.twServer, m.twStart, m.cfg().Window, m.cfg().SkipEmpty)
	case ok && b.Queue != want.server:
		t.Fatalf("twins at %v dispatched to server %d, want %d (window from %v, window %v, skip empty %v)",
			m.now, b.Queue, want.server, m.twStart, m.cfg().Window, m.cfg().SkipEmpty)
	case !ok && retry != want.retry:
		t.Fatalf("twins idle at %v with server %d's queue empty: retry %v, want the window's end %v", m.now, want.server, retry, want.retry)
	}
}

func (m *model) checkBatch(b Batch) {
	t := m.t
	cfg := m.cfg()
	n := len(b.Requests)
	if n == 0 || n > cfg.MaxBatch {
		t.Fatalf("batch of %d requests, MaxBatch %d", n, cfg.MaxBatch)
	}
	if _, dup := m.flight[b.ID]; dup {
		t.Fatalf("batch id %#x already in flight", b.ID)
	}
	var total int64
	ids := map[uint64]bool{}
	for i, r := range b.Requests {
		e := m.queued[r.ID]
		if e == nil || ids[r.ID] {
			t.Fatalf("batch holds request %d that is not queued (invented or dispatched twice)", r.ID)
		}
		ids[r.ID] = true
		if r != e.r {
			t.Fatalf("request changed: got %+v, want %+v", r, e.r)
		}
		if r.Queue != b.Queue || r.File != b.File || r.Op != b.Op {
			t.Fatalf("batch mixes queues/files/ops: %+v in batch (%d %d %v)", r, b.Queue, b.File, b.Op)
		}
		if i > 0 && r.Offset != b.Requests[i-1].End() {
			t.Fatalf("batch not contiguous at %d: %d after end %d", i, r.Offset, b.Requests[i-1].End())
		}
		total += r.Length
	}
	if b.Offset != b.Requests[0].Offset || b.Length != total {
		t.Fatalf("batch span [%d,+%d), requests span [%d,+%d)", b.Offset, b.Length, b.Requests[0].Offset, total)
	}
	if n > 1 && total > cfg.MaxAggregate {
		t.Fatalf("aggregated batch of %d bytes > MaxAggregate %d", total, cfg.MaxAggregate)
	}
	first := m.queued[b.Requests[0].ID]
	all := m.sortedQueued()
	// Order promises.
	switch m.name {
	case "noop", "fifo", "to":
		if first != all[0] {
			t.Fatalf("%s dispatched seq %d, oldest queued is %d", m.name, first.seq, all[0].seq)
		}
	case "to-agg":
		if !ids[all[0].r.ID] {
			t.Fatalf("to-agg batch does not hold the oldest queued request")
		}
	case "sw":
		w := func(e *qent) [3]uint64 {
			return [3]uint64{uint64(e.r.Arrival / cfg.SWWindow), uint64(e.r.App), e.seq}
		}
		wf := w(first)
		for _, e := range all {
			if we := w(e); slices.Compare(we[:], wf[:]) < 0 {
				t.Fatalf("sw dispatched %v before %v", w(first), w(e))
			}
		}
	case "twins", "wfq":
		for _, e := range all {
			if e.r.Queue == b.Queue {
				if e != first {
					t.Fatalf("%s broke queue %d's arrival order", m.name, b.Queue)
				}
				break
			}
		}
	case "sjf", "mlf", "hbrr", "aioli":
		if m.heads()[first.streamKey] != first {
			t.Fatalf("%s batch does not start at its stream's lowest offset", m.name)
		}
	}
	if m.name == "sjf" {
		bytes := map[skey]int64{}
		for _, e := range all {
			bytes[e.streamKey] += e.r.Length
		}
		for k, v := range bytes {
			if v < bytes[first.streamKey] {
				t.Fatalf("sjf served a stream of %d bytes while %v has %d", bytes[first.streamKey], k, v)
			}
		}
	}
	if m.name == "mlf" {
		items := make([]item, n)
		for i, r := range b.Requests {
			items[i] = item{r: r}
		}
		if !quantaCover(items, m.now, cfg.Quantum, cfg.Timeslice) {
			t.Fatalf("mlf dispatched a batch its quanta do not cover")
		}
	}
	if m.name == "aioli" && m.s.InFlight() > 1 {
		t.Fatalf("aioli has %d batches in flight, it is synchronous", m.s.InFlight())
	}
	// Starvation bounds, in batches dispatched since the request arrived.
	for _, r := range b.Requests {
		e := m.queued[r.ID]
		waited := m.batches - e.batches
		switch m.name {
		case "noop", "fifo", "to", "to-agg":
			if waited > e.queued {
				t.Fatalf("%s: request waited %d batches with %d queued ahead", m.name, waited, e.queued)
			}
		case "sw":
			if e.swEpoch != m.swEpoch {
				break
			}
			later := 0
			for _, a := range m.added[e.addIdx+1:] {
				if a.r.Arrival/cfg.SWWindow <= e.r.Arrival/cfg.SWWindow {
					later++
				}
			}
			if waited > e.queued+later {
				t.Fatalf("sw: request waited %d batches, bound %d queued + %d same-window arrivals", waited, e.queued, later)
			}
		}
	}
	m.checkRoundRobin(first.streamKey, b)
}

// checkRoundRobin: while a stream waits, every other stream is served in at
// most one block of consecutive batches (one turn) before it (mlf, hbrr).
func (m *model) checkRoundRobin(k skey, b Batch) {
	switch m.name {
	case "hbrr":
	case "mlf":
		if m.minQuantum < 8<<10 { // heads may have been ineligible and skipped
			return
		}
	case "wfq":
		m.checkWFQ(b)
		return
	default:
		return
	}
	for s, seen := range m.seen {
		if s == k {
			continue
		}
		if closed, ok := seen[k]; ok && closed {
			m.t.Fatalf("%s served stream %v twice while %v waited", m.name, k, s)
		}
		seen[k] = false
		if m.hasLast && m.lastKey != k {
			if _, ok := seen[m.lastKey]; ok {
				seen[m.lastKey] = true
			}
		}
	}
	m.seen[k] = map[skey]bool{}
	m.lastKey, m.hasLast = k, true
}

// checkWFQ: while queue i waits, queue j dispatches at most
// (K+1) x allot_j + maxLen bytes, K the rounds a head may need.
func (m *model) checkWFQ(b Batch) {
	const maxLen = 8 << 10
	minAllot := slices.Min(m.minAllot)
	k := (maxLen + minAllot - 1) / minAllot
	for i := range m.wfqBytes {
		if i == b.Queue {
			continue
		}
		m.wfqBytes[i][b.Queue] += b.Length
		if bound := (k+2)*m.maxAllot[b.Queue] + maxLen; m.queueLen(i) > 0 && m.wfqBytes[i][b.Queue] > bound {
			m.t.Fatalf("wfq: queue %d sent %d bytes while queue %d waited (bound %d)",
				b.Queue, m.wfqBytes[i][b.Queue], i, bound)
		}
	}
	clear(m.wfqBytes[b.Queue])
}

func (m *model) checkAIOLiSelection(b Batch) {
	cfg := m.cfg()
	first := m.queued[b.Requests[0].ID]
	for _, h := range m.heads() {
		it := item{r: h.r, seq: h.seq}
		if eligibleAt(&it, cfg.Quantum, cfg.Timeslice) > m.now {
			continue
		}
		if h.r.Arrival < first.r.Arrival || (h.r.Arrival == first.r.Arrival && h.seq < first.seq) {
			m.t.Fatalf("aioli selected head arrived %v (seq %d) while eligible head arrived %v (seq %d)",
				first.r.Arrival, first.seq, h.r.Arrival, h.seq)
		}
	}
}

func (m *model) remove(b Batch) {
	for _, r := range b.Requests {
		delete(m.queued, r.ID)
	}
	cp := b
	cp.Requests = slices.Clone(b.Requests)
	m.flight[b.ID] = cp
	m.batches++
	if m.streamEmpty(keyOf(&b.Requests[0])) {
		delete(m.seen, keyOf(&b.Requests[0]))
	}
}

func (m *model) complete(id uint64) {
	b := m.flight[id]
	// The scheduler must not have touched the batch's requests before Complete.
	if err := m.s.Complete(m.now, id, b.Length, time.Microsecond); err != nil {
		m.t.Fatalf("Complete(%#x): %v", id, err)
	}
	delete(m.flight, id)
}

func (m *model) completeRandom() {
	if len(m.flight) == 0 {
		return
	}
	ids := make([]uint64, 0, len(m.flight))
	for id := range m.flight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	m.complete(rapid.SampledFrom(ids).Draw(m.t, "complete"))
}

// finish drains the scheduler and checks every request left exactly once.
func (m *model) finish() {
	for guard := 0; ; guard++ {
		if guard > 100000 {
			m.t.Fatalf("%s does not drain: %d queued, %d in flight", m.name, m.s.Len(), m.s.InFlight())
		}
		if len(m.flight) > 0 {
			ids := make([]uint64, 0, len(m.flight))
			for id := range m.flight {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				m.complete(id)
			}
		}
		if len(m.queued) == 0 {
			break
		}
		_, _, retry := m.peekRetry()
		if retry > m.now {
			m.now = retry
		}
		m.next()
	}
	if m.s.Len() != 0 || m.s.InFlight() != 0 || m.s.base().ids.n != 0 || m.s.base().ids.hasZero {
		m.t.Fatalf("after draining: Len %d, InFlight %d, ids %d", m.s.Len(), m.s.InFlight(), m.s.base().ids.n)
	}
	st := m.s.Stats()
	if st.Added != uint64(len(m.added)) || st.Dispatched != uint64(len(m.added)) || st.Batches != uint64(m.batches) || st.Completed != uint64(m.batches) {
		m.t.Fatalf("stats %+v, want %d added and dispatched, %d batches", st, len(m.added), m.batches)
	}
}

// peekRetry asks for the retry time without dispatching, on a clone-free
// path: it only reads the model's TWINS window end and the quanta.
func (m *model) peekRetry() (Batch, bool, time.Duration) {
	cfg := m.cfg()
	switch m.s.(type) {
	case *twins:
		if m.twStarted {
			return Batch{}, false, m.twStart + cfg.Window
		}
	case *mlf, *aioli:
		var at time.Duration = -1
		for _, h := range m.heads() {
			it := item{r: h.r}
			if e := eligibleAt(&it, cfg.Quantum, cfg.Timeslice); at < 0 || e < at {
				at = e
			}
		}
		if at > m.now {
			return Batch{}, false, at
		}
	}
	return Batch{}, false, 0
}

func runModel(t *rapid.T, name string) {
	cfg := drawConfig(t)
	m := newModel(t, name, cfg)
	steps := rapid.IntRange(20, 300).Draw(t, "steps")
	for range steps {
		switch rapid.IntRange(0, 9).Draw(t, "action") {
		case 0, 1, 2, 3:
			m.add()
		case 4, 5, 6:
			m.next()
		case 7:
			m.completeRandom()
		case 8:
			m.now += time.Duration(rapid.IntRange(1, 3000).Draw(t, "stepUs")) * time.Microsecond
		case 9:
			if rapid.IntRange(0, 3).Draw(t, "tune") == 0 {
				old := m.cfg().SWWindow
				p := drawParams(t, m.cfg())
				if err := m.s.SetParams(m.now, p); err != nil {
					t.Fatalf("SetParams(%+v): %v", p, err)
				}
				if m.cfg().SWWindow != old {
					m.swEpoch++
				}
				m.trackParams()
			}
		}
	}
	m.finish()
}

func TestProperties(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { runModel(t, name) })
		})
	}
}
