package councilmsg

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"pgregory.net/rapid"
)

func sampleReport() Report {
	return Report{Instance: 42, Seq: 7, Round: 6, Obs: access.Observation{
		Node: 3, Start: 6 * time.Second, Interval: time.Second, DataServers: 4, Clients: 32, Processes: 128,
		Op: rw.Write, FileHandles: 1, ReqAvg: 32768, ReqMin: 32768, ReqMax: 32768, OffsetDist: 4.1943e6, ProcDist: 32768,
		Sharers: 32, Bandwidth: 3.5e8, Bytes: 350000000, Requests: 10681, Window: time.Millisecond,
		OpBytes: 340000000, OpSpan: 900 * time.Millisecond,
	}}
}

func TestReportRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reqs := rapid.Int64Range(0, 1<<40).Draw(t, "reqs")
		mn := rapid.Int64Range(0, 1<<30).Draw(t, "min")
		mx := mn + rapid.Int64Range(0, 1<<30).Draw(t, "span")
		op := rw.Op(0)
		avg := 0.0
		if reqs > 0 {
			op = rapid.SampledFrom([]rw.Op{rw.Read, rw.Write}).Draw(t, "op")
			avg = float64(mn) + rapid.Float64Range(0, 1).Draw(t, "frac")*float64(mx-mn)
		}
		ivl := rapid.Int64Min(0).Draw(t, "ivl")
		r := Report{
			Instance: rapid.Uint64Min(1).Draw(t, "inst"), Seq: rapid.Uint64Min(1).Draw(t, "seq"),
			Round: rapid.Uint64().Draw(t, "round"),
			Obs: access.Observation{
				Node: rapid.IntRange(0, 1<<20).Draw(t, "node"), Start: time.Duration(rapid.Int64Min(0).Draw(t, "start")),
				Interval: time.Duration(ivl), DataServers: rapid.IntRange(0, 1000).Draw(t, "ds"),
				Clients: rapid.IntRange(0, 1e6).Draw(t, "cl"), Processes: rapid.IntRange(0, 1e7).Draw(t, "pr"),
				Op: op, FileHandles: rapid.IntRange(0, 1e6).Draw(t, "fh"), ReqAvg: avg, ReqMin: mn, ReqMax: mx,
				OffsetDist: rapid.Float64Range(0, 1e18).Draw(t, "dist"), ProcDist: rapid.Float64Range(0, 1e18).Draw(t, "pdist"),
				Sharers: rapid.Float64Range(0, 1e7).Draw(t, "shr"), Bandwidth: rapid.Float64Range(0, 1e15).Draw(t, "bw"),
				Bytes: rapid.Int64Min(0).Draw(t, "bytes"), Requests: reqs, Window: time.Duration(rapid.Int64Min(0).Draw(t, "win")),
				OpBytes: rapid.Int64Min(0).Draw(t, "obytes"), OpSpan: time.Duration(rapid.Int64Range(0, ivl).Draw(t, "ospan")),
			},
			Scheduler: rapid.SampledFrom([]string{"", "twins", "to-agg", "mlf", strings.Repeat("a", MaxSchedulerName)}).Draw(t, "sched"),
		}
		b, err := MarshalReport(r)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if len(b) > MaxSize {
			t.Fatalf("encoded size %d > MaxSize", len(b))
		}
		got, err := UnmarshalReport(b)
		if err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: got %+v, want %+v", got, r)
		}
	})
}

func TestUnmarshalReportRejects(t *testing.T) {
	good, _ := MarshalReport(sampleReport())
	replace := func(old, new string) []byte { return bytes.Replace(good, []byte(old), []byte(new), 1) }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"not json", []byte("bandwidth=3"), ErrMalformed},
		{"array", []byte("[1,2]"), ErrMalformed},
		{"truncated", good[:len(good)/2], ErrMalformed},
		{"no version", replace(`"v":1,`, ""), ErrMalformed},
		{"version 2", replace(`"v":1`, `"v":2`), ErrVersion},
		{"version 2 other types", []byte(`{"v":2,"node":"x"}`), ErrVersion},
		{"version string", replace(`"v":1`, `"v":"1"`), ErrVersion},
		{"oversized", append(append([]byte(nil), good[:len(good)-1]...), []byte(`,"pad":"`+strings.Repeat("x", MaxSize)+`"}`)...), ErrOversized},
		{"negative node", replace(`"node":3`, `"node":-3`), ErrInvalid},
		{"scheduler upper case", replace(`"reqs":10681`, `"reqs":10681,"sched":"TWINS"`), ErrInvalid},
		{"scheduler too long", replace(`"reqs":10681`, `"reqs":10681,"sched":"`+strings.Repeat("a", MaxSchedulerName+1)+`"`), ErrInvalid},
		{"scheduler escaped", replace(`"reqs":10681`, `"reqs":10681,"sched":"tw\"ins"`), ErrInvalid},
		{"scheduler not a string", replace(`"reqs":10681`, `"reqs":10681,"sched":7`), ErrMalformed},
		{"negative bytes", replace(`"bytes":350000000`, `"bytes":-1`), ErrInvalid},
		{"min above max", replace(`"rmin":32768`, `"rmin":40000`), ErrInvalid},
		{"bad op", replace(`"op":"write"`, `"op":"erase"`), ErrInvalid},
		{"no op with requests", replace(`"op":"write"`, `"op":""`), ErrInvalid},
		{"zero seq", replace(`"seq":7`, `"seq":0`), ErrInvalid},
		{"huge float", replace(`"bw":3.5e+08`, `"bw":1e999`), ErrMalformed},
		{"wrong type", replace(`"fh":1`, `"fh":"one"`), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := UnmarshalReport(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v (input %s)", err, tt.want, tt.in)
			}
			if Reason(err) == "other" {
				t.Fatalf("Reason(%v) = other", err)
			}
		})
	}
}

