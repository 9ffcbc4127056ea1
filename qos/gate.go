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

// Config configures a Gate.
type Config struct {
	Rules []Rule
	// Quantum is the bytes per round and unit of weight of deficit round
	// robin (0: DefaultQuantum).
	Quantum int64
}

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
}

func (j *job) len() int { return len(j.q) - j.head }

// JobStats counts one job's requests through the gate.
type JobStats struct {
	Job              string
	Weight           int
	Queued           int   // requests waiting in the gate
	QueuedBytes      int64 // their bytes
	Released         int64 // requests released to the scheduler
	ReleasedBytes    int64
	Throttled        int64         // times the job's head waited for its bucket
	ThrottledTime    time.Duration // time its head requests waited for a bucket (summed, counted at release)
	throttledSince   time.Duration
	throttledPending bool
}

// Gate holds requests per job and releases them by token bucket and deficit
// round robin. See the package documentation.
type Gate struct {
	rules   []Rule
	quantum int64
	jobs    map[string]*job
	ring    []*job // active jobs in round-robin order
	cur     int    // ring index of the job being served
	fresh   bool   // the job at cur has not had its quantum this visit
	queued  int
	bytes   int64
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
	g := &Gate{quantum: cfg.Quantum, jobs: map[string]*job{}, fresh: true}
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
	j.q = append(j.q, entry{r: r, cls: j.classOf(r.Op)})
	j.stats.Queued++
	j.stats.QueuedBytes += r.Length
	g.queued++
	g.bytes += r.Length
	if !j.active {
		j.active = true
		j.deficit = 0
		g.ring = append(g.ring, j)
	}
	return nil
}

// prune forgets idle jobs (nothing queued) whose buckets are full or who
// have none, so that a node serving many short jobs keeps bounded state.
func (g *Gate) prune() {
	for name, j := range g.jobs {
		if j.active {
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
// deficit round robin serves next among the jobs whose head's bucket holds
// enough tokens. It returns ok=false when nothing may go now, with retryAt
// the earliest time a throttled job's head may (0: nothing queued; wait
// for Add). The caller calls Next only while its scheduler has room: when
// it always has, the jobs' order does not matter and only the buckets
// delay requests.
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
			g.ring = append(g.ring[:g.cur], g.ring[g.cur+1:]...)
			g.fresh = true
		} else if j.head > 64 && j.head*2 > len(j.q) {
			n := copy(j.q, j.q[j.head:])
			clear(j.q[n:])
			j.q, j.head = j.q[:n], 0
		}
		return j.name, e.r, true, 0
	}
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
