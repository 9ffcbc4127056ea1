package qos

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// DefaultQuantum is the bytes a job of weight 1 may release per round of
// deficit round robin when the node is saturated.
const DefaultQuantum = 1 << 20

// Basis is what fair sharing divides between the jobs of a saturated
// node.
type Basis int

const (
	// ShareTime divides the data servers' time: each job is charged, at
	// completion (Gate.Done), the time its requests occupied the servers,
	// and the job with the least time per unit of weight goes next, for a
	// job window (Config.Window) in which the gate releases that job's
	// requests alone. A job whose requests are cheap per byte (streaming)
	// then moves more bytes than one whose requests are dear (seeking),
	// and each gets its weight's share of the servers, as under time
	// slicing (Wachs et al., "Argon: performance insulation for shared
	// storage servers", FAST 2007). The default.
	ShareTime Basis = iota
	// ShareBytes divides the bytes released to the scheduler by deficit
	// round robin (Config.Quantum bytes per round and unit of weight),
	// whatever they cost the servers.
	ShareBytes
)

// String is the basis's name: "time" or "bytes".
func (b Basis) String() string {
	switch b {
	case ShareTime:
		return "time"
	case ShareBytes:
		return "bytes"
	}
	return fmt.Sprintf("Basis(%d)", int(b))
}

// ParseBasis is the Basis named s ("time" or "bytes").
func ParseBasis(s string) (Basis, error) {
	switch s {
	case "time":
		return ShareTime, nil
	case "bytes":
		return ShareBytes, nil
	}
	return 0, fmt.Errorf("%w: share %q: want time or bytes", ErrBadRule, s)
}

// Config configures a Gate.
type Config struct {
	Rules []Rule
	// Share is what fair sharing divides (default ShareTime).
	Share Basis
	// Quantum is the bytes per round and unit of weight of deficit round
	// robin under ShareBytes (0: DefaultQuantum).
	Quantum int64
	// Window is, under ShareTime, the job window per unit of weight: the
	// service time a job chosen to go next may use (Window x its weight,
	// charged at release by estimate) before the gate chooses again, and
	// the longest it may hold the node (the same span of the caller's
	// time). While its window lasts, the job holds the node: the gate
	// releases no other job's request while the job has requests queued,
	// or has requests in flight and released one less than Anticipation
	// ago (a closed-loop job's next request is on its way), so that each
	// job's requests reach the data servers in runs, as they do when it
	// runs alone, and a streaming job keeps streaming. A job with nothing
	// queued that anticipation does not cover, or whose head waits for its
	// bucket, ends its window at once: the gate is work-conserving. A job
	// that overdraws its window (estimates corrected at completion) waits
	// longer for its next one, so the shares hold over a few rounds.
	// 0: DefaultWindow; negative: choose at every request.
	Window time.Duration
	// Anticipation is, under ShareTime, how long after its last release
	// the job whose window runs holds the node with nothing queued but
	// requests in flight (0: DefaultAnticipation; negative: never, the
	// window ends as soon as the job has nothing queued, and the jobs'
	// requests interleave at the data servers whenever a closed-loop job
	// waits for its completions).
	Anticipation time.Duration
	// Fairness is, under ShareTime, the floor of Jain's index of the
	// shares of the data servers' time the gate gives the jobs with
	// requests queued (per unit of weight, each job counted by its
	// weight; 1: every job its weight's share exactly). Below 1 the gate
	// gives more of the servers to the jobs that move more bytes per
	// second of server time (their efficiency, measured at completion
	// over their recent requests), as much as keeps the index at the
	// floor: the shares that maximise the node's bytes per second of
	// server time under it (for two jobs of equal weight at 0.9, 2:1 to
	// the more efficient). No job gets less than half its weight's share.
	// Weights from rules still multiply; a job asking for less than its
	// share leaves the rest to the others. 0: DefaultFairness; it must
	// not be negative or above 1.
	Fairness float64
}

