package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/workload"
)

// Job is one application of a run with several at once (Config.Jobs): its
// processes run its patterns back to back, a barrier among its own
// processes between two patterns, while the other jobs' processes run
// theirs on the same I/O nodes and data servers. Its files are its own
// (named Name/FILE).
type Job struct {
	// Name is the job id its requests carry to the I/O nodes' QoS gate
	// (qos.ValidJob), unique in the run.
	Name string
	// Patterns run back to back; each has the same Processes.
	Patterns []workload.Pattern
	// Gap is the time between a pattern's end (its barrier) and the next
	// one's start: the computation between two checkpoints of a bursty
	// job (default 0: none).
	Gap time.Duration
	// Start is when the job's first pattern starts (default 0).
	Start time.Duration
}

// QoS puts a QoS gate (package qos, the daemon's) in front of every I/O
// node's scheduler (Config.QoS).
type QoS struct {
	Rules []qos.Rule // TBF-style rules; none: fair sharing by job alone
	Depth int        // requests the scheduler may hold before the gate shares by job (0: ionode.DefaultGateDepth)
	Share qos.Basis  // what fair sharing divides (qos.Config.Share)
	// Window and Anticipation are qos.Config's: the job window and how
	// long a job holds it waiting for its next request.
	Window, Anticipation time.Duration
	// Fairness is qos.Config's: the floor of Jain's index of the jobs'
	// shares of server time (0: qos.DefaultFairness; 1: equal shares).
	Fairness float64
}

// JobResult is one job's outcome in a run with Config.Jobs.
type JobResult struct {
	Name     string
	Bytes    int64         // bytes its processes moved (before Config.JobsFor, if set)
	Requests uint64        // requests completed (before Config.JobsFor, if set)
	Patterns int           // patterns completed
	End      time.Duration // when its last pattern ended
	// Bandwidth is Bytes over Config.JobsFor if set, else over End, in
	// bytes per second.
	Bandwidth float64
	// ServerTime is the time the data servers spent on the job's requests
	// (before Config.JobsFor, if set): each access's service time, shared
	// between the jobs of its pieces by bytes.
	ServerTime time.Duration
}

// jobState is a running job.
type jobState struct {
	lo, n     int   // its processes: s.procs[lo:lo+n]
	files     int   // first global file index of its files
	pat       int   // current pattern
	remaining int   // processes not finished with the current pattern
	bytes     int64 // before JobsFor
	requests  uint64
	server    float64 // ns of data-server time, before JobsFor
	patterns  int
	done      bool
	end       int64
}

// validateJobs checks c.Jobs (called by Validate when there are jobs).
func (c Config) validateJobs() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, a...))
	}
	if len(c.Patterns) > 0 || len(c.Traces) > 0 {
		return bad("jobs and patterns or traces: give the patterns to the jobs")
	}
	seen := map[string]bool{}
	for i, j := range c.Jobs {
		if err := qos.ValidJob(j.Name); err != nil {
			return bad("job %d: %v", i, err)
		}
		if seen[j.Name] {
			return bad("job %d: name %q used twice", i, j.Name)
		}
		seen[j.Name] = true
		if len(j.Patterns) == 0 {
			return bad("job %s: no pattern", j.Name)
		}
		for k, p := range j.Patterns {
			if err := p.Validate(); err != nil {
				return bad("job %s, pattern %d: %v", j.Name, k, err)
			}
			if p.Processes != j.Patterns[0].Processes {
				return bad("job %s: pattern %d has %d processes, pattern 0 %d: a job keeps its processes", j.Name, k, p.Processes, j.Patterns[0].Processes)
			}
		}
		if j.Gap < 0 || j.Start < 0 {
			return bad("job %s: negative gap or start", j.Name)
		}
	}
	if c.JobsFor < 0 {
		return bad("JobsFor = %v, want >= 0", c.JobsFor)
	}
	return nil
}

// startJobs places every job's processes (consecutive processes over the
// client nodes in blocks, job after job, as a batch system allocates
// nodes) and starts their first patterns.
func (s *Sim) startJobs() {
	total, files := 0, 0
	s.jobs = make([]jobState, len(s.cfg.Jobs))
	for k, j := range s.cfg.Jobs {
		s.jobs[k] = jobState{lo: total, n: j.Patterns[0].Processes, files: files}
		total += j.Patterns[0].Processes
		nf := 0
		for _, p := range j.Patterns {
			nf = max(nf, p.Files()) // the job's files: as many as its pattern with the most
		}
		files += nf
	}
	s.procs = make([]process, total)
	s.firsts = make([]int, files)
	clients := min(s.cfg.ClientNodes, total)
	for i := range s.procs {
		c := i * clients / total
		s.procs[i] = process{client: int32(c), ion: int32(c * s.cfg.IONodes / clients)}
	}
	for k := range s.cfg.Jobs {
		for i := range s.jobs[k].n {
			s.procs[s.jobs[k].lo+i].job = int32(k)
		}
		s.startJobPattern(k, int64(s.cfg.Jobs[k].Start))
	}
}

