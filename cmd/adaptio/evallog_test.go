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
// support, and warns; the report states it too.
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
	for _, want := range []string{"unsupported SS/write 100.0%, all 100.0%", "blocks of 8 consecutive rounds", "does not support 1% or more of what static 8ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("SS/write 100.0%")) {
		t.Errorf("report: %v, or it lacks the unsupported part", err)
	}
}