func TestSubjects(t *testing.T) {
	s := Subjects{Prefix: "adaptio.g1"}
	good, _ := MarshalReport(sampleReport())
	tests := []struct {
		subject string
		want    error
	}{
		{"adaptio.g1.report.3", nil},
		{"adaptio.g1.report.4", ErrSubject},
		{"adaptio.g1.report.03", ErrSubject},
		{"adaptio.g1.report.x", ErrSubject},
		{"adaptio.g2.report.3", ErrSubject},
	}
	for _, tt := range tests {
		_, err := s.DecodeReport(tt.subject, good)
		if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
			t.Errorf("DecodeReport(%q): got %v, want %v", tt.subject, err, tt.want)
		}
	}
	if s.Report(3) != "adaptio.g1.report.3" || s.Reports() != "adaptio.g1.report.*" || s.Decision() != "adaptio.g1.decision" {
		t.Errorf("subjects: %q %q %q", s.Report(3), s.Reports(), s.Decision())
	}
	for _, p := range []string{"", "a..b", "a.*", "a.>", "a b"} {
		if ValidPrefix(p) == nil {
			t.Errorf("ValidPrefix(%q) = nil, want error", p)
		}
	}
	if err := ValidPrefix("adaptio.group-1"); err != nil {
		t.Errorf("ValidPrefix: %v", err)
	}
}

func TestDecisionRoundTrip(t *testing.T) {
	d := Decision{Round: 9, Window: 250 * time.Microsecond, Explore: true, Prob: 0.0214, Nodes: 768, Reason: "deadline"}
	got, err := UnmarshalDecision(MarshalDecision(d))
	if err != nil || got != d {
		t.Fatalf("got %+v, %v; want %+v", got, err, d)
	}
	planned := Decision{Round: 10, Window: 8 * time.Millisecond, Prob: 0.9, Nodes: 4, Reason: "all", Plan: rw.Pair[time.Duration]{Read: 125 * time.Microsecond, Write: 8 * time.Millisecond}}
	b := MarshalDecision(planned)
	if got, err := UnmarshalDecision(b); err != nil || got != planned {
		t.Fatalf("plan: got %+v, %v; want %+v", got, err, planned)
	}
	if _, ok := fastDecision(b); !ok {
		t.Fatalf("canonical decision with a plan %s not decoded by the fast path", b)
	}
	if bytes.Contains(MarshalDecision(d), []byte("rd_ns")) {
		t.Error("a decision without a plan carries plan fields")
	}
	for _, in := range []string{`{"v":1,"round":0,"win_ns":1,"prob":1}`, `{"v":1,"round":1,"win_ns":0,"prob":1}`, `{"v":1,"round":1,"win_ns":1,"prob":0}`, `{"v":3,"round":1,"win_ns":1,"prob":1}`, `{`,
		`{"v":1,"round":1,"win_ns":1,"prob":1,"rd_ns":-1}`, `{"v":1,"round":1,"win_ns":1,"prob":1,"wr_ns":-5}`,
		`{"v":1,"round":1,"win_ns":1,"prob":1,"t_ns":-1}`, `{"v":1,"round":1,"win_ns":1,"prob":1,"epoch":-1}`} {
		if _, err := UnmarshalDecision([]byte(in)); err == nil {
			t.Errorf("UnmarshalDecision(%s) accepted", in)
		}
	}
}

