package lustre

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/tune"
	"github.com/adaptio/adaptio/tune/lustretest"
)

// fakeClient lays out a Lustre 2.12 client's tree (parameters in /sys,
// rpc_stats in /proc) with n targets at Lustre's defaults.
func fakeClient(t *testing.T, n int) (Lustre, *lustretest.Tree) {
	t.Helper()
	tr, err := lustretest.New(t.TempDir(), n, lustretest.Layout212, lustretest.Model{Peak: 1 << 30, App: 1 << 29, BestPages: 256, BestInFlight: 8})
	if err != nil {
		t.Fatal(err)
	}
	return Lustre{Root: tr.Root}, tr
}

func param(t *testing.T, tr *lustretest.Tree, target, name string) int {
	t.Helper()
	v, err := tr.Param(target, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLustreReadsAndSetsWithinRange(t *testing.T) {
	l, tr := fakeClient(t, 2)
	targets, err := l.Targets()
	if err != nil || len(targets) != 2 {
		t.Fatalf("targets %v, %v", targets, err)
	}
	if v, err := l.Get(targets[0], "max_pages_per_rpc"); err != nil || v != 256 {
		t.Fatalf("max_pages_per_rpc %d, %v", v, err)
	}
	if err := l.Set(targets[1], "max_rpcs_in_flight", 32); err != nil {
		t.Fatal(err)
	}
	if v := param(t, tr, targets[1], "max_rpcs_in_flight"); v != 32 {
		t.Errorf("after setting 32: %d", v)
	}
	for _, tc := range []struct {
		name string
		v    int
		want string
	}{
		{"max_rpcs_in_flight", 512, "outside Lustre's range"},
		{"max_rpcs_in_flight", -3, "outside Lustre's range"},
		{"max_pages_per_rpc", 0, "outside Lustre's range"},
		{"max_pages_per_rpc", 8192, "outside Lustre's range"},
		{"max_dirty_mb", 2048, "outside Lustre's range"},
		{"checksums", 1, "unknown Lustre parameter"},
	} {
		if err := l.Set(targets[0], tc.name, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set %s=%d: %v, want %q", tc.name, tc.v, err, tc.want)
		}
	}
	if v := param(t, tr, targets[0], "max_rpcs_in_flight"); v != 8 {
		t.Errorf("a refused value changed the parameter: %d", v)
	}
	if _, err := (Lustre{Root: t.TempDir()}).Targets(); !errors.Is(err, ErrNoLustre) || !strings.Contains(err.Error(), "Lustre client") {
		t.Errorf("no tree: %v", err)
	}
}

// A parameter under /sys with rpc_stats under /proc or debugfs, or all
// under /proc: every file is found.
func TestLustreLayouts(t *testing.T) {
	for _, lay := range []lustretest.Layout{lustretest.Layout215, lustretest.Layout212, lustretest.LayoutProc} {
		t.Run(lay.RPCStats, func(t *testing.T) {
			tr, err := lustretest.New(t.TempDir(), 2, lay, lustretest.Model{Peak: 1 << 30, App: 1 << 30, BestPages: 256, BestInFlight: 8})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Step(1e9); err != nil {
				t.Fatal(err)
			}
			l := Lustre{Root: tr.Root}
			targets, err := l.Targets()
			if err != nil || len(targets) != 2 {
				t.Fatalf("targets %v, %v", targets, err)
			}
			for _, v := range l.Read(targets[1]) {
				if v.Err != nil {
					t.Errorf("%s: %v", v.Name, v.Err)
				}
			}
			st, path, err := l.ReadRPCStats(targets[1])
			if err != nil || !strings.Contains(path, lay.RPCStats) {
				t.Fatalf("rpc_stats at %s: %v", path, err)
			}
			if _, w := st.Count(); w == 0 {
				t.Errorf("no write RPCs counted in %s", path)
			}
		})
	}
}

// A parameter that is not a number, or not there, is reported, not
// dropped.
func TestLustreReadReportsBadParameters(t *testing.T) {
	l, tr := fakeClient(t, 1)
	tg := tr.Targets()[0]
	dir := filepath.Join(tr.Root, tr.Layout.Params, tg)
	os.WriteFile(filepath.Join(dir, "max_dirty_mb"), []byte("1.500\n"), 0o644)
	os.Remove(filepath.Join(dir, "max_rpcs_in_flight"))
	got := map[string]string{}
	for _, v := range l.Read(tg) {
		if v.Err != nil {
			got[v.Name] = v.Err.Error()
		} else {
			got[v.Name] = fmt.Sprint(v.Value)
		}
	}
	if len(got) != len(tune.LustreParams()) || got["max_pages_per_rpc"] != "256" ||
		!strings.Contains(got["max_dirty_mb"], `"1.500", not a whole number`) ||
		!strings.Contains(got["max_rpcs_in_flight"], "not found") {
		t.Errorf("read %v", got)
	}
}

// SetAll writes every value or none: a write that fails on the third
// target after two succeeded leaves all three as they were, and says so.
func TestLustreSetAllRollsBack(t *testing.T) {
	l, tr := fakeClient(t, 3)
	targets := tr.Targets()
	// The kernel refuses writes to /proc/self/oom_score, even root's, as
	// Lustre refuses a value it does not take: the last target's
	// max_dirty_mb is one.
	bad := filepath.Join(tr.Root, tr.Layout.Params, targets[2], "max_dirty_mb")
	os.Remove(bad)
	if err := os.Symlink("/proc/self/oom_score", bad); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(targets[2], "max_dirty_mb"); err != nil {
		t.Skipf("/proc/self/oom_score unreadable here: %v", err)
	}
	var ws []LustreWrite
	for _, tg := range targets {
		ws = append(ws, LustreWrite{tg, "max_rpcs_in_flight", 32}, LustreWrite{tg, "max_dirty_mb", 64})
	}
	_, err := l.SetAll(ws)
	var se *SetError
	if !errors.As(err, &se) || se.Failed.Target != targets[2] || len(se.RolledBack) != 5 || len(se.Stuck) != 0 {
		t.Fatalf("SetAll: %v, want a SetError on %s with 5 writes rolled back", err, targets[2])
	}
	if !strings.Contains(err.Error(), targets[0]+" max_rpcs_in_flight put back to 8") {
		t.Errorf("error does not say what was put back: %v", err)
	}
	for _, tg := range targets {
		if v := param(t, tr, tg, "max_rpcs_in_flight"); v != 8 {
			t.Errorf("%s max_rpcs_in_flight %d after a refused SetAll, want 8", tg, v)
		}
		if tg != targets[2] {
			if v := param(t, tr, tg, "max_dirty_mb"); v != 32 {
				t.Errorf("%s max_dirty_mb %d after a refused SetAll, want 32", tg, v)
			}
		}
	}
	// An out-of-range value anywhere: nothing written at all.
	if _, err := l.SetAll([]LustreWrite{{targets[0], "max_rpcs_in_flight", 16}, {targets[1], "max_rpcs_in_flight", 9999}}); err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Errorf("out of range: %v", err)
	}
	if v := param(t, tr, targets[0], "max_rpcs_in_flight"); v != 8 {
		t.Errorf("an out-of-range value elsewhere let %d through", v)
	}
}

// When a rollback fails too, the error names which target holds which
// value.
func TestLustreSetAllReportsAFailedRollback(t *testing.T) {
	l, tr := fakeClient(t, 3)
	targets := tr.Targets()
	writes := 0
	l.write = func(path string, v int) error {
		writes++
		switch {
		case strings.Contains(path, targets[2]):
			return errors.New("numerical result out of range")
		case writes > 2 && strings.Contains(path, targets[0]):
			return errors.New("input/output error")
		}
		return writeParam(path, v)
	}
	var ws []LustreWrite
	for _, tg := range targets {
		ws = append(ws, LustreWrite{tg, "max_rpcs_in_flight", 32})
	}
	_, err := l.SetAll(ws)
	var se *SetError
	if !errors.As(err, &se) || len(se.Stuck) != 1 || len(se.RolledBack) != 1 {
		t.Fatalf("SetAll: %v", err)
	}
	want := "ROLLBACK FAILED: " + targets[0] + " holds max_rpcs_in_flight=32, not its old 8"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), targets[1]+" max_rpcs_in_flight put back to 8") {
		t.Errorf("error %q\nwant it to contain %q and what was put back", err, want)
	}
	if param(t, tr, targets[0], "max_rpcs_in_flight") != 32 || param(t, tr, targets[1], "max_rpcs_in_flight") != 8 {
		t.Errorf("the tree does not hold what the error says")
	}
}
