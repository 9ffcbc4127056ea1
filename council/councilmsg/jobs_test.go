package councilmsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// sampleJobs is a node's interval shared by a strided writer and a
// file-per-process reader, prepared as an Announcer does (TrimJobs).
func sampleJobs() Report {
	r := sampleReport()
	w := access.Observation{Clients: 8, Processes: 64, Op: rw.Write, FileHandles: 1, ReqAvg: 32768, ReqMin: 32768, ReqMax: 32768,
		OffsetDist: 2e6, ProcDist: 2e6, Sharers: 64, Bytes: 100e6, Requests: 3000, OpBytes: 99e6, OpSpan: 900 * time.Millisecond}
	rd := access.Observation{Clients: 8, Processes: 64, Op: rw.Read, FileHandles: 64, ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20,
		OffsetDist: 1 << 20, ProcDist: 1 << 20, Sharers: 1, Bytes: 200e6, Requests: 190, OpBytes: 200e6, OpSpan: time.Second}
	r.Jobs = TrimJobs(r.Obs, []Job{{ID: "4711.strided", Obs: w}, {ID: "4712", Obs: rd}})
	return r
}

func TestReportCarriesJobs(t *testing.T) {
	r := sampleJobs()
	if len(r.Jobs) != 2 || r.Jobs[0].ID != "4712" {
		t.Fatalf("TrimJobs: %+v, want the reader (most bytes) first", r.Jobs)
	}
	b, err := MarshalReport(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalReport(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got.Jobs, r.Jobs)
	}
	if got.Jobs[1].Obs.Node != r.Obs.Node || got.Jobs[1].Obs.Interval != r.Obs.Interval || got.Jobs[1].Obs.Bandwidth != 100e6 {
		t.Errorf("a job's node fields are not its report's: %+v", got.Jobs[1].Obs)
	}
	// A Council that predates jobs decodes a report as a struct without
	// the field: encoding/json ignores it, and the node's fields are
	// intact.
	var old struct {
		V     int   `json:"v"`
		Node  int   `json:"node"`
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.V != Version || old.Node != 3 || old.Bytes != r.Obs.Bytes {
		t.Fatalf("a decoder without jobs: %+v %v", old, err)
	}
	// A report without jobs (an Announcer that predates them) decodes
	// with none, on the fast path.
	plain, _ := MarshalReport(sampleReport())
	if bytes.Contains(plain, []byte("jobs")) {
		t.Fatalf("a report without jobs lists some: %s", plain)
	}
	if _, ok := fastReport(plain); !ok {
		t.Fatal("a report without jobs left the fast path")
	}
	if p, err := UnmarshalReport(plain); err != nil || p.Jobs != nil {
		t.Fatalf("%+v %v", p.Jobs, err)
	}
}

// The largest report, every job at the bounds with every field at its
// longest, fits a decoder's MaxSize, so a Council that predates jobs
// reads it.
func TestLargestReportFits(t *testing.T) {
	r := sampleReport()
	r.Scheduler = strings.Repeat("s", MaxSchedulerName)
	r.Obs.Node, r.Obs.Start, r.Obs.Interval = 1<<30, 1<<62, 1<<62
	r.Obs.Bytes, r.Obs.Requests = 1<<62, 1<<62
	r.Obs.Bandwidth = 1.2345678901234567e+300
	var jobs []Job
	for i := range MaxJobs + 3 {
		o := access.Observation{Clients: 1 << 30, Processes: 1 << 30, Op: rw.Write, FileHandles: 1 << 30,
			ReqAvg: 1.2345678901234567e+18, ReqMin: 1 << 60, ReqMax: 1<<62 - 1, OffsetDist: 1.2345678901234567e+300,
			ProcDist: 1.2345678901234567e+300, Sharers: 1.2345678901234567e+300, Bytes: 1 << 58, Requests: 1 << 58,
			OpBytes: 1 << 58, OpSpan: 1 << 61}
		o.ReqAvg = float64(o.ReqMin)
		jobs = append(jobs, Job{ID: fmt.Sprintf("%d%s", i, strings.Repeat("j", 300)), Obs: o})
	}
	r.Jobs = TrimJobs(r.Obs, jobs)
	if len(r.Jobs) != MaxJobs {
		t.Fatalf("%d jobs kept of %d, want %d", len(r.Jobs), len(jobs), MaxJobs)
	}
	b, err := MarshalReport(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxSize {
		t.Fatalf("largest report: %d bytes, MaxSize %d", len(b), MaxSize)
	}
	t.Logf("largest report: %d bytes", len(b))
	if _, err := UnmarshalReport(b); err != nil {
		t.Fatal(err)
	}
}

func TestTrimJobs(t *testing.T) {
	node := access.Observation{Node: 1, Interval: time.Second, Bytes: 1000, Requests: 10, Op: rw.Read, ReqAvg: 1, ReqMin: 1, ReqMax: 1}
	job := func(id string, bytes, reqs int64) Job {
		return Job{ID: id, Obs: access.Observation{Op: rw.Read, Bytes: bytes, Requests: reqs, ReqAvg: 100, ReqMin: 100, ReqMax: 100, OpBytes: bytes, OpSpan: time.Second}}
	}
	// More bytes than the node's (a completion counted in the job's
	// interval and the node's next): scaled down together.
	got := TrimJobs(node, []Job{job("a", 900, 9), job("b", 600, 6), job("idle", 0, 0)})
	var sum, reqs int64
	for _, j := range got {
		sum += j.Obs.Bytes
		reqs += j.Obs.Requests
	}
	if len(got) != 2 || sum > node.Bytes || reqs > node.Requests || got[0].ID != "a" {
		t.Fatalf("TrimJobs: %+v (bytes %d, requests %d)", got, sum, reqs)
	}
	if err := checkJobs(Report{Obs: node, Jobs: got}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	a, b := ShortJobID(long+"1"), ShortJobID(long+"2")
	if a == b || len(a) != MaxJobID || !ValidJobID(a) {
		t.Errorf("ShortJobID: %q and %q", a, b)
	}
	if ShortJobID("4711") != "4711" {
		t.Error("ShortJobID changed a short id")
	}
}

func TestUnmarshalReportRejectsBadJobs(t *testing.T) {
	good, err := MarshalReport(sampleJobs())
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte {
		b := bytes.Replace(good, []byte(old), []byte(new), 1)
		if bytes.Equal(b, good) {
			t.Fatalf("%q not in %s", old, good)
		}
		return b
	}
	many := sampleJobs()
	var entries []string
	for i := range MaxJobs + 1 {
		entries = append(entries, fmt.Sprintf(`{"id":"j%d","op":"read","bytes":1,"reqs":1,"ravg":1,"rmin":1,"rmax":1}`, i))
	}
	manyB, _ := MarshalReport(Report{Instance: many.Instance, Seq: many.Seq, Obs: many.Obs})
	manyB = append(manyB[:len(manyB)-1], []byte(`,"jobs":[`+strings.Join(entries, ",")+`]}`)...)
	for name, in := range map[string][]byte{
		"too many":       manyB,
		"empty id":       replace(`"id":"4712"`, `"id":""`),
		"space in id":    replace(`"id":"4712"`, `"id":"47 12"`),
		"long id":        replace(`"id":"4712"`, `"id":"`+strings.Repeat("9", MaxJobID+1)+`"`),
		"duplicate id":   replace(`"id":"4712"`, `"id":"4711.strided"`),
		"bad op":         replace(`"op":"read"`, `"op":"trim"`),
		"negative bytes": replace(`"bytes":200000000`, `"bytes":-1`),
		"bytes over":     replace(`"bytes":200000000`, `"bytes":250000001`),
		"reqs over":      replace(`"reqs":190`, `"reqs":100000`),
		"sizes":          replace(`"rmin":1048576`, `"rmin":2000000`),
		"not an array":   replace(`"jobs":[`, `"jobs":{"x":[`),
	} {
		_, err := UnmarshalReport(in)
		if err == nil {
			t.Errorf("%s: accepted %s", name, in)
			continue
		}
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrInvalid or ErrMalformed", name, err)
		}
	}
}

// FuzzUnmarshalReportJobs: whatever the decoder accepts has valid,
// bounded jobs that add up to no more than the node's, and survives a
// round trip unchanged.
func FuzzUnmarshalReportJobs(f *testing.F) {
	good, _ := MarshalReport(sampleJobs())
	f.Add(good)
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"ivl_ns":1000,"bytes":10,"reqs":2,"op":"read","ravg":5,"rmin":5,"rmax":5,"jobs":[{"id":"a","op":"read","bytes":10,"reqs":2,"ravg":5,"rmin":5,"rmax":5}]}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"jobs":[]}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"jobs":null}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"JOBS":[{"ID":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := UnmarshalReport(data)
		if err != nil {
			if Reason(err) == "other" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if len(r.Jobs) > MaxJobs {
			t.Fatalf("%d jobs accepted", len(r.Jobs))
		}
		var sum int64
		for _, j := range r.Jobs {
			if !ValidJobID(j.ID) || j.Obs.Validate() != nil || j.Obs.Node != r.Obs.Node || j.Obs.Interval != r.Obs.Interval {
				t.Fatalf("accepted job %+v", j)
			}
			sum += j.Obs.Bytes
		}
		if sum > r.Obs.Bytes {
			t.Fatalf("jobs' bytes %d above the node's %d", sum, r.Obs.Bytes)
		}
		b, err := MarshalReport(r)
		if err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		r2, err := UnmarshalReport(b)
		if err != nil || !reflect.DeepEqual(r2, r) {
			t.Fatalf("round trip: %+v %v, want %+v", r2, err, r)
		}
	})
}
