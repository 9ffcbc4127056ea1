package councilmsg

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// A decision may carry the Council's scheduler choice: it round-trips,
// the fast and the slow decoders agree, a bad name is refused, and a
// decision without it reads as no choice.
func TestDecisionScheduler(t *testing.T) {
	d := Decision{Round: 3, Window: time.Millisecond, Prob: 1, Nodes: 4, Reason: "all", Epoch: 9, Scheduler: "to-agg"}
	b := MarshalDecision(d)
	if !strings.Contains(string(b), `"sched":"to-agg"`) {
		t.Fatalf("%s: no sched field", b)
	}
	got, err := UnmarshalDecision(b)
	if err != nil || got != d {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, d)
	}
	fast, ok := fastDecision(b)
	slow, err := slowDecision(b)
	if !ok || err != nil || fast != slow {
		t.Fatalf("fast %+v (%v), slow %+v (%v)", fast, ok, slow, err)
	}
	// What a receiver that predates the field sees: the rest of the
	// decision, the unknown field ignored.
	var old struct {
		Round  uint64 `json:"round"`
		Window int64  `json:"win_ns"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Round != 3 || old.Window != int64(time.Millisecond) {
		t.Fatalf("a receiver without the field: %+v %v", old, err)
	}
	for _, bad := range []string{`"TO"`, `"a b"`, `"` + strings.Repeat("a", MaxSchedulerName+1) + `"`, `7`} {
		data := []byte(`{"v":1,"round":1,"win_ns":1,"prob":1,"nodes":1,"reason":"all","sched":` + bad + `}`)
		if _, err := UnmarshalDecision(data); err == nil || !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrMalformed) {
			t.Errorf("sched %s: %v, want refused as invalid or malformed", bad, err)
		}
	}
	none, err := UnmarshalDecision(MarshalDecision(Decision{Round: 1, Window: 1, Prob: 1, Reason: "all"}))
	if err != nil || none.Scheduler != "" {
		t.Errorf("without the field: %+v %v, want no scheduler", none, err)
	}
}

// A report says whether its node follows the group's choice: the field
// round-trips, the fast and the slow decoders agree, an unknown value is
// refused, and a report without it reads as a node that does not say.
func TestReportSelection(t *testing.T) {
	for _, sel := range []string{SelectionGroup, SelectionAlone} {
		r := sampleReport()
		r.Scheduler, r.Selection = "mlf", sel
		b, err := MarshalReport(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"sel":"`+sel+`"`) {
			t.Fatalf("%s: no sel field", b)
		}
		got, err := UnmarshalReport(b)
		if err != nil || got.Selection != sel || got.Scheduler != "mlf" {
			t.Fatalf("round trip: %+v %v, want selection %q", got, err, sel)
		}
		fast, ok := fastReport(b)
		slow, err := slowReport(b)
		if !ok || err != nil || fast.Sel != slow.Sel || fast.Sel != sel {
			t.Fatalf("fast %q (%v), slow %q (%v)", fast.Sel, ok, slow.Sel, err)
		}
	}
	r := sampleReport()
	r.Selection = "council"
	if _, err := MarshalReport(r); !errors.Is(err, ErrInvalid) {
		t.Fatalf("marshal of selection %q: %v, want ErrInvalid", r.Selection, err)
	}
	good, _ := MarshalReport(sampleReport())
	if strings.Contains(string(good), `"sel"`) {
		t.Fatalf("a report of a node that does not select says it does: %s", good)
	}
	for _, bad := range []string{`"council"`, `"GROUP"`, `7`} {
		data := strings.Replace(string(good), `"reqs":10681`, `"reqs":10681,"sel":`+bad, 1)
		if _, err := UnmarshalReport([]byte(data)); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrMalformed) {
			t.Errorf("sel %s: %v, want refused as invalid or malformed", bad, err)
		}
	}
}
