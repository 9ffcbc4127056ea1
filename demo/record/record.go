package record

import (
	"slices"
	"sync"
	"time"

	"github.com/adaptio/adaptio/labels"
)

// NodeSecond is one I/O node's state during one second of the run.
type NodeSecond struct {
	Node      int           `json:"node"`
	Pattern   string        `json:"pattern"` // detected class: "FPP", "SC", "SS" or "" (idle)
	Op        string        `json:"op"`      // majority operation: "read", "write" or ""
	Window    time.Duration `json:"-"`       // TWINS window in force (JSON: "window_us")
	Explore   bool          `json:"explore"` // the window was chosen to explore
	Prob      float64       `json:"prob"`    // probability the policy chose that window
	Bandwidth float64       `json:"bw"`      // bytes per second completed in the second
}

// Second is the whole system during one second (virtual or wall-clock).
type Second struct {
	T     float64      `json:"t"`     // seconds since the start of the run (end of the second)
	Phase string       `json:"phase"` // workload phase the clients were running ("SS write"), "" between phases
	Nodes []NodeSecond `json:"nodes"`
	// Span is how many seconds before T the reports cover (0: one, the
	// Announcers' default interval).
	Span float64 `json:"span,omitempty"`
}

// Covers returns the span [T - Span, T] the second's reports describe.
func (s Second) Covers() (lo, hi float64) {
	return labels.Second{T: s.T, Span: s.Span}.Covers()
}

// Iteration is one completed phase run of the repeated experiment: an
// experiment iteration (what --iterations and Progress count) is one run of
// every phase of Meta.Phases.
type Iteration struct {
	N        int     `json:"n"`        // 1-based count of phase runs over the whole run
	K        int     `json:"k"`        // 1-based count among runs of the same phase: the experiment iteration it belongs to
	Phase    string  `json:"phase"`    // e.g. "SS write": class and operation
	Workload string  `json:"workload"` // e.g. "128p-shared-strided-write-32k"
	Start    float64 `json:"start"`    // seconds since the start of the run
	Seconds  float64 `json:"seconds"`  // execution time as the clients saw it
	Bytes    int64   `json:"bytes"`
	// Nodes is, when known, each I/O node's part of the phase, by node
	// index: its processes all started at Start; they ended Seconds later
	// and moved Bytes. A phase's slowest process sets its end, so the
	// others' nodes are done before it.
	Nodes []NodeSpan `json:"nodes,omitempty"`
}

// NodeSpan is one I/O node's part of a phase (Iteration.Nodes).
type NodeSpan struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	// Ends is, when known, when each of the node's processes ended
	// (seconds after the phase's Start), each having moved its part of
	// Bytes at an even rate from Start: EndBytes[i], or an equal part when
	// EndBytes is empty. A phase's last second at a node then carries only
	// the bytes of its processes still running, where Seconds and Bytes
	// alone spread the bytes evenly over the node's whole span.
	Ends     []float64 `json:"ends,omitempty"`
	EndBytes []int64   `json:"end_bytes,omitempty"`
}

// Parts returns s as pieces moving their bytes at an even rate
// (labels.Span.Parts): one per process when Ends is known, else the
// node's whole part.
func (s NodeSpan) Parts() []labels.Part { return labels.Span(s).Parts() }

// Estimate is the learned value of each window for one context (a detected
// pattern and operation, one bandit instance).
type Estimate struct {
	Context string    `json:"context"` // e.g. "SS write"
	Values  []float64 `json:"values"`  // per window, in Meta.Windows order
	Counts  []int64   `json:"counts"`  // pulls per window
	Best    int       `json:"best"`    // greedy window index
}

// Event is something worth a line in the log: a phase start, a pattern change, a decision.
type Event struct {
	T    float64 `json:"t"`
	Kind string  `json:"kind"` // "phase", "pattern", "explore", "info", "error"
	Text string  `json:"text"`
}

// StaticResult is the workload run under one fixed window.
type StaticResult struct {
	Window time.Duration      `json:"-"` // 0 for the learning run (JSON: "window_us")
	Label  string             `json:"label"`
	Phases map[string]float64 `json:"phases"` // mean execution seconds per phase
	// SE is the standard error of each phase's mean, where the iterations
	// are known (absent from reports that did not record them).
	SE    map[string]float64 `json:"se,omitempty"`
	Total float64            `json:"total"` // sum over phases of the mean seconds (one full cycle)
	// Confirmed marks a static window run again after the comparison
	// because it came out best in some phase or in the cycle: its figures
	// are the means over both runs' iterations (the real stack's
	// comparison; the winner of 7 noisy means is biased low).
	Confirmed bool `json:"confirmed,omitempty"`
}

