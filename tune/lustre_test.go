package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rpcStats is an osc rpc_stats file in Lustre's format.
const rpcStats = `snapshot_time:         1700000000.123456789 (secs.nsecs)
read RPCs in flight:  2
write RPCs in flight: 7
pending write pages:  1536
pending read pages:   0

			read			write
pages per rpc         rpcs   % cum % |       rpcs   % cum %
1:		         4   1   1   |          0   0   0
256:		       396  99 100   |       1200 100 100

			read			write
rpcs in flight        rpcs   % cum % |       rpcs   % cum %
1:		       300  75  75   |        100   8   8
8:		       100  25 100   |       1100  92 100

			read			write
offset                rpcs   % cum % |       rpcs   % cum %
0:		       400 100 100   |       1200 100 100
`

// fakeClient lays out a Lustre client's parameter tree under a directory:
// two OSC targets with Lustre's default values and rpc_stats.
func fakeClient(t *testing.T) (Lustre, []string) {
	root := t.TempDir()
	targets := []string{"lustre-OST0000-osc-ffff88", "lustre-OST0001-osc-ffff88"}
	for _, tg := range targets {
		dir := filepath.Join(root, "sys/fs/lustre/osc", tg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"max_pages_per_rpc": "256\n", "max_rpcs_in_flight": "8\n", "max_dirty_mb": "32\n", "rpc_stats": rpcStats} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Lustre{Root: root}, targets
}

func TestLustreReadsAndSetsWithinRange(t *testing.T) {
	l, targets := fakeClient(t)
	got, _, err := l.Targets()
	if err != nil || len(got) != 2 {
		t.Fatalf("targets %v, %v", got, err)
	}
	if v, err := l.Get(targets[0], "max_pages_per_rpc"); err != nil || v != 256 {
		t.Fatalf("max_pages_per_rpc %d, %v", v, err)
	}
	if err := l.Set(targets[1], "max_rpcs_in_flight", 32); err != nil {
		t.Fatal(err)
	}
	if v, _ := l.Get(targets[1], "max_rpcs_in_flight"); v != 32 {
		t.Errorf("after setting 32: %d", v)
	}
	for _, tc := range []struct {
		name string
		v    int
		want string
	}{
		{"max_rpcs_in_flight", 512, "outside Lustre's range"},
		{"max_pages_per_rpc", 0, "outside Lustre's range"},
		{"checksums", 1, "unknown Lustre parameter"},
	} {
		if err := l.Set(targets[0], tc.name, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("set %s=%d: %v, want %q", tc.name, tc.v, err, tc.want)
		}
	}
	if v, _ := l.Get(targets[0], "max_rpcs_in_flight"); v != 8 {
		t.Errorf("a refused value changed the parameter: %d", v)
	}
	if _, _, err := (Lustre{Root: t.TempDir()}).Targets(); err == nil || !strings.Contains(err.Error(), "Lustre client") {
		t.Errorf("no tree: %v", err)
	}
}

func TestLustreRPCStatsParsed(t *testing.T) {
	l, targets := fakeClient(t)
	s, err := l.ReadRPCStats(targets[0])
	if err != nil {
		t.Fatal(err)
	}
	if s.ReadInFlight != 2 || s.WriteInFlight != 7 || s.PendingWrites != 1536 {
		t.Errorf("in flight %d/%d, pending writes %d; want 2/7, 1536", s.ReadInFlight, s.WriteInFlight, s.PendingWrites)
	}
	if s.PagesPerRPC[256] != [2]int64{396, 1200} || s.InFlight[8] != [2]int64{100, 1100} || len(s.InFlight) != 2 {
		t.Errorf("histograms %v, %v", s.PagesPerRPC, s.InFlight)
	}
	bad := strings.Replace(rpcStats, "256:\t\t       396  99 100   |", "256:\t\t       x  99 100   |", 1)
	os.WriteFile(filepath.Join(l.Root, "sys/fs/lustre/osc", targets[0], "rpc_stats"), []byte(bad), 0o644)
	if _, err := l.ReadRPCStats(targets[0]); err == nil || !strings.Contains(err.Error(), "line 10") {
		t.Errorf("a malformed row: %v, want an error naming line 10", err)
	}
}
