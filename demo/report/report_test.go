package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/demo/internal/fake"
	"github.com/adaptio/adaptio/demo/record"
)

func summaryOf(t *testing.T, page []byte) Summary {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="adaptio-summary">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no adaptio-summary in the page")
	}
	var s Summary
	if err := json.Unmarshal(m[1], &s); err != nil {
		t.Fatalf("summary: %v", err)
	}
	return s
}

func TestReportSelfContainedAndConsistent(t *testing.T) {
	rec := fake.Recording(300, 7)
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	page := buf.Bytes()
	// Nothing is fetched: the only URL is the SVG namespace.
	for _, u := range regexp.MustCompile(`(?:https?:)?//[a-zA-Z0-9.-]+[^"' <)]*`).FindAll(page, -1) {
		if string(u) != "http://www.w3.org/2000/svg" {
			t.Errorf("page references %s", u)
		}
	}
	for _, tag := range []string{"<link", "<img", "<iframe", "src="} {
		if bytes.Contains(page, []byte(tag)) {
			t.Errorf("page contains %q", tag)
		}
	}
	s := summaryOf(t, page)
	if s.Iterations != len(rec.Iterations) || s.Seconds != len(rec.Seconds) {
		t.Errorf("summary has %d iterations %d seconds, want %d %d", s.Iterations, s.Seconds, len(rec.Iterations), len(rec.Seconds))
	}
	explores := 0
	for _, sec := range rec.Seconds {
		for _, n := range sec.Nodes {
			if n.Explore {
				explores++
			}
		}
	}
	if s.Explores != explores {
		t.Errorf("summary explores %d, want %d", s.Explores, explores)
	}
	for _, ps := range s.Phases {
		want := record.Stats(rec.Iterations, ps.Phase)
		if ps != want {
			t.Errorf("phase %s: got %+v, want %+v", ps.Phase, ps, want)
		}
	}
	// Fig. 6: one panel per phase; Fig. 7: one; Fig. 8: one per context; static bars.
	wantSVG := len(s.Phases) + 1 + len(rec.Estimates) + 1
	if got := bytes.Count(page, []byte("<svg")); got != wantSVG {
		t.Errorf("%d SVG figures, want %d", got, wantSVG)
	}
	if !strings.Contains(string(page), `<tr class="learn">`) {
		t.Error("static table has no learning row")
	}
}

func TestReportLongRunShowsFirstAndLast15Minutes(t *testing.T) {
	rec := fake.Recording(2000, 1)
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "the first 15 minutes") || !strings.Contains(buf.String(), "the last 15 minutes") {
		t.Error("long run: want first and last 15-minute panels")
	}
}

func TestReportEmptyRun(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, record.Recording{Meta: fake.Meta()}); err != nil {
		t.Fatal(err)
	}
	if s := summaryOf(t, buf.Bytes()); s.Iterations != 0 {
		t.Errorf("iterations %d, want 0", s.Iterations)
	}
	if !strings.Contains(buf.String(), "stopped before its planned end") {
		t.Error("an unfinished run should say it stopped early")
	}
}

func TestWindowLabel(t *testing.T) {
	for _, tt := range []struct {
		w    time.Duration
		want string
	}{{125 * time.Microsecond, "125µs"}, {time.Millisecond, "1ms"}, {8 * time.Millisecond, "8ms"}, {0, "learning"}} {
		if got := WindowLabel(tt.w); got != tt.want {
			t.Errorf("WindowLabel(%v) = %q, want %q", tt.w, got, tt.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   []float64
	}{{0, 10, []float64{0, 2, 4, 6, 8, 10}}, {0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}}, {3, 3, []float64{3, 3.2, 3.4, 3.6, 3.8, 4}}} {
		got := niceTicks(tt.lo, tt.hi, 5)
		if len(got) != len(tt.want) {
			t.Fatalf("niceTicks(%v, %v) = %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
		for i := range got {
			if d := got[i] - tt.want[i]; d > 1e-9 || d < -1e-9 {
				t.Fatalf("niceTicks(%v, %v) = %v, want %v", tt.lo, tt.hi, got, tt.want)
			}
		}
	}
}

func TestVerdict(t *testing.T) {
	rows := []record.StaticResult{
		{Window: 250 * time.Microsecond, Total: 20}, {Window: time.Millisecond, Total: 25}, {Window: 8 * time.Millisecond, Total: 40},
		{Window: 0, Total: 22, Label: "learning"},
	}
	want := "After learning, one cycle takes 22.00 s: 110% of the time of the best static window (250µs, 20.00 s, which nobody knows in advance), 88% of the default window's (1ms, 25.00 s) and 55% of the worst's (8ms, 40.00 s)."
	if got := verdict(rows); got != want {
		t.Errorf("verdict:\n got %s\nwant %s", got, want)
	}
	if got := verdict(rows[:3]); got != "" {
		t.Errorf("verdict without a learning row = %q, want empty", got)
	}
}

// The per-phase verdict names only the phases where the default window is
// 15% or more slower than the phase's best static window, and compares the
// learning of the last half with the default there.
func TestPhaseVerdict(t *testing.T) {
	rows := []record.StaticResult{
		{Window: time.Millisecond, Total: 12, Phases: map[string]float64{"W": 10, "R": 2}},
		{Window: 8 * time.Millisecond, Total: 10.05, Phases: map[string]float64{"W": 8, "R": 2.05}},
		{Label: "learning (last half)", Total: 11, Phases: map[string]float64{"W": 9, "R": 2}},
		{Label: "learning (last quarter)", Total: 10, Phases: map[string]float64{"W": 8, "R": 2}},
	}
	want := "Over the last half of its iterations, learning takes 11.00 s a cycle (109% of the best static window's). Where the default window matters: W (the default 25% slower than 8ms): learning 10.0% faster than the default."
	if got := phaseVerdict(rows, []string{"W", "R"}); got != want {
		t.Errorf("phaseVerdict:\n got %s\nwant %s", got, want)
	}
	// With the standard errors known, the gain carries its own:
	// 0.9 * sqrt((0.3/9)^2 + (0.4/10)^2) = 0.0469.
	rows[0].SE = map[string]float64{"W": 0.4, "R": 0.1}
	rows[2].SE = map[string]float64{"W": 0.3, "R": 0.1}
	if got := phaseVerdict(rows, []string{"W", "R"}); !strings.Contains(got, "learning 10.0 ± 4.7% faster than the default.") || !strings.Contains(got, "one standard error") {
		t.Errorf("phaseVerdict with standard errors: %s", got)
	}
	rows[0].Phases["W"] = 9
	if got := phaseVerdict(rows, []string{"W", "R"}); !strings.HasPrefix(got, "In no phase") {
		t.Errorf("phaseVerdict with the default within 15%% everywhere = %q", got)
	}
}
