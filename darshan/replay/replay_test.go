package replay_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/darshan/internal/testlogs"
	"github.com/adaptio/adaptio/darshan/replay"
	"github.com/adaptio/adaptio/internal/datadir"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// logsDir holds the real Darshan logs (see ../shared/data/README.md).
var logsDir = datadir.Path("darshan")

// dxtLogs lists the logs of the shared data set that have a DXT trace
// (nil when the set is not beside the repository).
func dxtLogs(tb testing.TB) []string {
	var out []string
	filepath.WalkDir(logsDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".darshan") {
			return nil
		}
		l, c, err := darshan.Open(p)
		if err != nil {
			return nil
		}
		defer c.Close()
		if _, ok := replay.Module(l); ok {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func open(t *testing.T, path string) *darshan.Log { return testlogs.Open(t, path) }

// convert converts l's trace, closed when the test ends, and reads all of
// it into memory.
func convert(t *testing.T, l *darshan.Log, o replay.Options) (*replay.Trace, *workload.Recorded, replay.Info) {
	t.Helper()
	tr, info, err := replay.FromDXT(l, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	rec, err := workload.Record(tr)
	if err != nil {
		t.Fatal(err)
	}
	return tr, rec, info
}

// traced counts a log's traced accesses and the bytes of those with bytes
// and an offset, as the reader gives them.
func traced(t *testing.T, l *darshan.Log, m darshan.Module) (accesses, replayable, bytes int64) {
	t.Helper()
	for tr, err := range l.Traces(m) {
		if err != nil {
			t.Fatal(err)
		}
		for sg, err := range tr.Segments() {
			if err != nil {
				t.Fatal(err)
			}
			accesses++
			if sg.Length > 0 && sg.Offset >= 0 {
				replayable++
				bytes += sg.Length
			}
		}
	}
	return accesses, replayable, bytes
}

// Every DXT log of the shared data set converts, and its replay on 4 I/O
// nodes finishes, moving exactly the trace's bytes in as many requests as
// it has accesses (those of no bytes left out).
func TestRealDXTLogsReplay(t *testing.T) {
	logs := dxtLogs(t)
	if len(logs) == 0 {
		t.Skipf("no DXT log in %s (the shared data set is not beside the repository)", logsDir)
	}
	for _, p := range logs {
		name, _ := filepath.Rel(logsDir, p)
		t.Run(name, func(t *testing.T) {
			l := open(t, p)
			tr, rec, info := convert(t, l, replay.Options{})
			all, replayable, bytes := traced(t, l, info.Module)
			if info.Accesses != replayable || info.Accesses+info.Skipped != all || rec.Requests() != info.Accesses {
				t.Errorf("accesses: %d replayed + %d skipped, trace %d; the log has %d, %d with bytes", info.Accesses, info.Skipped, rec.Requests(), all, replayable)
			}
			if read, written := rec.Bytes(); read != info.Read || written != info.Written || read+written != bytes {
				t.Errorf("bytes: trace %d read %d written, info %d %d, log %d", read, written, info.Read, info.Written, bytes)
			}
			res, err := sim.Run(context.Background(), sim.Config{Traces: []workload.Trace{tr}, IONodes: 4, Seed: 1}, sim.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Bytes != bytes || res.Requests != uint64(info.Accesses) {
				t.Errorf("replay moved %d bytes in %d requests, want %d in %d", res.Bytes, res.Requests, bytes, info.Accesses)
			}
			if res.Makespan < info.Think {
				t.Errorf("makespan %v, shorter than a rank's think time %v", res.Makespan, info.Think)
			}
			t.Logf("%s: %d accesses of %d ranks, %d bytes; makespan %v (traced %v)", info.Module, info.Accesses, info.Ranks, bytes, res.Makespan, info.Span)
		})
	}
}

// mpi-io-test's trace is the benchmark's loop: rank r writes 16 MiB at
// (iter*32 + r) * 16 MiB of the shared file for 4 iterations, then reads
// the same blocks back. Each rank's requests are exactly those, in that
// order, on one file (besides a small file the job also touched), and
// each waits its traced gap.
func TestMPIIOTestTraceIsTheBenchmarksLoop(t *testing.T) {
	l := open(t, filepath.Join(logsDir, "mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"))
	_, tr, info := convert(t, l, replay.Options{})
	if info.Module != darshan.DXTPOSIX || info.Processes != 32 || info.Ranks != 32 {
		t.Fatalf("info %+v: want DXT_POSIX, 32 processes and ranks", info)
	}
	for r, reqs := range tr.Procs {
		var got []workload.Request // the 16 MiB blocks, think aside
		for _, q := range reqs {
			if q.Length == 16<<20 {
				q.Think = 0
				got = append(got, q)
			}
		}
		if len(got) == 0 {
			t.Fatalf("rank %d: no 16 MiB request in %+v", r, reqs)
		}
		var want []workload.Request
		for _, op := range []rw.Op{rw.Write, rw.Read} {
			for it := range 4 {
				want = append(want, workload.Request{File: got[0].File, Offset: int64(it*32+r) * 16 << 20, Length: 16 << 20, Op: op})
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("rank %d: 16 MiB requests\n %+v\nwant\n %+v", r, got, want)
		}
	}
	if !(info.Think > time.Second) {
		t.Errorf("the most think time of a rank is %v; the job computed for seconds between its phases", info.Think)
	}
	_, tr2, info2 := convert(t, l, replay.Options{ThinkScale: 0.5})
	if d := info2.Think - info.Think/2; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("think scale 0.5: %v, want half of %v", info2.Think, info.Think)
	}
	if _, _, info3 := convert(t, l, replay.Options{NoThink: true}); info3.Think != 0 {
		t.Errorf("no think: %v", info3.Think)
	}
	if tr2.Requests() != tr.Requests() {
		t.Errorf("think scale changed the requests")
	}
}

// The one traced access of sample-dxt-simple at the MPI-IO level: a write
// of 4000 bytes at offset 0 (pydarshan's test value).
func TestSampleDXTSimpleMPIIO(t *testing.T) {
	l := open(t, filepath.Join(logsDir, "pydarshan-samples/sample-dxt-simple.darshan"))
	_, tr, info := convert(t, l, replay.Options{Module: darshan.DXTMPIIO})
	want := [][]workload.Request{{{Length: 4000, Op: rw.Write}}}
	if info.Processes != 16 || !reflect.DeepEqual(tr.Procs[:1], want) || tr.Requests() != 1 {
		t.Errorf("got %d processes, %+v; want 16, rank 0 writing 4000 bytes at 0 first thing", info.Processes, tr.Procs[:1])
	}
	if len(tr.Names) != 1 || tr.Names[0] != workload.TraceFileName(0) || info.Files[0] == "" {
		t.Errorf("files %q (log's %q)", tr.Names, info.Files)
	}
}

// The same log, options and seed replay to the same result.
func TestReplayDeterministic(t *testing.T) {
	l := open(t, filepath.Join(logsDir, "pydarshan-samples/ior_hdf5_example.darshan"))
	run := func() sim.Result {
		tr, _, _ := convert(t, l, replay.Options{})
		res, err := sim.Run(context.Background(), sim.Config{Traces: []workload.Trace{tr, tr}, IONodes: 2, Seed: 3}, sim.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if a, b := run(), run(); !reflect.DeepEqual(a, b) {
		t.Errorf("two replays differ:\n%+v\n%+v", a, b)
	}
}

// No DXT, an MPI-IO trace without offsets, too many accesses: refused,
// saying why.
func TestReplayRefusals(t *testing.T) {
	for _, tt := range []struct {
		log  string
		o    replay.Options
		want error
		says string
	}{
		{"pydarshan-samples/sample.darshan", replay.Options{}, replay.ErrNoDXT, "DXT_ENABLE_IO_TRACE"},
		{"release_logs/mpi-io-test-x86_64-3.1.6.darshan", replay.Options{Module: darshan.DXTMPIIO}, replay.ErrNoDXT, "offsets"},
		{"pydarshan-samples/dxt.darshan", replay.Options{MaxAccesses: 1000}, replay.ErrTooLarge, "more than 1000 accesses"},
		{"pydarshan-samples/dxt.darshan", replay.Options{ThinkScale: -1}, nil, "think scale -1"},
	} {
		t.Run(tt.log, func(t *testing.T) {
			l := open(t, filepath.Join(logsDir, tt.log))
			_, _, err := replay.FromDXT(l, tt.o)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("got %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
}

// FuzzFromDXT converts arbitrary bytes read as a log, seeded with the DXT
// logs of the shared data set under 64 KiB: an error or a trace whose
// every request is valid and whose bytes and counts are the info's; a
// small one replays in the simulator moving exactly its bytes.
//
//	go test -run XXX -fuzz FuzzFromDXT -fuzzminimizetime 1s ./darshan/replay
func FuzzFromDXT(f *testing.F) {
	for _, p := range dxtLogs(f) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := darshan.NewLog(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		tr, info, err := replay.FromDXT(l, replay.Options{MaxAccesses: 1 << 12, MemoryAccesses: 64})
		if err != nil {
			if !errors.Is(err, darshan.ErrFormat) && !errors.Is(err, replay.ErrNoDXT) && !errors.Is(err, replay.ErrTooLarge) && !errors.Is(err, replay.ErrBadTrace) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		defer tr.Close()
		rec, err := workload.Record(tr)
		if err != nil {
			t.Fatal(err)
		}
		for p, reqs := range rec.Procs {
			for i, r := range reqs {
				if err := r.Validate(len(rec.Names)); err != nil {
					t.Fatalf("process %d, request %d: %v", p, i, err)
				}
			}
		}
		read, written := rec.Bytes()
		if read != info.Read || written != info.Written || rec.Requests() != info.Accesses || len(rec.Names) != len(info.Files) || info.Think < 0 {
			t.Fatalf("trace and info disagree: %d/%d bytes, %d requests, %d files; info %+v", read, written, rec.Requests(), len(rec.Names), info)
		}
		if info.Accesses > 64 || read+written > 8<<20 || info.Think > time.Hour || len(rec.Procs) > 256 {
			return
		}
		res, err := sim.Run(context.Background(), sim.Config{Traces: []workload.Trace{tr}, IONodes: 2}, sim.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes != read+written {
			t.Fatalf("replay moved %d bytes, want %d", res.Bytes, read+written)
		}
	})
}

// A trace too large for memory, sorted in spilled runs and read back from
// a temporary file, replays as the same trace held in memory: the same
// requests, and the same result to the nanosecond.
func TestSpilledTraceReplaysAsInMemory(t *testing.T) {
	for _, name := range []string{"nonmpi_dxt_anonymized/nonmpi_dxt_anonymized.darshan",
		"mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"} {
		t.Run(name, func(t *testing.T) {
			l := open(t, filepath.Join(logsDir, name))
			mem, memRec, memInfo := convert(t, l, replay.Options{})
			spilled, spilledRec, spilledInfo := convert(t, l, replay.Options{MemoryAccesses: 100})
			if memInfo.Spilled || !spilledInfo.Spilled {
				t.Fatalf("spilled: %v and %v, want false and true", memInfo.Spilled, spilledInfo.Spilled)
			}
			spilledInfo.Spilled = false
			if !reflect.DeepEqual(memInfo, spilledInfo) || !reflect.DeepEqual(memRec, spilledRec) {
				t.Fatalf("the spilled trace differs: info %+v, want %+v", spilledInfo, memInfo)
			}
			run := func(tr workload.Trace) sim.Result {
				res, err := sim.Run(context.Background(), sim.Config{Traces: []workload.Trace{tr, tr}, IONodes: 4, Seed: 9}, sim.Hooks{})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if a, b := run(mem), run(spilled); !reflect.DeepEqual(a, b) {
				t.Errorf("replays differ:\n memory  %+v\n spilled %+v", a, b)
			}
		})
	}
}