func FuzzUnmarshalReport(f *testing.F) {
	good, _ := MarshalReport(sampleReport())
	f.Add(good)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":2,"node":1}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"reqs":0}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"reqs":0,"sched":"to-agg"}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"reqs":0,"sched":"T\u0057INS"}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"reqs":0,"sched":"mlf","sel":"group"}`))
	f.Add([]byte(`{"v":1,"node":1,"inst":1,"seq":1,"reqs":0,"sel":"gr\u006fup"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := UnmarshalReport(data)
		if err != nil {
			if Reason(err) == "other" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// Anything accepted is valid and survives a round trip unchanged.
		if err := r.Obs.Validate(); err != nil {
			t.Fatalf("accepted invalid observation: %v", err)
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

// TestDecisionStamp: a decision's epoch and time travel, and a decision
// without them (a Council that predates them) decodes with neither.
func TestDecisionStamp(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	d := Decision{Round: 4, Window: time.Millisecond, Prob: 0.5, Nodes: 2, Reason: "all", Epoch: 0xfeedface12345678, Time: at}
	b := MarshalDecision(d)
	got, err := UnmarshalDecision(b)
	if err != nil || got != d || !got.Time.Equal(at) {
		t.Fatalf("got %+v, %v; want %+v", got, err, d)
	}
	if _, ok := fastDecision(b); !ok {
		t.Fatalf("canonical stamped decision %s not decoded by the fast path", b)
	}
	old, err := UnmarshalDecision([]byte(`{"v":1,"round":4,"win_ns":1000000,"explore":false,"prob":0.5,"nodes":2,"reason":"all"}`))
	if err != nil || old.Epoch != 0 || !old.Time.IsZero() {
		t.Fatalf("unstamped decision: %+v, %v", old, err)
	}
	if bytes.Contains(MarshalDecision(old), []byte("epoch")) || bytes.Contains(MarshalDecision(old), []byte("t_ns")) {
		t.Errorf("an unstamped decision carries stamp fields: %s", MarshalDecision(old))
	}
}

func FuzzUnmarshalDecision(f *testing.F) {
	f.Add(MarshalDecision(Decision{Round: 1, Window: time.Millisecond, Prob: 0.9, Nodes: 2, Reason: "all"}))
	f.Add(MarshalDecision(Decision{Round: 7, Window: time.Millisecond, Prob: 0.9, Nodes: 2, Reason: "all", Epoch: 42, Time: time.Unix(1795000000, 5).UTC()}))
	f.Add([]byte(`{"v":1,"round":7,"win_ns":1,"prob":1,"epoch":18446744073709551615,"t_ns":9223372036854775807}`))
	f.Add([]byte(`{"v":1,"round":7,"win_ns":1,"prob":1,"t_ns":0,"epoch":0}`))
	f.Add(MarshalDecision(Decision{Round: 1, Window: time.Millisecond, Prob: 0.9, Nodes: 2, Reason: "all", Plan: rw.Pair[time.Duration]{Read: 250000}}))
	f.Add(MarshalDecision(Decision{Round: 2, Window: time.Millisecond, Prob: 0.9, Nodes: 2, Reason: "all", Scheduler: "to-agg"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := UnmarshalDecision(data)
		if err != nil {
			return
		}
		d2, err := UnmarshalDecision(MarshalDecision(d))
		if err != nil || d2 != d {
			t.Fatalf("round trip: %+v %v, want %+v", d2, err, d)
		}
	})
}

func BenchmarkUnmarshalReport(b *testing.B) {
	m, _ := MarshalReport(sampleReport())
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		if _, err := UnmarshalReport(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalReport(b *testing.B) {
	r := sampleReport()
	var buf []byte
	for b.Loop() {
		buf, _ = AppendReport(buf[:0], r)
	}
}

// FuzzFastMatchesJSON checks the reflection-free decoder against
// encoding/json: whatever the fast path accepts decodes identically.
func FuzzFastMatchesJSON(f *testing.F) {
	good, _ := MarshalReport(sampleReport())
	f.Add(good)
	f.Add([]byte(`{"v":1,"NODE":3}`))
	f.Add([]byte(` { "v" : 1 , "bw" : -0.5e-3 , "op" : "read" } `))
	f.Add([]byte(`{"v":1,"node":1,"node":2}`))
	f.Add([]byte(`{"v":1,"seq":18446744073709551616}`))
	f.Add([]byte(`{"v":1,"sel":"alone","sched":"sjf"}`))
	f.Add([]byte(`{"v":1,"sel":"other"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := fastReport(data)
		if !ok {
			return
		}
		slow, err := slowReport(data)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refused: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

func TestFastPathTaken(t *testing.T) {
	good, _ := MarshalReport(sampleReport())
	if _, ok := fastReport(good); !ok {
		t.Fatalf("canonical report %s not decoded by the fast path", good)
	}
	for _, in := range []string{`{"v":1,"NODE":3}`, `{"v":1,"x":[1]}`, `{"v":1,"op":"wr\u0069te"}`, `{"v":1.0}`, `{"v":01}`, `{"v":1}x`} {
		if _, ok := fastReport([]byte(in)); ok {
			t.Errorf("fast path accepted %s", in)
		}
	}
}

func FuzzFastDecisionMatchesJSON(f *testing.F) {
	f.Add(MarshalDecision(Decision{Round: 3, Window: time.Millisecond, Explore: true, Prob: 0.02, Nodes: 5, Reason: "deadline"}))
	f.Add(MarshalDecision(Decision{Round: 3, Window: time.Millisecond, Prob: 0.5, Nodes: 5, Reason: "all", Plan: rw.Pair[time.Duration]{Read: 125000, Write: 8000000}}))
	f.Add([]byte(`{"v":1,"explore":true }`))
	f.Add(MarshalDecision(Decision{Round: 3, Window: time.Millisecond, Prob: 0.5, Nodes: 5, Reason: "all", Epoch: 9, Time: time.Unix(1795000000, 0).UTC()}))
	f.Add([]byte(`{"v":1,"epoch":18446744073709551616,"t_ns":1}`))
	f.Add([]byte(`{"v":1,"t_ns":1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := fastDecision(data)
		if !ok {
			return
		}
		slow, err := slowDecision(data)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refused: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

func TestFastDecisionPathTaken(t *testing.T) {
	d := MarshalDecision(Decision{Round: 3, Window: time.Millisecond, Explore: true, Prob: 0.02, Nodes: 5, Reason: "all"})
	if _, ok := fastDecision(d); !ok {
		t.Fatalf("canonical decision %s not decoded by the fast path", d)
	}
}

func TestNodeOf(t *testing.T) {
	s := Subjects{Prefix: "a.b"}
	tests := []struct {
		subject string
		want    int
		ok      bool
	}{
		{"a.b.report.0", 0, true},
		{"a.b.report.767", 767, true},
		{"a.b.report.999999999", 999999999, true},
		{"a.b.report.1000000000", 0, false},
		{"a.b.report.", 0, false},
		{"a.b.report.007", 0, false},
		{"a.b.report.-1", 0, false},
		{"a.b.report.+1", 0, false},
		{"a.b.report.1x", 0, false},
		{"a.c.report.1", 0, false},
	}
	for _, tt := range tests {
		got, err := s.NodeOf(tt.subject)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("NodeOf(%q) = %d, %v; want %d, ok=%v", tt.subject, got, err, tt.want, tt.ok)
		}
	}
}

// A report from an announcer that predates the per-process offset distance
// or the file's sharers has no "pdist" or "shr" field: it still decodes,
// with ProcDist or Sharers zero, whether the fast parser or the
// encoding/json fallback (extra whitespace) reads it.
func TestReportWithoutProcDistOrSharers(t *testing.T) {
	want := sampleReport()
	data, err := MarshalReport(want)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(data, []byte(`,"pdist":32768`), nil, 1)
	old2 := bytes.Replace(old, []byte(`,"shr":32`), nil, 1)
	if bytes.Equal(old, data) || bytes.Equal(old2, old) {
		t.Fatalf("encoding lacks pdist or shr: %s", data)
	}
	old = old2
	want.Obs.ProcDist, want.Obs.Sharers = 0, 0
	for name, in := range map[string][]byte{"fast": old, "fallback": bytes.ReplaceAll(old, []byte(`,"`), []byte(`, "`))} {
		got, err := UnmarshalReport(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// The scheduler a node ran travels with its report; a report without one
// (an Announcer that predates the field, or a node that does not say)
// decodes with an empty name, and the fast and the encoding/json decoders
// agree on it.
func TestReportCarriesTheScheduler(t *testing.T) {
	r := sampleReport()
	r.Scheduler = "to-agg"
	b, err := MarshalReport(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"sched":"to-agg"`)) {
		t.Fatalf("encoding lacks the scheduler: %s", b)
	}
	m, ok := fastReport(b)
	if !ok || m.Sched != "to-agg" {
		t.Fatalf("fast decoder: %+v %v", m, ok)
	}
	if m2, err := slowReport(b); err != nil || !reflect.DeepEqual(m2, m) {
		t.Fatalf("decoders disagree: fast %+v, encoding/json %+v %v", m, m2, err)
	}
	old, _ := MarshalReport(sampleReport())
	if bytes.Contains(old, []byte("sched")) {
		t.Fatalf("a report without a scheduler names one: %s", old)
	}
	got, err := UnmarshalReport(old)
	if err != nil || got.Scheduler != "" {
		t.Fatalf("report without a scheduler: %+v %v", got, err)
	}
	r.Scheduler = "TWINS"
	if _, err := MarshalReport(r); !errors.Is(err, ErrInvalid) {
		t.Fatalf("marshal of scheduler %q: %v, want ErrInvalid", r.Scheduler, err)
	}
}