// DefaultFairness is the gate's default Config.Fairness: Jain's index of
// the jobs' shares of server time at least 0.9, as much as 2:1 between two
// jobs toward the one that moves more bytes per second of server time.
const DefaultFairness = 0.9

// minShare is the least share of the servers' time a job with requests
// queued gets under a Fairness below 1, as a fraction of its weight's
// share.
const minShare = 0.5

// DefaultWindow is the gate's default Config.Window: 100 ms of the data
// servers' time, 25 ms of the caller's time for a job keeping four data
// servers busy.
const DefaultWindow = 100 * time.Millisecond

// DefaultAnticipation is the gate's default Config.Anticipation: a few
// round trips of a client that sends its next request when the previous
// one completes (as anticipatory scheduling waits for a process's next
// request: Iyer and Druschel, "Anticipatory scheduling: a disk scheduling
// framework to overcome deceptive idleness in synchronous I/O", SOSP 2001).
const DefaultAnticipation = 5 * time.Millisecond

// DefaultCostPerByte is the service time per byte the gate assumes for a
// job before any of its requests, or any request at all, has completed
// (1 ns: 1 GB/s), under ShareTime.
const DefaultCostPerByte = 1.0

// costDecay is the weight of the past in a job's service time per byte,
// per completed request.
const costDecay = 0.95

// ErrBadRequest is returned by Add for a request of non-positive length or
// an unknown operation.
var ErrBadRequest = errors.New("qos: bad request")

// bucket is one token bucket: tokens in bytes, refilled at rate up to
// burst. A request of n bytes passes when the bucket holds n tokens, or is
// full when n exceeds the burst; the tokens may then go negative (a debt).
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Duration
}

func (b *bucket) refill(now time.Duration) {
	if now > b.last {
		b.tokens = math.Min(b.burst, b.tokens+b.rate*float64(now-b.last)/1e9)
		b.last = now
	}
}

// need is the tokens a request of n bytes waits for.
func (b *bucket) need(n int64) float64 { return math.Min(float64(n), b.burst) }

// at is the earliest time at or after now when the bucket holds need
// tokens (it has been refilled to now).
func (b *bucket) at(now time.Duration, need float64) time.Duration {
	if b.tokens >= need {
		return now
	}
	return now + time.Duration(math.Ceil((need-b.tokens)/b.rate*1e9)) + 1
}

// class is the bucket of one job under one rule.
type class struct {
	rule int // index in the gate's rules
	b    bucket
}

// entry is a queued request.
type entry struct {
	r   sched.Request
	cls *class // nil: uncapped
}

// job is one job's queue and state.
type job struct {
	name    string
	weight  int64
	classes map[int]*class // by rule index
	ruleOf  [3]int         // rule index per rw.Op (0 unused), -1: none
	q       []entry        // FIFO
	head    int            // index of the first queued entry in q
	deficit int64
	active  bool
	stats   JobStats
	// ShareTime: the job's virtual time (ns of service charged per unit
	// of weight: actual for completed requests, estimated for those in
	// flight) and its decayed service time and bytes of completed
	// requests, whose ratio estimates the next request's cost.
	vt           float64
	costT, costB float64
	inflight     int           // requests released and not Done (ShareTime)
	lastRelease  time.Duration // when the gate last released one of its requests
	// eff is the job's effective weight under ShareTime: its weight,
	// or under a Fairness below 1 its share of the servers' time (set
	// at each window's start) times the weights of the jobs sharing.
	eff float64
	// waiting: none of the job's requests has completed since its last
	// release (a closed-loop job cannot have sent its next request).
	waiting bool
	// completed: one of its requests completed since the gate last
	// looked (Next): the anticipation starts again then.
	completed bool
	// busy: the job is in the gate's busy list (requests queued or in
	// flight when last looked at).
	busy bool
}

// pend is a released request under ShareTime, until Done.
type pend struct {
	j      *job
	est    float64 // ns per unit of weight charged at release
	eff    float64 // the job's effective weight at release
	length int64
}

