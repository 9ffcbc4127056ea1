package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/darshan/replay"
	"github.com/adaptio/adaptio/darshan/summary"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// fitLog fits the default model to one run of a shared log's workload
// (its DXT trace, or its counters' patterns) on 4 I/O nodes.
func fitLog(t *testing.T, rel string, dxt bool) replay.Fitted {
	t.Helper()
	path := filepath.Join(logsDir, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared Darshan log absent (%s): %v", path, err)
	}
	l, c, err := darshan.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := sim.Config{IONodes: 4, Scheduler: "fifo"}
	var tr replay.Traced
	if dxt {
		trace, info, err := replay.FromDXT(l, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer trace.Close()
		cfg.Traces = []workload.Trace{trace}
		cfg.MaxTime = sim.DefaultMaxTime + info.Think
		tr = replay.TracedDXT(info)
	} else {
		s, err := summary.Summarize(l)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Patterns, err = s.Workload(1<<30, 512); err != nil {
			t.Fatal(err)
		}
		if tr, err = replay.TracedCounters(l); err != nil {
			t.Fatal(err)
		}
	}
	f, err := replay.Fit(context.Background(), cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: traced %s in %v (%s); unfitted %v, fitted x %.3g: %v against %v (%.2fx, %d runs)",
		rel, sizeOf(tr.Bytes), tr.Time, tr.Source, f.Unfitted, f.Scale, f.Simulated, f.Target, f.Ratio(), f.Runs)
	return f
}

func sizeOf(b int64) string { return fmt.Sprintf("%d bytes", b) }

// The default model simulates mpi-io-test's traced loop about 4 times
// slower than its trace shows (57 s against 13.6 s) and a small HDF5 IOR
// run (DXT) and the release logs' mpi-io-test (counters) slower still;
// fitted to each log's own bandwidth, one run of the workload lands
// within FitTolerance of the traced time.
func TestFitReproducesTracedTime(t *testing.T) {
	for _, c := range []struct {
		log string
		dxt bool
	}{
		{"mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan", true},
		{"pydarshan-samples/ior_hdf5_example.darshan", true},
		{"release_logs/mpi-io-test-x86_64-3.4.7.darshan", false},
	} {
		t.Run(filepath.Base(filepath.Dir(c.log)), func(t *testing.T) {
			f := fitLog(t, c.log, c.dxt)
			if !f.Trusted() {
				t.Errorf("fitted model: %v simulated against %v traced (%.2fx), want within %v", f.Simulated, f.Target, f.Ratio(), replay.FitTolerance)
			}
			if r := f.Unfitted.Seconds() / f.Target.Seconds(); r < replay.FitTolerance && r > 1/replay.FitTolerance {
				t.Logf("the unfitted model was already within %v (%.2fx)", replay.FitTolerance, r)
			}
		})
	}
}

// A log that shows no I/O time cannot be fitted: the error says so.
func TestFitRefusesNoTime(t *testing.T) {
	if _, err := replay.Fit(context.Background(), sim.Config{}, replay.Traced{Bytes: 10}); err == nil {
		t.Fatal("a fit to zero time: no error")
	}
}