// Meta describes the run.
type Meta struct {
	Mode         string          `json:"mode"` // "sim" or "real"
	Title        string          `json:"title"`
	Started      time.Time       `json:"started"`
	Nodes        int             `json:"nodes"`
	Servers      int             `json:"servers"`
	Windows      []time.Duration `json:"-"` // the Council's arms (JSON: "windows_us")
	StaticWindow time.Duration   `json:"-"` // fixed window, 0 when learning (JSON: "static_us")
	Policy       string          `json:"policy"`
	Epsilon      float64         `json:"epsilon"`
	StateDir     string          `json:"state_dir"`
	CarriedOver  int64           `json:"carried_over"` // bandit pulls loaded from the state directory at start
	DecisionLog  string          `json:"decision_log"` // the Council's decision log of this run (JSON lines)
	Phases       []string        `json:"phases"`       // phase cycle of one experiment iteration
	Workload     string          `json:"workload"`     // human description of the experiment
	Notes        []string        `json:"notes"`
	ValueUnit    string          `json:"value_unit"` // unit of the value estimates ("MiB/s")
	StaticOn     string          `json:"static_on"`  // where the static comparison ran: "sim" or "real" ("" : same as Mode)
	Iterations   int             `json:"iterations"` // experiment iterations planned, each one pass of every phase (0: unknown)
	Compare      int             `json:"compare"`    // iterations of each static window in the comparison (0: unknown or none)
	Limit        float64         `json:"limit_s"`    // seconds of run time after which the run stops (0: none)
}

// Recording is everything the run produced that the views and the report show.
type Recording struct {
	Meta        Meta           `json:"meta"`
	Seconds     []Second       `json:"seconds"`
	Iterations  []Iteration    `json:"iterations"`
	Estimates   []Estimate     `json:"estimates"`
	Events      []Event        `json:"events"`
	Static      []StaticResult `json:"static"`
	Decisions   Decisions      `json:"decisions"`
	Done        bool           `json:"done"`
	Interrupted bool           `json:"interrupted"` // stopped before the planned end (Ctrl-C, --duration)
	Elapsed     float64        `json:"elapsed"`     // seconds of run time
	// SecondsDropped is how many of the oldest seconds the Recorder let go
	// to stay within MaxSeconds (0 for runs shorter than that).
	SecondsDropped int `json:"seconds_dropped,omitempty"`
	// EventsDropped is the same for the events (MaxEvents).
	EventsDropped int `json:"events_dropped,omitempty"`
}

// MaxEvents is the most events a Recorder keeps: beyond it the oldest
// half is let go (a 10,000-iteration simulated run logs some 10^5).
const MaxEvents = 1 << 14

// MaxSeconds is the most seconds a Recorder keeps (about 9 hours of run
// time, some 35 MB): beyond it the oldest half is let go, so a long
// simulated run's memory stays bounded. Positions in Since and Delta.Next
// count every second added, kept or not.
const MaxSeconds = 1 << 15

// Decisions counts the Council's rounds that decided something (at least
// one node with a detected pattern voted).
type Decisions struct {
	Rounds   int64   `json:"rounds"`
	Explores int64   `json:"explores"`
	ByWindow []int64 `json:"by_window"` // rounds that chose each window, in Meta.Windows order
}

// Delta is the part of a Recording after given positions, for incremental views.
type Delta struct {
	Meta       Meta           `json:"meta"`
	Seconds    []Second       `json:"seconds"`
	Iterations []Iteration    `json:"iterations"`
	Events     []Event        `json:"events"`
	Estimates  []Estimate     `json:"estimates"`
	Static     []StaticResult `json:"static"`
	Next       [3]int         `json:"next"` // positions to ask from next time (seconds, iterations, events)
	Progress   Progress       `json:"progress"`
	Done       bool           `json:"done"`
	Elapsed    float64        `json:"elapsed"`
}

// Recorder accumulates a Recording. It is safe for concurrent use: the run
// writes, the terminal view and the dashboard read.
type Recorder struct {
	mu      sync.Mutex
	rec     Recording
	changed chan struct{}
}

// New returns a Recorder for a run described by m.
func New(m Meta) *Recorder {
	return &Recorder{rec: Recording{Meta: m}, changed: make(chan struct{})}
}

func (r *Recorder) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (r *Recorder) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// SetMeta replaces the run description.
func (r *Recorder) SetMeta(m Meta) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Meta = m
	r.notify()
}

// UpdateMeta changes the run description under the lock.
func (r *Recorder) UpdateMeta(f func(*Meta)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.rec.Meta)
	r.notify()
}

// AddSecond appends one second; the Recorder keeps s (do not modify it afterwards).
func (r *Recorder) AddSecond(s Second) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Seconds = append(r.rec.Seconds, s)
	if n := len(r.rec.Seconds); n > MaxSeconds {
		k := n / 2
		r.rec.Seconds = slices.Clone(r.rec.Seconds[k:]) // a new array: the old one is freed
		r.rec.SecondsDropped += k
	}
	if s.T > r.rec.Elapsed {
		r.rec.Elapsed = s.T
	}
	r.notify()
}

