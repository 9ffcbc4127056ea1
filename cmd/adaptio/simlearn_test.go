package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// Learning in the simulator earns, over a write-then-read run, at least
// 0.95 of the best static setting's bandwidth (7 windows and FIFO), and
// its learned state carries over to a second run.
func TestSimLearnNearTheBestStaticSetting(t *testing.T) {
	p := workload.Pattern{Processes: 128, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: 32 << 10, TotalBytes: 256 << 20}
	cfg := sim.Config{Patterns: sim.WriteRead(p, 12), IONodes: 4, Seed: 1}
	state := filepath.Join(t.TempDir(), "learned.json")
	o := learnOptions{Policy: council.DefaultPolicy, State: state, Seed: 1, Compare: true}
	r, err := simLearn(context.Background(), cfg, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	best, ok := r.bestStatic()
	if !ok || len(r.static) != 8 {
		t.Fatalf("%d static runs, want 8", len(r.static))
	}
	// One run is one draw of the policy's randomness: judge the median of
	// three seeds, and no run far behind (seeds 1 to 8 reach 0.90 to 0.99).
	ratios := []float64{r.learned.Bandwidth / best.res.Bandwidth}
	for seed := uint64(2); seed <= 3; seed++ {
		so := o
		so.Seed, so.State = seed, filepath.Join(t.TempDir(), "learned.json")
		rs, err := simLearn(context.Background(), cfg, so, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := rs.bestStatic()
		ratios = append(ratios, rs.learned.Bandwidth/b.res.Bandwidth)
	}
	sorted := slices.Sorted(slices.Values(ratios))
	if sorted[1] < 0.95 || sorted[0] < 0.85 {
		var b strings.Builder
		r.write(&b)
		t.Errorf("learning reaches %.3f of the best static setting over seeds 1 to 3, want a median >= 0.95 and none below 0.85\nseed 1:\n%s", ratios, b.String())
	}
	if len(r.status.Contexts) < 2 {
		t.Errorf("learned %d patterns, want the write and the read: %+v", len(r.status.Contexts), r.status.Contexts)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("learned state not written: %v", err)
	}
	o.Compare = false
	r2, err := simLearn(context.Background(), cfg, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var first, second int64
	for _, c := range r.status.Contexts {
		for _, n := range c.Counts {
			first += n
		}
	}
	for _, c := range r2.status.Contexts {
		for _, n := range c.Counts {
			second += n
		}
	}
	if second <= first {
		t.Errorf("second run's pulls %d, want more than the %d carried over", second, first)
	}
}

func TestSimLearnRefusesAnotherScheduler(t *testing.T) {
	p := workload.Pattern{Processes: 8, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: 32 << 10, TotalBytes: 8 << 20}
	_, err := simLearn(context.Background(), sim.Config{Patterns: []workload.Pattern{p}, Scheduler: "fifo"}, learnOptions{Policy: council.DefaultPolicy}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "fifo") {
		t.Errorf("learning with --scheduler fifo: %v, want a refusal naming it", err)
	}
}

// adaptio sim run --scheduler dynamic: every node changes algorithm and
// accounts its time among them.
func TestSimRunDynamic(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"sim", "run", "--scheduler", "dynamic", "--io-nodes", "2", "--total", "64MiB", "--write-read", "2", "--threads", "2", "--spatiality", "contiguous"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dynamic selection (AGIOS's armed bandit) among mlf,to-agg,sjf,to,noop", "makespan", "node 0 ", "node 1 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "changes    0\n") {
		t.Errorf("no algorithm change:\n%s", out.String())
	}
	// Ours: Thompson sampling, one choice for every node (both nodes run alike).
	out.Reset()
	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"sim", "run", "--scheduler", "dynamic", "--select-policy", "thompson", "--select-shared", "--io-nodes", "2", "--total", "64MiB", "--write-read", "2", "--threads", "2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(thompson, one choice for every node)") {
		t.Errorf("output lacks the selection's name:\n%s", out.String())
	}
	var nodes []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "node ") {
			nodes = append(nodes, line[len("node 0"):])
		}
	}
	if len(nodes) != 2 || nodes[0] != nodes[1] {
		t.Errorf("with one choice the nodes' times differ:\n%s", out.String())
	}
	// The JLESC AGIOS selection report's pattern matching: the knowledge base is reported.
	out.Reset()
	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"sim", "run", "--scheduler", "pattern", "--io-nodes", "2", "--total", "64MiB", "--write-read", "2", "--threads", "2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pattern matching)") || !strings.Contains(out.String(), " known on node 0") {
		t.Errorf("pattern selection's output lacks its knowledge base:\n%s", out.String())
	}
	// --select-state: a second run starts from the first's knowledge: it
	// recognises the patterns the first stored (they are seen again)
	// rather than storing them anew.
	state := filepath.Join(t.TempDir(), "kb.json")
	seen := func() (patterns, seen int) {
		out.Reset()
		cmd := newRootCmd()
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"sim", "run", "--scheduler", "pattern", "--select-state", state, "--io-nodes", "2", "--total", "512MiB", "--write-read", "1", "--threads", "2"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(state)
		if err != nil {
			t.Fatal(err)
		}
		var kbs []struct {
			Patterns []struct {
				Seen int `json:"seen"`
			} `json:"patterns"`
		}
		if err := json.Unmarshal(b, &kbs); err != nil || len(kbs) != 2 {
			t.Fatalf("state %s: %v, %d knowledge bases, want one per I/O node", b, err, len(kbs))
		}
		for _, p := range kbs[0].Patterns {
			seen += p.Seen
		}
		return len(kbs[0].Patterns), seen
	}
	p1, s1 := seen()
	p2, s2 := seen()
	if p1 == 0 || p2 != p1 || s2 < 2*s1-1 {
		t.Errorf("node 0: %d patterns seen %d times after the first run, %d seen %d times after the second; want the same patterns seen about twice as often", p1, s1, p2, s2)
	}
	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"sim", "run", "--scheduler", "dynamic", "--select-from", "mlf,nosuch"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown scheduler in --select-from: %v", err)
	}
}

// adaptio tune lustre on a fake client tree: shows every target, sets
// within range, refuses outside it, and --dry-run changes nothing.
func TestTuneLustreCommand(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/fs/lustre/osc/lustre-OST0000-osc-ffff88")
	os.MkdirAll(dir, 0o755)
	for name, v := range map[string]string{"max_pages_per_rpc": "256\n", "max_rpcs_in_flight": "8\n", "max_dirty_mb": "32\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644)
	}
	run := func(args ...string) (string, error) {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"tune", "lustre", "--root", root}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--set", "max_rpcs_in_flight=32", "--dry-run")
	if err != nil || !strings.Contains(out, "would set max_rpcs_in_flight 8 -> 32") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "max_rpcs_in_flight")); string(b) != "8\n" {
		t.Fatalf("--dry-run changed the parameter to %q", b)
	}
	if _, err := run("--set", "max_rpcs_in_flight=32"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "max_rpcs_in_flight")); string(b) != "32\n" {
		t.Fatalf("after --set: %q", b)
	}
	if _, err := run("--set", "max_rpcs_in_flight=1000"); err == nil || !strings.Contains(err.Error(), "range") {
		t.Errorf("out of range: %v", err)
	}
}