func (j *job) len() int { return len(j.q) - j.head }

// JobStats counts one job's requests through the gate.
type JobStats struct {
	Job           string
	Weight        int
	Queued        int   // requests waiting in the gate
	QueuedBytes   int64 // their bytes
	Released      int64 // requests released to the scheduler
	ReleasedBytes int64
	Throttled     int64         // times the job's head waited for its bucket
	ThrottledTime time.Duration // time its head requests waited for a bucket (summed, counted at release)
	// ServiceTime is the data servers' time charged to the job for its
	// completed requests (Gate.Done; ShareTime only).
	ServiceTime      time.Duration
	throttledSince   time.Duration
	throttledPending bool
}

// Gate holds requests per job and releases them by token bucket and deficit
// round robin. See the package documentation.
type Gate struct {
	rules   []Rule
	share   Basis
	quantum int64
	// ShareTime: requests in flight by id, the virtual time of the last
	// release (where a job that becomes backlogged starts, so that idle
	// time is no credit), and the decayed cost of every job's requests
	// (the estimate for a job without completions).
	pending      map[uint64]pend
	virt         float64
	costT, costB float64
	window       time.Duration // Config.Window, 0: none
	anticipate   time.Duration // Config.Anticipation, 0: none
	fairness     float64       // Config.Fairness
	w, e, s      []float64     // floorShares's weights, efficiencies and shares (reused)
	busy         []*job        // jobs with requests queued or in flight, in the order they became so
	cut          *job          // the job whose window runs, nil none
	left         float64       // ns of service its window has left
	until        time.Duration // when its window ends at the latest
	jobs         map[string]*job
	ring         []*job // active jobs in round-robin order
	cur          int    // ring index of the job being served
	fresh        bool   // the job at cur has not had its quantum this visit
	queued       int
	bytes        int64
}

// NewGate returns a Gate applying cfg.Rules (validated: errors wrap
// ErrBadRule).
func NewGate(cfg Config) (*Gate, error) {
	if cfg.Quantum < 0 {
		return nil, fmt.Errorf("%w: quantum %d must not be negative", ErrBadRule, cfg.Quantum)
	}
	if cfg.Quantum == 0 {
		cfg.Quantum = DefaultQuantum
	}
	if cfg.Share != ShareTime && cfg.Share != ShareBytes {
		return nil, fmt.Errorf("%w: share %v", ErrBadRule, cfg.Share)
	}
	switch {
	case cfg.Window == 0:
		cfg.Window = DefaultWindow
	case cfg.Window < 0:
		cfg.Window = 0
	}
	switch {
	case cfg.Anticipation == 0:
		cfg.Anticipation = DefaultAnticipation
	case cfg.Anticipation < 0:
		cfg.Anticipation = 0
	}
	switch {
	case cfg.Fairness == 0:
		cfg.Fairness = DefaultFairness
	case !(cfg.Fairness > 0 && cfg.Fairness <= 1):
		return nil, fmt.Errorf("%w: fairness %v: want a floor of Jain's index above 0 and at most 1", ErrBadRule, cfg.Fairness)
	}
	g := &Gate{share: cfg.Share, quantum: cfg.Quantum, window: cfg.Window, anticipate: cfg.Anticipation,
		fairness: cfg.Fairness, jobs: map[string]*job{}, fresh: true, pending: map[uint64]pend{}}
	if err := g.SetRules(0, cfg.Rules); err != nil {
		return nil, err
	}
	return g, nil
}

// Rules returns the rules in force (the caller must not modify them).
func (g *Gate) Rules() []Rule { return g.rules }