// AddIteration appends a completed phase, numbering it (N and K are filled in).
func (r *Recorder) AddIteration(it Iteration) Iteration {
	r.mu.Lock()
	defer r.mu.Unlock()
	it.N = len(r.rec.Iterations) + 1
	it.K = 1
	for _, p := range r.rec.Iterations {
		if p.Phase == it.Phase {
			it.K++
		}
	}
	r.rec.Iterations = append(r.rec.Iterations, it)
	r.notify()
	return it
}

// SetEstimates replaces the value estimates (sorted by context for stable output).
func (r *Recorder) SetEstimates(es []Estimate) {
	es = slices.Clone(es)
	slices.SortFunc(es, func(a, b Estimate) int { return compareContext(a.Context, b.Context) })
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Estimates = es
	r.notify()
}

// AddEvent appends an event.
func (r *Recorder) AddEvent(t float64, kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Events = append(r.rec.Events, Event{T: t, Kind: kind, Text: text})
	if n := len(r.rec.Events); n > MaxEvents {
		k := n / 2
		r.rec.Events = slices.Clone(r.rec.Events[k:])
		r.rec.EventsDropped += k
	}
	r.notify()
}

// SetStatic sets the static-window comparison.
func (r *Recorder) SetStatic(s []StaticResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Static = slices.Clone(s)
	r.notify()
}

// AddDecision counts one deciding round that chose window index w.
func (r *Recorder) AddDecision(w int, explore bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := &r.rec.Decisions
	if len(d.ByWindow) < len(r.rec.Meta.Windows) {
		d.ByWindow = append(d.ByWindow, make([]int64, len(r.rec.Meta.Windows)-len(d.ByWindow))...)
	}
	d.Rounds++
	if explore {
		d.Explores++
	}
	if w >= 0 && w < len(d.ByWindow) {
		d.ByWindow[w]++
	}
}

// SetElapsed records the run time so far (seconds).
func (r *Recorder) SetElapsed(t float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Elapsed = t
}

// Interrupt marks the run as stopped before its planned end.
func (r *Recorder) Interrupt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Interrupted = true
}

// Finish marks the run done.
func (r *Recorder) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Done = true
	r.notify()
}

// Snapshot returns a copy of the whole recording.
func (r *Recorder) Snapshot() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.rec
	c.Seconds = slices.Clone(c.Seconds)
	c.Iterations = slices.Clone(c.Iterations)
	c.Estimates = slices.Clone(c.Estimates)
	c.Events = slices.Clone(c.Events)
	c.Static = slices.Clone(c.Static)
	c.Decisions.ByWindow = slices.Clone(c.Decisions.ByWindow)
	return c
}

// Since returns what was added after the given positions. At most maxSeconds
// of the newest seconds are returned (0: all), so a late-joining dashboard
// does not download a whole simulated week.
func (r *Recorder) Since(seconds, iterations, events, maxSeconds int) Delta {
	r.mu.Lock()
	defer r.mu.Unlock()
	clamp := func(i, n int) int { return min(max(i, 0), n) }
	s0 := clamp(seconds-r.rec.SecondsDropped, len(r.rec.Seconds))
	if maxSeconds > 0 && len(r.rec.Seconds)-s0 > maxSeconds {
		s0 = len(r.rec.Seconds) - maxSeconds
	}
	i0 := clamp(iterations, len(r.rec.Iterations))
	e0 := clamp(events-r.rec.EventsDropped, len(r.rec.Events))
	return Delta{
		Meta:       r.rec.Meta,
		Seconds:    slices.Clone(r.rec.Seconds[s0:]),
		Iterations: slices.Clone(r.rec.Iterations[i0:]),
		Events:     slices.Clone(r.rec.Events[e0:]),
		Estimates:  slices.Clone(r.rec.Estimates),
		Static:     slices.Clone(r.rec.Static),
		Next:       [3]int{r.rec.SecondsDropped + len(r.rec.Seconds), len(r.rec.Iterations), r.rec.EventsDropped + len(r.rec.Events)},
		Progress:   ProgressOf(r.rec.Meta, r.rec.Iterations, r.rec.Elapsed),
		Done:       r.rec.Done,
		Elapsed:    r.rec.Elapsed,
	}
}

// Latest returns the newest second (ok=false when none yet).
func (r *Recorder) Latest() (Second, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rec.Seconds) == 0 {
		return Second{}, false
	}
	return r.rec.Seconds[len(r.rec.Seconds)-1], true
}

// compareContext orders contexts by class (SS, SC, FPP as in the papers'
// figures come first for the experiment's pattern) then operation.
func compareContext(a, b string) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}
