package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/demo/record"
)

func viewRecorder() *record.Recorder {
	rec := record.New(record.Meta{Mode: "real", Nodes: 2, Windows: []time.Duration{250 * time.Microsecond, 8 * time.Millisecond}, Phases: []string{"SS write", "SS read"}})
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
	want := "t=1s [SS write] | n0 SS/write 250µs exploit 3.0 MiB/s | n1 SS/write 8ms explore 1.0 MiB/s | iter 1 SS write 12.50s\n"
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
	for _, want := range []string{"\x1b[H\x1b[2J", "live stack", "dashboard: http://127.0.0.1:1/", "explore p=0.02", "exploit", "12.50 s", "SS write 250µs (6)", "0 iterations and 1 of 2 phases done", "p = the probability"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal view lacks %q:\n%s", want, out)
		}
	}
}

func TestProgressCountsIterationsNotPhases(t *testing.T) {
	for _, tt := range []struct {
		runs, per int
		want      string
	}{
		{40, 4, "10 iterations done"},
		{41, 4, "10 iterations and 1 of 4 phases done"},
		{3, 1, "3 iterations done"},
		{0, 0, "0 iterations done"},
	} {
		if got := progress(tt.runs, tt.per); got != tt.want {
			t.Errorf("progress(%d, %d) = %q, want %q", tt.runs, tt.per, got, tt.want)
		}
	}
}
