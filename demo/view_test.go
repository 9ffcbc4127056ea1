package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/demo/record"
)

func viewRecorder() *record.Recorder {
	rec := record.New(record.Meta{Mode: "real", Nodes: 2, Windows: []time.Duration{250 * time.Microsecond, 8 * time.Millisecond}, Phases: []string{"SS write", "SS read"}, Iterations: 6})
	rec.AddSecond(record.Second{T: 1, Phase: "SS write", Nodes: []record.NodeSecond{
		{Node: 0, Pattern: "SS", Op: "write", Window: 250 * time.Microsecond, Bandwidth: 3 << 20},
		{Node: 1, Pattern: "SS", Op: "write", Window: 8 * time.Millisecond, Explore: true, Prob: 0.02, Bandwidth: 1 << 20}}})
	rec.AddIteration(record.Iteration{Phase: "SS write", Seconds: 12.5})
	rec.SetEstimates([]record.Estimate{{Context: "SS write", Values: []float64{3, 1}, Counts: []int64{4, 2}, Best: 0}})
	return rec
}

func TestViewLineMode(t *testing.T) {
	rec := viewRecorder()
	var b bytes.Buffer
	v := &View{W: &b, Rec: rec}
	v.Render()
	v.Render() // nothing new: no second line
	want := "t=1s [SS write] | n0 SS/write 250µs exploit 3.0 MiB/s | n1 SS/write 8ms explore 1.0 MiB/s | iteration 1 SS write 12.50s | 0 of 6 iterations\n"
	if b.String() != want {
		t.Errorf("line view:\n got %q\nwant %q", b.String(), want)
	}
	rec.AddSecond(record.Second{T: 2, Nodes: []record.NodeSecond{{Node: 0}, {Node: 1}}})
	v.Render()
	if lines := strings.Count(b.String(), "\n"); lines != 2 {
		t.Errorf("%d lines after a new second, want 2", lines)
	}
	if !strings.Contains(b.String(), "t=2s | n0 idle") {
		t.Errorf("idle second not shown as idle: %q", b.String())
	}
}

func TestViewTerminalMode(t *testing.T) {
	var b bytes.Buffer
	v := &View{W: &b, TTY: true, Rec: viewRecorder(), URL: "http://127.0.0.1:1/"}
	v.Render()
	out := b.String()
	for _, want := range []string{"\x1b[H\x1b[2J", "live stack", "dashboard: http://127.0.0.1:1/", "explore p=0.02", "exploit", "12.50 s", "SS write 250µs (6)", "0 of 6 iterations\n", "iteration 1    SS write      12.50 s", "p = the probability"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal view lacks %q:\n%s", want, out)
		}
	}
}

// The header counts experiment iterations (every phase run once), of the
// planned, with the time left from the mean iteration once one has ended;
// the static comparison run on the stack after them counts its windows.
func TestViewProgress(t *testing.T) {
	phases := []string{"SS write", "SS read", "FPP write", "SC read"}
	rec := record.New(record.Meta{Mode: "real", Nodes: 1, Windows: []time.Duration{250 * time.Microsecond, time.Millisecond, 8 * time.Millisecond},
		Phases: phases, Iterations: 48, StaticOn: "real"})
	header := func() string {
		var b bytes.Buffer
		(&View{W: &b, TTY: true, Rec: rec}).Render()
		line, _, _ := strings.Cut(b.String(), "\n")
		return line
	}
	second := func(t float64) { rec.AddSecond(record.Second{T: t, Nodes: []record.NodeSecond{{Node: 0}}}) }
	second(1)
	for i := range 3 {
		rec.AddIteration(record.Iteration{Phase: phases[i], Start: 1 + 2.5*float64(i), Seconds: 2.5})
	}
	second(9)
	if got := header(); !strings.HasSuffix(got, "t=9 s — 0 of 48 iterations") {
		t.Errorf("before the first iteration ends: %q, want no time left", got)
	}
	// 41 iterations of 10 s each; the 42nd started 4 s ago.
	for i := 3; i < 41*4; i++ {
		rec.AddIteration(record.Iteration{Phase: phases[i%4], Start: 1 + 2.5*float64(i), Seconds: 2.5})
	}
	second(1 + 410 + 4)
	if got := header(); !strings.HasSuffix(got, "t=415 s — 41 of 48 iterations, about 66 s left") {
		t.Errorf("after 41 iterations: %q", got)
	}
	for i := 41 * 4; i < 48*4; i++ {
		rec.AddIteration(record.Iteration{Phase: phases[i%4], Start: 1 + 2.5*float64(i), Seconds: 2.5})
	}
	rec.SetStatic([]record.StaticResult{{Window: 250 * time.Microsecond, Total: 9}, {Window: 8 * time.Millisecond, Total: 8, Confirmed: true}})
	second(490)
	if got := header(); !strings.HasSuffix(got, "48 of 48 iterations; static comparison: 2 of 3 windows run, 1 of them again") {
		t.Errorf("during the static comparison: %q", got)
	}
}
