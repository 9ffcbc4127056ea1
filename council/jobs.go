package council

import (
	"slices"
	"strings"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
)

// Job contexts: what the Council learns from a report that carries the
// node's jobs (Config.JobContext). Under each, every job's pattern is
// detected from its own requests and logged (NodeReport.Jobs). In the
// simulator's two-job mixes none learned a higher total than another
// beyond the spread between seeds, and the mix's the lowest on average
// (docs/performance.md, "Does learning with jobs beat learning
// without?"), hence the default, JobContextNode.
const (
	// JobContextNode (the default): the context is the pattern detected
	// in the node's metrics, all jobs mixed, as for a report without jobs.
	JobContextNode = "node"
	// JobContextMix: the context is the set of the patterns of the jobs
	// present, sorted and joined by "+" (e.g. "FPP/read+SS/write"); one job
	// alone is its own context, as a node without jobs. The reward of a
	// mix is the node's bandwidth, all jobs together.
	JobContextMix = "mix"
	// JobContextDominant: the context is the pattern of the job that moved
	// the most bytes in the interval; the reward of a mix is the node's
	// bandwidth.
	JobContextDominant = "dominant"
)

// MinJobShare is the least share of the jobs' bytes or of their requests
// in an interval for which a job counts in the mix: a job that sends a few
// requests beside a busy one does not make a context of its own, but a
// seek-bound job that moves few bytes in many small requests does (in the
// simulator, a shared-file strided writer moved 4% of the bytes beside
// file-per-process readers, in more than half of the requests).
const MinJobShare = 0.1

// JobReport is what the Council made of one job of a node's report: the
// decision log's per-job entry.
type JobReport struct {
	ID       string     `json:"id"`
	Op       string     `json:"op,omitempty"`
	Pattern  string     `json:"pattern,omitempty"` // detected class ("": not detected)
	Context  string     `json:"context,omitempty"`
	Probs    [3]float64 `json:"probs"`
	Bytes    int64      `json:"bytes"`
	Requests int64      `json:"reqs"`
	// Counted: the job is part of the node's context (detected, and at
	// least MinJobShare of the jobs' bytes).
	Counted bool `json:"counted,omitempty"`
}

// jobContext detects each job's pattern and returns the context of the
// node's mix under Config.JobContext, the operation it is noted under,
// and whether the reward is the node's bandwidth (two jobs or more
// counted). ctx is "" when no job's pattern was detected; the node's own
// detection then stands.
func (c *Council) jobContext(nr *NodeReport, jobs []councilmsg.Job) (ctx string, op rw.Op, mixed bool) {
	var total, reqs int64
	for _, j := range jobs {
		total += j.Obs.Bytes
		reqs += j.Obs.Requests
	}
	nr.Jobs = make([]JobReport, 0, len(jobs))
	var counted []int
	for _, j := range jobs {
		jr := JobReport{ID: j.ID, Bytes: j.Obs.Bytes, Requests: j.Obs.Requests}
		if j.Obs.Requests > 0 && j.Obs.Op.Valid() {
			jr.Op = j.Obs.Op.String()
			class, probs := c.cfg.Detector.Detect(j.Obs)
			jr.Probs = probs
			if class.Index() >= 0 {
				jr.Pattern, jr.Context = class.String(), Context(class, j.Obs.Op)
				share := float64(j.Obs.Requests) / float64(max(reqs, 1))
				if total > 0 {
					share = max(share, float64(j.Obs.Bytes)/float64(total))
				}
				if share >= MinJobShare {
					jr.Counted = true
					counted = append(counted, len(nr.Jobs))
				}
			}
		}
		nr.Jobs = append(nr.Jobs, jr)
	}
	if len(counted) == 0 {
		return "", 0, false
	}
	// The dominant job: the most bytes (jobs arrive sorted so, but a
	// report need not be), then the first by id.
	dom := counted[0]
	for _, k := range counted[1:] {
		a, b := nr.Jobs[k], nr.Jobs[dom]
		if a.Bytes > b.Bytes || a.Bytes == b.Bytes && a.ID < b.ID {
			dom = k
		}
	}
	op = jobs[dom].Obs.Op
	mixed = len(counted) > 1
	if c.cfg.JobContext == JobContextDominant {
		return nr.Jobs[dom].Context, op, mixed
	}
	var parts []string
	for _, k := range counted {
		parts = append(parts, nr.Jobs[k].Context)
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	return strings.Join(parts, "+"), op, mixed
}

// MixContext returns the context of a mix of contexts (each as Context
// returns it): sorted, each once, joined by "+"; one context alone is
// itself.
func MixContext(contexts ...string) string {
	parts := slices.Clone(contexts)
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), "+")
}

// contextParts splits a context into the single contexts of its mix.
func contextParts(ctx string) []string { return strings.Split(ctx, "+") }

// hasDirection reports whether context ctx (single or mix) has requests of
// direction op.
func hasDirection(ctx string, op rw.Op) bool {
	suffix := "/" + op.String()
	for _, p := range contextParts(ctx) {
		if strings.HasSuffix(p, suffix) {
			return true
		}
	}
	return false
}

// mixReward is the reward of an interval whose context is a mix of jobs:
// the node's bandwidth, all jobs together, whatever Config.Reward (the
// majority operation's bandwidth would leave out the other jobs').
func mixReward(o access.Observation) float64 { return o.Bandwidth }