// SetRules replaces the rules at time now. Queued requests stay queued and
// are re-classed: a job whose rule is unchanged (same job, op, rate and
// burst at any position) keeps its bucket's tokens; a new rule starts with a
// full bucket. On error nothing changes.
func (g *Gate) SetRules(now time.Duration, rules []Rule) error {
	rules = append([]Rule(nil), rules...)
	for i := range rules {
		if err := rules[i].Validate(); err != nil {
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
		if rules[i].Rate > 0 && rules[i].Burst == 0 {
			rules[i].Burst = DefaultBurst(rules[i].Rate)
		}
	}
	old := g.rules
	g.rules = rules
	for _, name := range g.sortedJobs() {
		j := g.jobs[name]
		prev := j.classes
		g.classify(j)
		for i, c := range j.classes {
			for k, p := range prev {
				if sameBucket(old[k], rules[i]) {
					p.b.refill(now)
					c.b.tokens, c.b.last = p.b.tokens, p.b.last
				}
			}
			c.b.refill(now)
		}
		for k := j.head; k < len(j.q); k++ {
			j.q[k].cls = j.classOf(j.q[k].r.Op)
		}
	}
	return nil
}

func sameBucket(a, b Rule) bool {
	return a.Job == b.Job && a.Op == b.Op && a.Rate == b.Rate && a.Burst == b.Burst
}

// classify sets j's weight, rules per operation and buckets (full, at
// time 0) from the gate's rules.
func (g *Gate) classify(j *job) {
	j.weight = 0
	j.classes = map[int]*class{}
	for _, op := range []rw.Op{rw.Read, rw.Write} {
		j.ruleOf[op] = -1
		for i, r := range g.rules {
			if r.Matches(j.name, op) {
				j.ruleOf[op] = i
				if r.Rate > 0 && j.classes[i] == nil {
					j.classes[i] = &class{rule: i, b: bucket{rate: r.Rate, burst: float64(r.Burst), tokens: float64(r.Burst)}}
				}
				break
			}
		}
	}
	for _, r := range g.rules {
		if (r.Job == Any || r.Job == j.name) && r.Weight > 0 {
			j.weight = int64(r.Weight)
			break
		}
	}
	if j.weight == 0 {
		j.weight = 1
	}
	j.eff = float64(j.weight)
	j.stats.Weight = int(j.weight)
}

func (j *job) classOf(op rw.Op) *class {
	if i := j.ruleOf[op]; i >= 0 {
		return j.classes[i]
	}
	return nil
}

// Add queues request r of job at time now (job "" is a request without a
// job: the rules of job=* apply to it). It returns ErrBadRequest, and
// queues nothing, for a non-positive length or an unknown operation.
func (g *Gate) Add(now time.Duration, jobName string, r sched.Request) error {
	if r.Length <= 0 || !r.Op.Valid() {
		return fmt.Errorf("%w: length %d, op %v", ErrBadRequest, r.Length, r.Op)
	}
	j := g.jobs[jobName]
	if j == nil {
		if len(g.jobs) >= 4096 {
			g.prune()
		}
		j = &job{name: jobName}
		j.stats.Job = jobName
		g.classify(j)
		for _, c := range j.classes {
			c.b.last = now
		}
		g.jobs[jobName] = j
	}
	if r.Arrival == 0 {
		r.Arrival = now
	}
	if !j.busy {
		j.busy = true
		g.busy = append(g.busy, j)
	}
	j.q = append(j.q, entry{r: r, cls: j.classOf(r.Op)})
	j.stats.Queued++
	j.stats.QueuedBytes += r.Length
	g.queued++
	g.bytes += r.Length
	if !j.active {
		j.active = true
		j.deficit = 0
		if j.inflight == 0 {
			// Idle time is no credit; a job whose requests are in
			// flight (a closed loop between two of its requests) is
			// not idle.
			j.vt = math.Max(j.vt, g.virt)
		}
		g.ring = append(g.ring, j)
	}
	return nil
}

// Share is what the gate's fair sharing divides.
func (g *Gate) Share() Basis { return g.share }

// prune forgets idle jobs (nothing queued) whose buckets are full or who
// have none, so that a node serving many short jobs keeps bounded state.
func (g *Gate) prune() {
	for name, j := range g.jobs {
		if j.active || j.inflight > 0 {
			continue
		}
		full := true
		for _, c := range j.classes {
			full = full && c.b.tokens >= c.b.burst
		}
		if full || len(j.classes) == 0 {
			delete(g.jobs, name)
		}
	}
}

// Len is the number of requests queued in the gate and their bytes.
func (g *Gate) Len() (requests int, bytes int64) { return g.queued, g.bytes }

// Next releases the next request at time now: the head of the job that
// fair sharing serves next among the jobs whose head's bucket holds enough
// tokens (under ShareTime the job whose window runs, else the job with the
// least service time per unit of weight; under ShareBytes the next by
// deficit round robin). It returns ok=false when nothing may go now, with
// retryAt the earliest time something may (a throttled job's head, or the
// end of the anticipation of a job whose window runs; 0: nothing queued,
// or a job holds its window until its next Add or Done). The caller calls
// Next only while its scheduler has room: when it always has, the jobs'
// order does not matter and only the buckets delay requests.
func (g *Gate) Next(now time.Duration) (jobName string, r sched.Request, ok bool, retryAt time.Duration) {
	if len(g.ring) == 0 {
		return "", sched.Request{}, false, 0
	}
	// Which jobs may send their head now, and when the others may.
	eligible := 0
	for _, j := range g.ring {
		if at := g.headAt(now, j); at <= now {
			eligible++
		} else {
			if !j.stats.throttledPending {
				j.stats.throttledPending = true
				j.stats.throttledSince = now
				j.stats.Throttled++
			}
			if retryAt == 0 || at < retryAt {
				retryAt = at
			}
		}
	}
	if eligible == 0 {
		return "", sched.Request{}, false, retryAt
	}
	if g.share == ShareTime {
		return g.nextTime(now, retryAt)
	}
	for {
		if g.cur >= len(g.ring) {
			g.cur = 0
		}
		j := g.ring[g.cur]
		if g.headAt(now, j) > now {
			g.advance()
			continue
		}
		if g.fresh {
			j.deficit += g.quantum * j.weight
			g.fresh = false
		}
		e := j.q[j.head]
		if e.r.Length > j.deficit {
			g.advance()
			continue
		}
		j.deficit -= e.r.Length
		g.release(now, g.cur)
		return j.name, e.r, true, 0
	}
}

// nextTime is Next under ShareTime, with at least one head eligible and
// retryAt the earliest time a throttled head may go (0: none).
func (g *Gate) nextTime(now, retryAt time.Duration) (string, sched.Request, bool, time.Duration) {
	c := g.cut
	running := c != nil && g.left > 0 && now < g.until
	if running {
		// A job whose head waited for its bucket goes as soon as the
		// bucket allows, ahead of the window, if it is behind the
		// window's job: a capped job is paced by its rule (its bucket
		// would fill and waste its rate while it waited for a window).
		for i, j := range g.ring {
			if j != c && j.stats.throttledPending && j.vt < c.vt && g.headAt(now, j) <= now {
				return g.releaseTime(now, i)
			}
		}
		if c.completed {
			// A completion is when a closed-loop job sends its next
			// request: anticipate it from now.
			c.completed = false
			c.lastRelease = max(c.lastRelease, now)
		}
		if c.len() == 0 && c.inflight > 0 && c.waiting && c.costB > 0 && g.anticipate > 0 {
			// None of its requests has completed since its last
			// release (they wait behind the previous window's at the
			// servers): its next request cannot be on its way yet.
			return "", sched.Request{}, false, earliest(retryAt, g.until)
		}
		if c.len() == 0 && c.inflight > 0 && now < c.lastRelease+g.anticipate {
			// The window's job waits for its completions and its next
			// request: the node stays its own.
			return "", sched.Request{}, false, earliest(retryAt, c.lastRelease+g.anticipate)
		}
	}
	if !running {
		g.reshare()
	}
	best := -1
	for i, j := range g.ring {
		if g.headAt(now, j) > now {
			continue
		}
		if running && j == c {
			best = i
			break
		}
		if best < 0 || j.vt < g.ring[best].vt {
			best = i
		}
	}
	if j := g.ring[best]; !running || j != c {
		w := time.Duration(float64(g.window) * j.eff)
		g.cut, g.left, g.until = j, float64(w), now+w
	}
	return g.releaseTime(now, best)
}

// releaseTime releases the head of the job at ring index i under
// ShareTime, charging its estimated service to the job (and to the window
// if the job's runs).
func (g *Gate) releaseTime(now time.Duration, i int) (string, sched.Request, bool, time.Duration) {
	j := g.ring[i]
	g.virt = math.Max(g.virt, j.vt)
	j.lastRelease = now
	j.waiting = true
	e := g.release(now, i)
	cost := float64(e.r.Length) * g.costPerByte(j)
	if j == g.cut {
		g.left -= cost
	}
	est := cost / j.eff
	j.vt += est
	j.inflight++
	g.pending[e.r.ID] = pend{j: j, est: est, eff: j.eff, length: e.r.Length}
	return j.name, e.r, true, 0
}

// reshare sets the effective weight of every job with requests queued or
// in flight from the shares of server time floorShares gives them (their
// weights alone when the fairness is 1). The jobs in flight count though
// they have nothing queued at this instant: a closed-loop job between two
// of its requests keeps its share, so the shares do not change with the
// instant a window starts.
func (g *Gate) reshare() {
	k := 0
	for _, j := range g.busy {
		if j.active || j.inflight > 0 {
			g.busy[k] = j
			k++
		} else {
			j.busy = false
		}
	}
	clear(g.busy[k:])
	g.busy = g.busy[:k]
	if g.fairness >= 1 || len(g.busy) < 2 {
		for _, j := range g.busy {
			j.eff = float64(j.weight)
		}
		return
	}
	g.w, g.e, g.s = g.w[:0], g.e[:0], g.s[:0]
	var total float64
	for _, j := range g.busy {
		g.w = append(g.w, float64(j.weight))
		g.e = append(g.e, 1/g.costPerByte(j))
		g.s = append(g.s, 0)
		total += float64(j.weight)
	}
	floorShares(g.w, g.e, g.fairness, g.s)
	for i, j := range g.busy {
		j.eff = g.s[i] * total
	}
}

// floorShares sets s to the shares of the servers' time (summing to 1)
// that maximise sum(s[i] x e[i]), the bytes per unit of server time of jobs
// of weights w and efficiencies e (bytes per unit of server time), while
// Jain's index of the shares per unit of weight, each job counted by its
// weight, (sum s)^2 / (sum w x sum s^2/w), stays at least floor. The index
// is at least floor where sum s^2/w <= 1/(W floor), W the weights' sum: a
// ball around the equal shares w/W, of radius^2 1/(W floor) - 1/W in the
// metric sum x^2/w; the best shares lie on it, from the centre along the
// efficiencies' deviation from their weighted mean (each share moved by
// w[i] (e[i] - mean) times one factor). Where that would leave a job less
// than minShare of its weight's share, the shares stop short, on the
// segment from the centre, where the first job reaches its least.
func floorShares(w, e []float64, floor float64, s []float64) {
	var wAll, mean float64
	for i := range w {
		wAll += w[i]
		mean += w[i] * e[i]
	}
	mean /= wAll
	var d2 float64
	for i := range w {
		d2 += w[i] * (e[i] - mean) * (e[i] - mean)
	}
	var k float64 // each share is w[i] (1/W + k (e[i]-mean))
	if r2 := 1/(wAll*floor) - 1/wAll; d2 > 0 && r2 > 0 {
		k = math.Sqrt(r2 / d2)
	}
	for i := range w {
		// The share falls to its least minShare/W per unit of weight
		// where k (mean-e[i]) = (1-minShare)/W.
		if e[i] < mean {
			k = math.Min(k, (1-minShare)/wAll/(mean-e[i]))
		}
	}
	for i := range w {
		s[i] = w[i] * (1/wAll + k*(e[i]-mean))
	}
}

// earliest is the earlier of two retry times, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// release takes the head of the job at ring index i out of the gate.
func (g *Gate) release(now time.Duration, i int) entry {
	j := g.ring[i]
	e := j.q[j.head]
	if e.cls != nil {
		e.cls.b.tokens -= float64(e.r.Length)
	}
	j.q[j.head] = entry{}
	j.head++
	if j.stats.throttledPending {
		j.stats.throttledPending = false
		j.stats.ThrottledTime += now - j.stats.throttledSince
	}
	j.stats.Queued--
	j.stats.QueuedBytes -= e.r.Length
	j.stats.Released++
	j.stats.ReleasedBytes += e.r.Length
	g.queued--
	g.bytes -= e.r.Length
	if j.len() == 0 {
		j.q, j.head = j.q[:0], 0
		j.active = false
		j.deficit = 0
		g.ring = append(g.ring[:i], g.ring[i+1:]...)
		if i < g.cur {
			g.cur--
		} else if i == g.cur {
			g.fresh = true
		}
	} else if j.head > 64 && j.head*2 > len(j.q) {
		n := copy(j.q, j.q[j.head:])
		clear(j.q[n:])
		j.q, j.head = j.q[:n], 0
	}
	return e
}

// costPerByte is the service time per byte the gate expects of j's next
// request: its recent requests', else every job's, else
// DefaultCostPerByte.
func (g *Gate) costPerByte(j *job) float64 {
	switch {
	case j.costB > 0:
		return j.costT / j.costB
	case g.costB > 0:
		return g.costT / g.costB
	}
	return DefaultCostPerByte
}

// Done records at completion that released request id (a piece the gate
// released: its sched.Request.ID) occupied the data servers for service,
// the time its job is charged under ShareTime in place of the estimate
// made at release. An id the gate does not know (not released by it, or
// already done) is ignored, as is every call under ShareBytes. Under
// ShareTime the gate remembers each released request until its Done: the
// caller calls Done once for every request Next released. The caller
// measures service: the daemon and the simulator (package ionode) take
// the time between an access's completion and the later of its dispatch
// and the previous completion on the same data server, shared between the
// access's pieces by bytes.
func (g *Gate) Done(id uint64, service time.Duration) {
	p, ok := g.pending[id]
	if !ok {
		return
	}
	delete(g.pending, id)
	j := p.j
	j.inflight--
	j.waiting = false
	j.completed = true
	service = max(service, 0)
	j.vt += float64(service)/p.eff - p.est
	j.stats.ServiceTime += service
	j.costT = j.costT*costDecay + float64(service)
	j.costB = j.costB*costDecay + float64(p.length)
	g.costT = g.costT*costDecay + float64(service)
	g.costB = g.costB*costDecay + float64(p.length)
}

func (g *Gate) advance() {
	g.cur++
	g.fresh = true
}

// headAt is the earliest time j's head request may go (now if it may now).
func (g *Gate) headAt(now time.Duration, j *job) time.Duration {
	e := j.q[j.head]
	if e.cls == nil {
		return now
	}
	e.cls.b.refill(now)
	return e.cls.b.at(now, e.cls.b.need(e.r.Length))
}

// Stats returns every known job's counters, by job id.
func (g *Gate) Stats() []JobStats {
	names := g.sortedJobs()
	out := make([]JobStats, 0, len(names))
	for _, n := range names {
		s := g.jobs[n].stats
		s.throttledPending, s.throttledSince = false, 0
		out = append(out, s)
	}
	return out
}

func (g *Gate) sortedJobs() []string {
	names := make([]string, 0, len(g.jobs))
	for n := range g.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
