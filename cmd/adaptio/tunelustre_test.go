package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adaptio/adaptio/internal/testlog"
	"github.com/adaptio/adaptio/tune/lustretest"
)

func tuneLustre(ctx context.Context, root string, args ...string) (string, error) {
	cmd := newRootCmd()
	var out testlog.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"tune", "lustre", "--root", root}, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func movingTree(t *testing.T, n int, lay lustretest.Layout) *lustretest.Tree {
	t.Helper()
	tr, err := lustretest.New(t.TempDir(), n, lay, lustretest.Model{Peak: 500 << 20, App: 400 << 20, BestPages: 1024, BestInFlight: 32})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// --dry-run refuses what the real run refuses, and changes nothing.
func TestTuneLustreDryRunChecksRanges(t *testing.T) {
	tr := movingTree(t, 2, lustretest.Layout215)
	for _, set := range []string{"max_rpcs_in_flight=-3", "max_rpcs_in_flight=9999", "max_pages_per_rpc=0", "max_pages_per_rpc=8192", "checksums=1"} {
		for _, dry := range []bool{true, false} {
			args := []string{"--set", set}
			if dry {
				args = append(args, "--dry-run")
			}
			out, err := tuneLustre(context.Background(), tr.Root, args...)
			if err == nil || strings.Contains(out, "would set") {
				t.Errorf("--set %s (dry run %v) accepted:\n%s", set, dry, out)
			}
		}
	}
	for _, tg := range tr.Targets() {
		if v, _ := tr.Param(tg, "max_rpcs_in_flight"); v != 8 {
			t.Errorf("%s: max_rpcs_in_flight %d after refused sets", tg, v)
		}
	}
}

// A --set that fails on one target changes no target, and says so.
func TestTuneLustreSetIsAllOrNothing(t *testing.T) {
	tr := movingTree(t, 3, lustretest.Layout212)
	targets := tr.Targets()
	// Writes to /proc/self/oom_score fail even as root, as Lustre's
	// refusals do: the second target's max_dirty_mb is one.
	bad := filepath.Join(tr.Root, tr.Layout.Params, targets[1], "max_dirty_mb")
	os.Remove(bad)
	if err := os.Symlink("/proc/self/oom_score", bad); err != nil {
		t.Fatal(err)
	}
	_, err := tuneLustre(context.Background(), tr.Root, "--set", "max_rpcs_in_flight=32", "--set", "max_dirty_mb=64")
	if err == nil || !strings.Contains(err.Error(), targets[0]+" max_rpcs_in_flight put back to 8") {
		t.Fatalf("--set over a refusing target: %v", err)
	}
	for _, tg := range targets {
		if v, _ := tr.Param(tg, "max_rpcs_in_flight"); v != 8 {
			t.Errorf("%s: max_rpcs_in_flight %d, want 8 (all or nothing)", tg, v)
		}
	}
	if v, _ := tr.Param(targets[0], "max_dirty_mb"); v != 32 {
		t.Errorf("%s: max_dirty_mb %d, want 32", targets[0], v)
	}
}

// The listing shows every parameter, and rpc_stats wherever the client
// keeps it; what cannot be read is shown with the reason.
func TestTuneLustreListsEverything(t *testing.T) {
	tr := movingTree(t, 2, lustretest.Layout212) // rpc_stats under /proc only
	if _, err := tr.Step(time.Second); err != nil {
		t.Fatal(err)
	}
	tg := tr.Targets()[1]
	os.WriteFile(filepath.Join(tr.Root, tr.Layout.Params, tg, "max_dirty_mb"), []byte("lots\n"), 0o644)
	out, err := tuneLustre(context.Background(), tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`max_dirty_mb=? (tune: max_dirty_mb of ` + tg + ` holds "lots", not a whole number`,
		"proc/fs/lustre/osc/" + tg + "/rpc_stats): in flight r/w 0/8", "1 parameters could not be read"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "max_pages_per_rpc=256") != 2 {
		t.Errorf("listing:\n%s", out)
	}
}

// --auto on a moving tree in real time: it changes the values, logs each
// change with its reason, serves its metrics, and with --restore puts the
// values back when stopped.
func TestTuneLustreAuto(t *testing.T) {
	tr := movingTree(t, 2, lustretest.Layout215)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var model sync.WaitGroup
	model.Go(func() {
		for ctx.Err() == nil {
			if _, err := tr.Step(20 * time.Millisecond); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := tuneLustre(ctx, tr.Root, "--auto", "--interval", "20ms", "--restore", "--metrics-addr", addr)
		done <- result{out, err}
	}()
	var metrics string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metrics = string(b)
			if strings.Contains(metrics, "adaptio_lustre_changes_total{") {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	r := <-done
	model.Wait()
	if r.err != nil {
		t.Fatalf("--auto: %v\n%s", r.err, r.out)
	}
	if !strings.Contains(metrics, `adaptio_lustre_param{param="max_rpcs_in_flight",target="`+tr.Targets()[0]+`"}`) ||
		!strings.Contains(metrics, "adaptio_lustre_changes_total{") {
		t.Errorf("metrics:\n%s", metrics)
	}
	if !strings.Contains(r.out, `msg="lustre: parameter changed" target=`+tr.Targets()[0]) || !strings.Contains(r.out, "reason=first_move") ||
		!strings.Contains(r.out, "stopped: putting back the values found at start") {
		t.Errorf("output:\n%s", r.out)
	}
	for _, tg := range tr.Targets() {
		p, _ := tr.Param(tg, "max_pages_per_rpc")
		f, _ := tr.Param(tg, "max_rpcs_in_flight")
		if p != 256 || f != 8 {
			t.Errorf("%s after --restore: %d pages, %d in flight; want 256, 8", tg, p, f)
		}
	}
}
