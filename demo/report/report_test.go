package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strconv"
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
	// Iterations are passes over every phase (3 in the fake run); its
	// Iterations are phase runs.
	if s.Iterations != len(rec.Iterations)/3 || s.PhaseRuns != len(rec.Iterations) || s.Seconds != len(rec.Seconds) {
		t.Errorf("summary has %d iterations, %d phase runs, %d seconds; want %d, %d, %d", s.Iterations, s.PhaseRuns, s.Seconds, len(rec.Iterations)/3, len(rec.Iterations), len(rec.Seconds))
	}
	if want := fmt.Sprintf("%d iterations completed, each one run of every phase (%d phase runs)", s.Iterations, s.PhaseRuns); !strings.Contains(string(page), want) {
		t.Errorf("page does not say %q", want)
	}
	// Papers are cited by their authors, venue and year.
	if strings.Contains(string(page), "seed 0") || !strings.Contains(string(page), "Execution time per iteration (Bez et al., FGCS 2020, Fig. 6)") {
		t.Error("figure titles do not cite Bez et al., FGCS 2020")
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

// headlineRun is a recording of 4 iterations of a write phase (8 s) and a
// read phase (2 s) under learning, with static windows of 250µs (9 s a
// cycle), 1ms (12 s) and 8ms (20 s).
func headlineRun(mode, staticOn string) record.Recording {
	windows := []time.Duration{250 * time.Microsecond, time.Millisecond, 8 * time.Millisecond}
	r := record.Recording{Meta: record.Meta{Mode: mode, StaticOn: staticOn, Windows: windows, Phases: []string{"W", "R"}, Iterations: 4, Compare: 3}}
	t := 0.0
	for range 4 {
		r.Iterations = append(r.Iterations, record.Iteration{Phase: "W", Start: t, Seconds: 8}, record.Iteration{Phase: "R", Start: t + 8, Seconds: 2})
		t += 10
	}
	r.Elapsed = t
	for i, total := range []float64{9, 12, 20} {
		r.Static = append(r.Static, record.StaticResult{Window: windows[i], Total: total})
	}
	return r
}

func TestHeadline(t *testing.T) {
	simulatedOnReal := headlineRun("real", "sim")
	simulatedOnReal.Static = append(simulatedOnReal.Static, record.StaticResult{Label: "learning (simulator, last quarter)", Total: 9.9})
	partial := headlineRun("real", "real")
	partial.Static = partial.Static[:2]
	static := headlineRun("real", "real")
	static.Meta.StaticWindow = time.Millisecond
	for _, tt := range []struct {
		name string
		r    record.Recording
		want string
	}{
		{"real stack, compared on the real stack", headlineRun("real", "real"), "After learning, one cycle of the experiment takes 10.00 s on this machine (the mean over the last quarter of each phase's iterations): " +
			"111% of the time of the best static window (250µs, 9.00 s, which nobody knows in advance), 83% of the default window's (1ms, 12.00 s) and 50% of the worst's (8ms, 20.00 s); " +
			"each static window run on this machine after learning."},
		{"simulator", headlineRun("sim", ""), "After learning, one cycle of the experiment takes 10.00 s in this simulated run (the mean over the last quarter of each phase's iterations): " +
			"111% of the time of the best static window (250µs, 9.00 s, which nobody knows in advance), 83% of the default window's (1ms, 12.00 s) and 50% of the worst's (8ms, 20.00 s); " +
			"each static window simulated alongside."},
		// The learning row is the simulator's: the headline says so first,
		// and how to compare on this machine, at what cost: 3 windows of 3
		// iterations, then 1 to 3 of them again, at 10 s an iteration.
		{"real stack, compared in the simulator", simulatedOnReal, "Simulated comparison, not this machine's: in the simulator, after learning, one cycle of the experiment takes 9.90 s: " +
			"110% of the time of the simulator's best static window (250µs, 9.00 s, which nobody knows in advance), 82% of the default window's (1ms, 12.00 s) and 50% of the worst's (8ms, 20.00 s). " +
			"This run took 10.00 s a cycle on this machine over the last quarter of its iterations, which the simulator's seconds do not measure. " +
			"To compare on this machine, run adaptio demo --compare-real: after learning it runs each of the 3 static windows on this stack for 3 iterations, then the best ones again, about 2 to 3 min more at this run's 10.0 s an iteration."},
		{"comparison stopped early", partial, "After learning, one cycle of the experiment takes 10.00 s on this machine (the mean over the last quarter of each phase's iterations): " +
			"111% of the time of the best static window (250µs, 9.00 s, which nobody knows in advance), 83% of the default window's (1ms, 12.00 s) and 83% of the worst's (1ms, 12.00 s); " +
			"each static window run on this machine after learning. Only 2 of the 3 static windows ran before the run stopped."},
		{"no learning", static, ""},
		{"no comparison", record.Recording{Meta: record.Meta{Mode: "real"}, Iterations: headlineRun("real", "real").Iterations}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Headline(tt.r); got != tt.want {
				t.Errorf("Headline:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The headline is the page's first paragraph and the summary's.
func TestReportLeadsWithHeadline(t *testing.T) {
	r := headlineRun("real", "sim")
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	h := Headline(r)
	if !strings.HasPrefix(h, "Simulated comparison, not this machine's") || !strings.Contains(page, "<h1>adaptio demo report</h1>\n<p id=\"headline\"><b>"+html.EscapeString(h)) {
		t.Errorf("page does not lead with the headline %q", h)
	}
	if s := summaryOf(t, buf.Bytes()); s.Headline != h {
		t.Errorf("summary headline %q, want %q", s.Headline, h)
	}
	if !strings.Contains(page, "The same workload under each static window, in the simulator, not on this machine</h2>") {
		t.Error("the static section does not say it ran in the simulator")
	}
}

// No two labels of a bar chart's axis overlap, however long: each takes at
// most its slot (at charWidth a character), wrapped onto lines or set
// smaller.
func TestBarChartLabelsDoNotOverlap(t *testing.T) {
	labels := []string{"125µs", "250µs", "500µs", "1ms", "2ms", "4ms", "8ms", record.LabelLastHalf, record.LabelLastQuarter, "learning (simulator, last quarter)", "averyveryverylonglabelwithoutspaces"}
	var bars []Bar
	for _, l := range labels {
		bars = append(bars, Bar{Label: l, Value: 10})
	}
	for _, w := range []int{960, 760} {
		svg := BarChart("t", "s", bars, w, 260)
		texts := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle"(?: font-size="([0-9.]+)")?>((?:<tspan[^>]*>[^<]*</tspan>)+)</text>`).FindAllStringSubmatch(svg, -1)
		if len(texts) != len(labels) {
			t.Fatalf("width %d: %d axis labels, want %d", w, len(texts), len(labels))
		}
		prevRight := 0.0
		for i, m := range texts {
			x, _ := strconv.ParseFloat(m[1], 64)
			size := 11.0
			if m[2] != "" {
				size, _ = strconv.ParseFloat(m[2], 64)
			}
			var lines []string
			for _, l := range regexp.MustCompile(`<tspan[^>]*>([^<]*)</tspan>`).FindAllStringSubmatch(m[3], -1) {
				lines = append(lines, html.UnescapeString(l[1]))
			}
			if got := strings.Join(lines, " "); got != labels[i] {
				t.Errorf("width %d: label %q, want %q", w, got, labels[i])
			}
			half := 0.0
			for _, l := range lines {
				half = max(half, textWidth(l)*size/11/2)
			}
			if x-half < prevRight {
				t.Errorf("width %d: label %q (from %.1f) overlaps the one before it (to %.1f)", w, labels[i], x-half, prevRight)
			}
			prevRight = x + half
		}
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
