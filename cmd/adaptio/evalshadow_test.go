package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/rw"
)

// ssDetector says SS for every busy interval.
type ssDetector struct{}

func (ssDetector) Detect(access.Observation) (access.Class, [3]float64) {
	return access.SS, [3]float64{0, 0, 1}
}

// writeShadowLog runs a Council core for rounds rounds of one I/O node
// writing SS, learning in force for the first live rounds and in shadow
// mode after, and writes its decision log.
func writeShadowLog(t *testing.T, live, rounds int) string {
	t.Helper()
	c, err := council.New(council.Config{Nodes: 1, Detector: ssDetector{}, Policy: "egreedy", Credit: council.CreditRound, Reward: council.RewardBandwidth},
		rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	w := c.Window()
	for r := 1; r <= rounds; r++ {
		if r == live+1 {
			c.SetShadow(true)
		}
		bw := 100e6 * (1 + w.Seconds()*50) // larger windows earn more
		o := access.Observation{Node: 0, Interval: time.Second, Processes: 8, Op: rw.Write, FileHandles: 8,
			ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: bw, Bytes: int64(bw), Requests: 100, Window: w}
		now := time.Duration(r) * time.Second
		if err := c.Observe(now, council.Report{Instance: 1, Seq: uint64(r), Round: c.Round(), Obs: o}); err != nil {
			t.Fatal(err)
		}
		d, ok, _ := c.Poll(now)
		if !ok {
			t.Fatalf("round %d did not close", r)
		}
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		if w = d.PlanWindow(rw.Write); w == 0 {
			w = d.Window
		}
	}
	return path
}

func TestEvalLogShadowSaysWhereItIsSupported(t *testing.T) {
	t.Run("shadow from the start", func(t *testing.T) {
		log := writeShadowLog(t, 0, 200)
		out, err := runRoot(t, "eval", "log", "--decision-log", log, "--shadow")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"200 decisions, 200 in shadow mode", "SS/write: 200 rounds, 200 steered; in force mostly 1ms", "no support, no estimate",
			"not identified in", "warning: no estimate of learning's gain in SS/write"} {
			if !strings.Contains(out, want) {
				t.Fatalf("eval log --shadow:\n%s\nwant %q", out, want)
			}
		}
		if strings.Contains(out, "95%") {
			t.Fatalf("eval log --shadow printed an interval for a window the log never ran:\n%s", out)
		}
		out, err = runRoot(t, "eval", "log", "--decision-log", log, "--policy", "static:8ms", "--resamples", "20")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "static 8ms") || !strings.Contains(out, "no interval: the log ran the operator's windows") {
			t.Fatalf("eval log --policy static:8ms on a shadow log:\n%s\nwant no interval", out)
		}
	})
	t.Run("learning in force first", func(t *testing.T) {
		// egreedy ran every window while learning was in force: learning's
		// shadow choices are supported, with intervals.
		log := writeShadowLog(t, 150, 300)
		out, err := runRoot(t, "eval", "log", "--decision-log", log, "--shadow")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "300 decisions, 150 in shadow mode") || !strings.Contains(out, "logged rewards, mean") || !strings.Contains(out, "(95%)") {
			t.Fatalf("eval log --shadow:\n%s\nwant supported estimates", out)
		}
	})
}