// startJobPattern starts job k's current pattern at time at.
func (s *Sim) startJobPattern(k int, at int64) {
	js := &s.jobs[k]
	p := &s.cfg.Jobs[k].Patterns[js.pat]
	for f := range p.Files() {
		s.firsts[js.files+f] = s.layout.FirstServer(s.jobFileName(k, f), s.cfg.Servers)
	}
	js.remaining = js.n
	nreq := p.RequestsPerProcess()
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0x10b5<<32+uint64(k)<<16+uint64(js.patterns)))
	for i := js.lo; i < js.lo+js.n; i++ {
		s.procs[i].next, s.procs[i].n = 0, nreq
		var j int64
		if s.cfg.StartJitter > 0 {
			j = rng.Int64N(int64(s.cfg.StartJitter))
		}
		s.q.push(at+j, evClientDone, int32(-1-i)) // negative id: first request
	}
}

// jobFileName is file f of job k's current pattern.
func (s *Sim) jobFileName(k, f int) string {
	return s.cfg.Jobs[k].Name + "/" + s.cfg.Jobs[k].Patterns[s.jobs[k].pat].FileName(f)
}

// jobIssue sets process i's next request from its job's current pattern.
func (s *Sim) jobIssue(i int) {
	pr := &s.procs[i]
	js := &s.jobs[pr.job]
	p := &s.cfg.Jobs[pr.job].Patterns[js.pat]
	f, off := p.Request(i-js.lo, pr.next)
	pr.file, pr.off = js.files+f, off
	pr.length, pr.op = p.RequestSize, p.Op
}

// jobName is the job of process i ("" without jobs).
func (s *Sim) jobName(i int) string {
	if s.jobs == nil {
		return ""
	}
	return s.cfg.Jobs[s.procs[i].job].Name
}

// jobCompleted counts process i's completed request, and if it was the
// process's last of the pattern, the process: the job's last one starts
// its next pattern (after Gap), or ends the job, and the last job ends the
// run. With JobsFor a job repeats its patterns until that time.
func (s *Sim) jobCompleted(i int) {
	pr := &s.procs[i]
	js := &s.jobs[pr.job]
	if s.cfg.JobsFor == 0 || s.now <= int64(s.cfg.JobsFor) {
		js.bytes += pr.length
		js.requests++
	}
	if pr.next < pr.n {
		s.issue(i)
		return
	}
	if js.remaining--; js.remaining > 0 {
		return
	}
	js.patterns++
	js.pat++
	j := &s.cfg.Jobs[pr.job]
	if js.pat == len(j.Patterns) && s.cfg.JobsFor > 0 && s.now < int64(s.cfg.JobsFor) {
		js.pat = 0
	}
	if js.pat < len(j.Patterns) {
		s.startJobPattern(int(pr.job), s.now+int64(j.Gap))
		return
	}
	js.done, js.end = true, s.now
	for k := range s.jobs {
		if !s.jobs[k].done {
			return
		}
	}
	s.phases = append(s.phases, time.Duration(s.now))
	s.done, s.doneAt = true, s.now
}

// jobServed charges the data-server time of thread th's access, which
// ends now, to the jobs of its pieces by bytes.
func (s *Sim) jobServed(th *thread) {
	if s.cfg.JobsFor > 0 && s.now > int64(s.cfg.JobsFor) {
		return
	}
	var total int64
	for _, b := range th.acc.Batches {
		for _, r := range b.Requests {
			total += r.Length
		}
	}
	if total == 0 {
		return
	}
	d := float64(s.now - th.disk)
	for _, b := range th.acc.Batches {
		for _, r := range b.Requests {
			s.jobs[s.procs[r.ID>>pieceBits].job].server += d * float64(r.Length) / float64(total)
		}
	}
}

// jobResults are the jobs' outcomes so far.
func (s *Sim) jobResults() []JobResult {
	if s.jobs == nil {
		return nil
	}
	out := make([]JobResult, len(s.jobs))
	for k, js := range s.jobs {
		r := JobResult{Name: s.cfg.Jobs[k].Name, Bytes: js.bytes, Requests: js.requests, Patterns: js.patterns, End: time.Duration(js.end), ServerTime: time.Duration(js.server)}
		span := r.End
		if s.cfg.JobsFor > 0 {
			span = s.cfg.JobsFor
		}
		if span > 0 {
			r.Bandwidth = float64(r.Bytes) / span.Seconds()
		}
		out[k] = r
	}
	return out
}

// Jain is Jain's fairness index of xs, (Σx)² / (n Σx²): 1 when all are
// equal, 1/n when one has everything (R. Jain, D. Chiu, W. Hawe, "A
// Quantitative Measure of Fairness and Discrimination for Resource
// Allocation in Shared Computer Systems", DEC-TR-301, 1984). It is 0 for no
// values or all zero.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
