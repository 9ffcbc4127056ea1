package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
)

// adaptio eval log on a log whose logging policy never chose 8 ms says,
// per context, which part of static 8ms's choices the log does not
// support, and refuses to estimate it; the report states it too.
func TestEvalLogReportsUnsupportedMass(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "decisions.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	prev := time.Millisecond
	for r := 1; r <= 400; r++ {
		w, prob := time.Millisecond, 0.75
		if r%4 == 0 {
			w, prob = 2*time.Millisecond, 0.25
		}
		d := council.Decision{Round: uint64(r), Window: w, Prob: prob, Context: "SS/write", Voters: 1,
			Nodes: []council.NodeReport{{Node: 0, Window: prev, Credited: true, Reward: float64(10 + r%3), Context: "SS/write"}}}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		prev = w
	}
	if err := os.WriteFile(logPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "ope.html")
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"eval", "log", "--decision-log", logPath, "--policy", "static:1ms,static:8ms", "--resamples", "50", "--report", html})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unsupported SS/write 100.0%, all 100.0%", "blocks of 8 consecutive rounds", "static 8ms            0      0.0 refused: no support"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("SS/write 100.0%")) {
		t.Errorf("report: %v, or it lacks the unsupported part", err)
	}
}

// adaptio eval log reads a log whose last line was cut (a killed run) up
// to the line before, with a warning; refuses, with the reason and no
// interval, a window the log never ran; and --format tsv prints one line
// per policy for scripts.
func TestEvalLogCutLineAndRefusal(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "decisions.jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for r := 1; r <= 200; r++ {
		d := council.Decision{Round: uint64(r), Window: 2 * time.Millisecond, Prob: 1, Context: "SS/write", Voters: 1,
			Nodes: []council.NodeReport{{Node: 0, Window: 2 * time.Millisecond, Credited: true, Reward: float64(10 + r%3), Context: "SS/write"}}}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	b := buf.Bytes()
	if err := os.WriteFile(logPath, b[:len(b)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string) {
		cmd := newRootCmd()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"eval", "log", "--decision-log", logPath, "--resamples", "50"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String(), errOut.String()
	}
	out, errOut := run("--policy", "static:2ms,static:8ms")
	if !strings.Contains(errOut, "line 200 is cut") || !strings.Contains(errOut, "read up to line 199") {
		t.Errorf("stderr lacks the cut line's warning:\n%s", errOut)
	}
	if !strings.Contains(out, "static 8ms") || !strings.Contains(out, "refused: no support") {
		t.Errorf("output lacks static 8ms's refusal:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "static 8ms") && strings.Contains(l, "[") {
			t.Errorf("static 8ms has an interval: %q", l)
		}
	}
	out, _ = run("--policy", "static:2ms,static:8ms", "--format", "tsv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "static:2ms\tok\t") || !strings.HasPrefix(lines[2], "static:8ms\trefused\t") || !strings.HasSuffix(lines[2], "NaN\tNaN\tNaN") {
		t.Errorf("tsv:\n%s", out)
	}
	if m, _ := run("--measured"); !strings.Contains(m, "(198 rounds)") {
		t.Errorf("--measured on the cut log: %s, want 198 rounds (199 read, the first earned before any decision)", m)
	}
}
