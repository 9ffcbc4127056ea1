package summary_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/darshan/internal/testlogs"
	"github.com/adaptio/adaptio/darshan/summary"
	"github.com/adaptio/adaptio/internal/datadir"
)

var logsDir = datadir.Path("darshan")

// open opens a log of the shared data set, or skips the test when the set
// is not beside the repository.
func open(t *testing.T, path string) *darshan.Log { return testlogs.Open(t, path) }

// iorPattern is the pattern an IOR command line asks for: -F a file per
// process; on a shared file -z random offsets, more than one segment (-s)
// of one transfer per block 1D-strided, else contiguous blocks.
func iorPattern(cmd string) (summary.Pattern, string) {
	f := strings.Fields(cmd)
	arg := func(flag string) string {
		for i, a := range f {
			if a == flag && i+1 < len(f) {
				return f[i+1]
			}
		}
		return ""
	}
	has := func(flag string) bool { return strings.Contains(" "+cmd+" ", " "+flag+" ") }
	op := "read"
	if has("-w") {
		op = "write"
	}
	switch {
	case has("-F"):
		return summary.FPP, op
	case has("-z"):
		return summary.Random, op
	case arg("-s") != "" && arg("-s") != "1" && arg("-b") == arg("-t"):
		return summary.SS, op
	}
	return summary.SC, op
}

// The IOR runs whose command lines are in their logs are labelled as the
// command lines imply.
func TestIORLogsLabelledAsTheirCommandLines(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(logsDir, "ior-cmdline-labelled", "*.darshan"))
	if len(logs) == 0 {
		t.Skipf("no IOR logs in %s (the shared data set is not beside the repository)", logsDir)
	}
	for _, p := range logs {
		l := open(t, p)
		want, op := iorPattern(l.Exe)
		s, err := summary.Summarize(l)
		if err != nil {
			t.Fatal(err)
		}
		var data []summary.File
		for _, f := range s.Files {
			if strings.Contains(f.Name, "testfile") {
				data = append(data, f)
			}
		}
		if len(data) != 1 {
			t.Fatalf("%s: %d IOR test files, want 1", filepath.Base(p), len(data))
		}
		got := data[0].Write
		if op == "read" {
			got = data[0].Read
		}
		if got.Pattern != want {
			t.Errorf("%s (%s): %s %s, want %s (%s)", filepath.Base(p), l.Exe[strings.Index(l.Exe, " -a"):], op, got.Pattern, want, got.Why)
		}
	}
}

// With DXT, the job's seconds are labelled by the Council's detection
// model. mpi-io-test (32 ranks, one shared file; in iteration i rank r
// writes, then reads, one 16 MiB block at (32 i + r) x 16 MiB) is a shared
// file: its seconds are labelled SC or SS (a second holds about one block
// per rank: contiguous blocks; across iterations each rank strides by 32
// blocks), and its counters, which span the iterations, say 1D-strided.
func TestDXTSecondsLabelledByTheCouncilsModel(t *testing.T) {
	p := filepath.Join(logsDir, "mpi_io_test_with_dxt", "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan")
	l := open(t, p)
	s, err := summary.Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Seconds) == 0 || len(s.Phases) == 0 {
		t.Fatalf("%d seconds, %d phases from a DXT log", len(s.Seconds), len(s.Phases))
	}
	var shared, all int64
	for _, sec := range s.Seconds {
		all += sec.Bytes
		if c := sec.Class.String(); c == "SC" || c == "SS" {
			shared += sec.Bytes
		}
	}
	if float64(shared) < 0.9*float64(all) {
		t.Errorf("%.0f%% of the bytes in seconds labelled SC or SS, want >= 90%%: %+v", 100*float64(shared)/float64(all), s.Phases)
	}
	if f := s.Files[0]; f.Write.Pattern != summary.SS || f.Read.Pattern != summary.SS {
		t.Errorf("the shared file from counters: write %s (%s), read %s (%s), want SS", f.Write.Pattern, f.Write.Why, f.Read.Pattern, f.Read.Why)
	}
	// Per rank, from the trace: each of the 32 ranks strides through the
	// shared file, writing and reading.
	if len(s.Ranks) != 32 {
		t.Fatalf("%d ranks from the trace, want 32", len(s.Ranks))
	}
	for _, r := range s.Ranks {
		if r.Write.Pattern != summary.SS || r.Read.Pattern != summary.SS {
			t.Errorf("rank %d: write %s %+v, read %s %+v; want SS", r.Rank, r.Write.Pattern, r.Write, r.Read.Pattern, r.Read)
		}
	}
}

// The workload of an IOR log is the run its command line describes: 256
// processes, 1 KiB 1D-strided writes to one file, its bytes capped.
func TestWorkloadFromCounters(t *testing.T) {
	p := filepath.Join(logsDir, "ior-cmdline-labelled", "dbin_ior_id66186370-3983_1-22-81594-8524346896066396999_1.darshan")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%v (the shared data set is not beside the repository)", err)
	}
	s, err := summary.Summarize(open(t, p))
	if err != nil {
		t.Fatal(err)
	}
	pats, err := s.Workload(64<<20, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if len(pats) != 1 || pats[0].String() != "256p-shared-strided-write-1k-64m" {
		t.Fatalf("workload %v, want one 256p-shared-strided-write-1k-64m", pats)
	}
	if pats, _ := s.Workload(64<<20, 16); pats[0].Processes != 16 {
		t.Errorf("max processes 16: %d", pats[0].Processes)
	}
}
