package lustre

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/tune/lustretest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/rpc_stats")

// rpc_stats in the formats of Lustre's clients (2.12: a secs.usecs
// snapshot; 2.15: start and elapsed times added; nothing sent yet) parse
// to the golden values.
func TestParseRPCStatsGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/rpc_stats/*.txt")
	if len(files) < 3 {
		t.Fatalf("golden inputs: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseRPCStats(b)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(s, "", "  ")
			golden := strings.TrimSuffix(f, ".txt") + ".golden.json"
			if *update {
				os.WriteFile(golden, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run Golden ./tune -update writes it)", err)
			}
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Errorf("parsed %s:\n%s\nwant\n%s", f, got, want)
			}
		})
	}
}

func TestParseRPCStatsFigures(t *testing.T) {
	b, _ := os.ReadFile("testdata/rpc_stats/lustre-2.12.txt")
	s, err := ParseRPCStats(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.ReadInFlight != 2 || s.WriteInFlight != 7 || s.PendingWritePages != 1536 {
		t.Errorf("in flight %d/%d, pending writes %d; want 2/7, 1536", s.ReadInFlight, s.WriteInFlight, s.PendingWritePages)
	}
	r, w := s.Count()
	rp, wp := s.Pages()
	if r != 400 || w != 1200 || rp != 4+396*256 || wp != 1200*256 {
		t.Errorf("RPCs %d/%d, pages %d/%d", r, w, rp, wp)
	}
	if last := s.InFlight[len(s.InFlight)-1]; last != (HistRow{8, 100, 1100}) || len(s.InFlight) != 9 {
		t.Errorf("in-flight histogram %v", s.InFlight)
	}
}

func TestParseRPCStatsErrors(t *testing.T) {
	b, _ := os.ReadFile("testdata/rpc_stats/lustre-2.12.txt")
	good := string(b)
	for _, tt := range []struct{ name, from, to, want string }{
		{"count", "256:\t\t       396", "256:\t\t       x", "line 17"},
		{"no bar", "   |       1200 100 100", "          1200 100 100", "line 17"},
		{"repeated bucket", "128:\t\t", "256:\t\t", "line 17"},
		{"header", "write RPCs in flight: 7", "write RPCs in flight: -7", "line 3"},
		{"percent", "396  99 100", "396  99 101", "line 17"},
	} {
		in := strings.Replace(good, tt.from, tt.to, 1)
		if in == good {
			t.Fatalf("%s: %q not in the input", tt.name, tt.from)
		}
		if _, err := ParseRPCStats([]byte(in)); !errors.Is(err, ErrRPCStats) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrRPCStats naming %s", tt.name, err, tt.want)
		}
	}
}

// What the moving tree writes (Lustre's printf formats) parses back to
// its counts.
func TestParseRPCStatsOfTheMovingTree(t *testing.T) {
	var b bytes.Buffer
	lustretest.FormatRPCStats(&b, 1, 8, 8192, 3, [][2]int64{{1, 0}, {0, 0}, {0, 0}, {0, 7}}, [][2]int64{{0, 0}, {1, 2}, {0, 5}})
	s, err := ParseRPCStats(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := RPCStats{ReadInFlight: 1, WriteInFlight: 8, PendingWritePages: 8192, PendingReadPages: 3,
		PagesPerRPC: []HistRow{{1, 1, 0}, {2, 0, 0}, {4, 0, 0}, {8, 0, 7}},
		InFlight:    []HistRow{{0, 0, 0}, {1, 1, 2}, {2, 0, 5}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("parsed %+v\nwant %+v", s, want)
	}
}

// FuzzParseRPCStats: any input parses or is refused with ErrRPCStats,
// never panics; what parses has non-negative counts, buckets in order,
// and whole pages (no overflow).
func FuzzParseRPCStats(f *testing.F) {
	files, _ := filepath.Glob("testdata/rpc_stats/*.txt")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("pages per rpc\n1: 1 1 1 | 1 1 1\n"))
	f.Add([]byte("rpcs in flight\n0:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseRPCStats(b)
		if err != nil {
			if !errors.Is(err, ErrRPCStats) {
				t.Fatalf("error %v is not ErrRPCStats", err)
			}
			return
		}
		for _, h := range [][]HistRow{s.PagesPerRPC, s.InFlight} {
			for i, r := range h {
				if r.Reads < 0 || r.Writes < 0 || i > 0 && r.Bucket <= h[i-1].Bucket {
					t.Fatalf("row %d of %v", i, h)
				}
			}
		}
		if rp, wp := s.Pages(); rp < 0 || wp < 0 {
			t.Fatalf("pages %d, %d", rp, wp)
		}
	})
}
