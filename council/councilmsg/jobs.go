package councilmsg

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
)

// Bounds of Report.Jobs. A report with MaxJobs jobs of MaxJobID-byte ids
// stays under MaxSize (3,823 bytes with every field at its longest), so a Council that predates jobs, which ignores the field,
// still reads it.
const (
	MaxJobs  = 8
	MaxJobID = 64
)

// Job is one job's share of a report's interval: the requests of that job
// alone, as its I/O node saw them.
type Job struct {
	// ID is the job id its clients declared (1 to MaxJobID printable
	// ASCII characters, no space, '=', ';', '#', '"' or '\'; an
	// Announcer shortens longer ids with ShortJobID).
	ID string
	// Obs holds the job's own fields: Clients, Processes, Op, FileHandles,
	// the request sizes, OffsetDist, ProcDist, Sharers, Bytes, Requests,
	// OpBytes and OpSpan. Node, Start, Interval, DataServers and Window
	// are the report's, and Bandwidth is Bytes over the interval.
	Obs access.Observation
}

// ValidJobID reports whether id may be a Job's ID.
func ValidJobID(id string) bool {
	if id == "" || len(id) > MaxJobID {
		return false
	}
	for _, c := range []byte(id) {
		if c <= ' ' || c >= 0x7f || c == '=' || c == ';' || c == '#' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ShortJobID returns id if it fits a report, else its first characters and
// a hash of the whole, MaxJobID bytes in all, so that two long ids that
// share a prefix stay apart.
func ShortJobID(id string) string {
	if len(id) <= MaxJobID {
		return id
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range []byte(id) {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%s~%08x", id[:MaxJobID-9], h)
}

// jobJSON is a job as it travels, inside the report's "jobs" array.
type jobJSON struct {
	ID      string  `json:"id"`
	Op      string  `json:"op"`
	Clients int     `json:"cl"`
	Procs   int     `json:"pr"`
	FH      int     `json:"fh"`
	ReqAvg  float64 `json:"ravg"`
	ReqMin  int64   `json:"rmin"`
	ReqMax  int64   `json:"rmax"`
	Dist    float64 `json:"odist"`
	PDist   float64 `json:"pdist"`
	Sharers float64 `json:"shr"`
	Bytes   int64   `json:"bytes"`
	Reqs    int64   `json:"reqs"`
	OBytes  int64   `json:"obytes,omitempty"`
	OSpan   int64   `json:"ospan_ns,omitempty"`
}

// appendJobs appends the "jobs" field (nothing for none).
func appendJobs(b []byte, jobs []Job) []byte {
	if len(jobs) == 0 {
		return b
	}
	b = appendField(b, "jobs")
	b = append(b, '[')
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		o := &j.Obs
		b = append(b, `{"id":"`...)
		b = append(b, j.ID...)
		b = append(b, `","op":"`...)
		b = append(b, opString(o.Op)...)
		b = append(b, '"')
		b = appendField(b, "cl")
		b = strconv.AppendInt(b, int64(o.Clients), 10)
		b = appendField(b, "pr")
		b = strconv.AppendInt(b, int64(o.Processes), 10)
		b = appendShape(b, o)
		b = appendCounts(b, o)
		b = append(b, '}')
	}
	return append(b, ']')
}

// jobObservation completes a job's observation with its report's node,
// interval, data servers and window.
func jobObservation(node access.Observation, o access.Observation) access.Observation {
	o.Node, o.Start, o.Interval, o.DataServers, o.Window = node.Node, node.Start, node.Interval, node.DataServers, node.Window
	o.Completed = 0
	o.Bandwidth = 0
	if o.Interval > 0 {
		o.Bandwidth = float64(o.Bytes) / o.Interval.Seconds()
	}
	return o
}

// checkJobs validates a report's jobs: at most MaxJobs, ids valid and
// distinct, each job's observation valid, and together no more bytes,
// requests or operation bytes than the node's.
func checkJobs(r Report) error {
	if len(r.Jobs) > MaxJobs {
		return fmt.Errorf("%w: %d jobs, at most %d", ErrInvalid, len(r.Jobs), MaxJobs)
	}
	var bytes, reqs int64
	for i, j := range r.Jobs {
		if !ValidJobID(j.ID) {
			return fmt.Errorf("%w: job %d: id %q (1 to %d printable characters, no space, '=', ';', '#', '\"' or '\\')", ErrInvalid, i, j.ID, MaxJobID)
		}
		for _, k := range r.Jobs[:i] {
			if k.ID == j.ID {
				return fmt.Errorf("%w: job %q listed twice", ErrInvalid, j.ID)
			}
		}
		if err := j.Obs.Validate(); err != nil {
			return fmt.Errorf("%w: job %q: %v", ErrInvalid, j.ID, err)
		}
		bytes += j.Obs.Bytes
		reqs += j.Obs.Requests
		if bytes < 0 || reqs < 0 {
			return fmt.Errorf("%w: jobs' bytes or requests overflow", ErrInvalid)
		}
	}
	if bytes > r.Obs.Bytes || reqs > r.Obs.Requests {
		return fmt.Errorf("%w: jobs' %d bytes and %d requests exceed the node's %d and %d", ErrInvalid, bytes, reqs, r.Obs.Bytes, r.Obs.Requests)
	}
	return nil
}

// toJobs converts the wire form of a report's jobs (no validation).
func toJobs(node access.Observation, in []jobJSON) ([]Job, error) {
	if len(in) > MaxJobs {
		return nil, fmt.Errorf("%w: %d jobs, at most %d", ErrInvalid, len(in), MaxJobs)
	}
	if len(in) == 0 {
		return nil, nil
	}
	jobs := make([]Job, len(in))
	for i, j := range in {
		op, err := parseOp(j.Op)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		jobs[i] = Job{ID: j.ID, Obs: jobObservation(node, access.Observation{Clients: j.Clients, Processes: j.Procs, Op: op, FileHandles: j.FH,
			ReqAvg: j.ReqAvg, ReqMin: j.ReqMin, ReqMax: j.ReqMax, OffsetDist: j.Dist, ProcDist: j.PDist, Sharers: j.Sharers,
			Bytes: j.Bytes, Requests: j.Reqs, OpBytes: j.OBytes, OpSpan: time.Duration(j.OSpan)})}
	}
	return jobs, nil
}

// ReportJobs returns the jobs a report of node observation node carries,
// from the observation of each job's own requests by job id (an
// Announcer's JobSource): none unless two or more jobs had requests in the
// interval (a node serving one job reports it alone, as a node that does
// not tell jobs apart), else TrimJobs of them.
func ReportJobs(node access.Observation, jobs map[string]access.Observation) []Job {
	active := 0
	for _, j := range jobs {
		if !j.Idle() {
			active++
		}
	}
	if active < 2 {
		return nil
	}
	list := make([]Job, 0, len(jobs))
	for id, j := range jobs {
		list = append(list, Job{ID: id, Obs: j})
	}
	if list = TrimJobs(node, list); len(list) < 2 {
		return nil
	}
	return list
}

// TrimJobs returns at most MaxJobs of jobs for a report of node
// observation node: the ones that moved the most bytes (then requests,
// then by id), their ids shortened (ShortJobID), idle ones left out, and
// their bytes, requests and operation bytes scaled down together if they
// add up to more than the node's (a request completing as the interval
// closes may count in a job's interval and the node's next). The jobs'
// node fields are set from node. An Announcer calls it before reporting.
func TrimJobs(node access.Observation, jobs []Job) []Job {
	out := make([]Job, 0, min(len(jobs), MaxJobs))
	for _, j := range jobs {
		if j.Obs.Idle() {
			continue
		}
		j.ID = ShortJobID(j.ID)
		if !ValidJobID(j.ID) {
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b Job) int {
		if c := cmp.Compare(b.Obs.Bytes, a.Obs.Bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Obs.Requests, a.Obs.Requests); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	out = slices.CompactFunc(out, func(a, b Job) bool { return a.ID == b.ID })
	if len(out) > MaxJobs {
		out = out[:MaxJobs]
	}
	var bytes, reqs int64
	for _, j := range out {
		bytes += j.Obs.Bytes
		reqs += j.Obs.Requests
	}
	for i := range out {
		o := &out[i].Obs
		if bytes > node.Bytes {
			o.Bytes = scale(o.Bytes, node.Bytes, bytes)
			o.OpBytes = min(o.OpBytes, o.Bytes)
		}
		if reqs > node.Requests {
			o.Requests = scale(o.Requests, node.Requests, reqs)
		}
		*o = jobObservation(node, *o)
		if err := o.Validate(); err != nil {
			*o = access.Observation{}
		}
	}
	return slices.DeleteFunc(out, func(j Job) bool { return j.Obs.Requests == 0 && j.Obs.Bytes == 0 })
}

// scale returns x * num / den rounded down, exactly, for 0 <= x <= den
// (the result is then at most num).
func scale(x, num, den int64) int64 {
	if den <= 0 || num <= 0 || x <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(x), uint64(num))
	q, _ := bits.Div64(hi, lo, uint64(den))
	return int64(q)
}

// appendShape appends o's access shape fields (file handles to sharers),
// in the order the fast decoder expects, for reports and their jobs.
func appendShape(b []byte, o *access.Observation) []byte {
	b = appendField(b, "fh")
	b = strconv.AppendInt(b, int64(o.FileHandles), 10)
	b = appendField(b, "ravg")
	b = appendFloat(b, o.ReqAvg)
	b = appendField(b, "rmin")
	b = strconv.AppendInt(b, o.ReqMin, 10)
	b = appendField(b, "rmax")
	b = strconv.AppendInt(b, o.ReqMax, 10)
	b = appendField(b, "odist")
	b = appendFloat(b, o.OffsetDist)
	b = appendField(b, "pdist")
	b = appendFloat(b, o.ProcDist)
	b = appendField(b, "shr")
	b = appendFloat(b, o.Sharers)
	return b
}

// appendCounts appends o's byte and request counts, and its operation's
// bytes and span where set.
func appendCounts(b []byte, o *access.Observation) []byte {
	b = appendField(b, "bytes")
	b = strconv.AppendInt(b, o.Bytes, 10)
	b = appendField(b, "reqs")
	b = strconv.AppendInt(b, o.Requests, 10)
	if o.OpBytes != 0 || o.OpSpan != 0 {
		b = appendField(b, "obytes")
		b = strconv.AppendInt(b, o.OpBytes, 10)
		b = appendField(b, "ospan_ns")
		b = strconv.AppendInt(b, int64(o.OpSpan), 10)
	}
	return b
}
