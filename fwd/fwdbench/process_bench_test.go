package fwdbench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/internal/testproc"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// daemonEnv, set in the environment, makes the test binary run a
// forwarding daemon instead of the tests (serveDaemon):
// BenchmarkCompareProcesses runs the daemon in a process of its own, as it
// is deployed, so that it shares no Go scheduler with the clients.
const daemonEnv = "ADAPTIO_BENCH_TEST_DAEMON"

func TestMain(m *testing.M) {
	testproc.Serve(daemonEnv, serveDaemon)
	os.Exit(m.Run())
}

// serveDaemon starts a daemon configured as adaptio forward configures one
// with --scheduler fifo: a posix backend on dir/backend (64 KiB stripes over
// 4 data servers), the default number of workers, a Unix socket at
// dir/fwd.sock, and Prometheus metrics with the process collector on a
// free port, whose URL it publishes.
func serveDaemon(dir string) (string, func(), error) {
	root := filepath.Join(dir, "backend")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, err
	}
	be, err := posix.New(root, layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		return "", nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d, err := fwd.New(fwd.Options{Backend: be, Listen: []string{"unix:" + filepath.Join(dir, "fwd.sock")}, Scheduler: "fifo",
		MetricsAddr: "127.0.0.1:0", Registerer: reg})
	if err == nil {
		err = d.Start()
	}
	if err != nil {
		be.Close()
		return "", nil, err
	}
	return "http://" + d.MetricsAddr() + "/metrics", func() { d.Shutdown(); be.Close() }, nil
}

// startDaemonProcess runs serveDaemon in a child process (this test binary)
// in a fresh directory under parent and returns the daemon's address and
// its /metrics URL; the child is stopped when the benchmark ends.
func startDaemonProcess(b *testing.B, parent string) (addr, metricsURL string) {
	b.Helper()
	dir, err := os.MkdirTemp(parent, "daemon-")
	if err != nil {
		b.Fatal(err)
	}
	metricsURL = testproc.Start(b, daemonEnv, dir, "the forwarding daemon")
	return "unix:" + filepath.Join(dir, "fwd.sock"), metricsURL
}

// BenchmarkCompareProcesses measures the forwarder as it is deployed: the
// daemon in a process of its own (this test binary in daemon mode; see
// serveDaemon) on a posix backend on tmpfs, and 16 benchmark processes
// (goroutines of this process, each with its file) through the shared-memory
// transport, against the same pattern run with pread/pwrite directly on the
// same file system: fwdbench.Compare, the code of adaptio bench --compare,
// with one round (a forwarded and a direct run, alternating which goes
// first) per iteration. content=generated: every request's bytes are
// generated and every byte read back is checked, in both runs, as by an
// application or IOR's verification (adaptio bench's default);
// content=reused: one buffer filled once and the I/O alone (--no-fill).
// Reported, as medians over the rounds: bandwidth forwarded over direct,
// and CPU per GiB direct over forwarded (this process's and the daemon's,
// read from its /metrics), per phase; the largest share of the machine's
// CPU time the hypervisor stole in a phase (Phase.Steal); and, when some
// rounds were noisy (fwdbench.NoisySteal), the median ratio of the others.
func BenchmarkCompareProcesses(b *testing.B) {
	for _, req := range []int64{1 << 20, 32 << 10} {
		for _, content := range []string{"generated", "reused"} {
			b.Run(fmt.Sprintf("req=%dKiB/content=%s", req>>10, content), func(b *testing.B) {
				compareProcesses(b, req, content == "reused")
			})
		}
	}
}

func compareProcesses(b *testing.B, req int64, noFill bool) {
	parent := fwdtest.MemDir(b)
	addr, metricsURL := startDaemonProcess(b, parent)
	c, err := client.Dial(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	directDir := filepath.Join(parent, "direct")
	if err := os.Mkdir(directDir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := workload.Pattern{Processes: 16, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous,
		Op: rw.Write, RequestSize: req, TotalBytes: 1 << 30}
	o := fwdbench.Options{NoFill: noFill, ForwarderCPU: fwdbench.MetricsCPU(metricsURL)}
	b.ResetTimer()
	cmp, err := fwdbench.Compare(context.Background(), c, directDir, p, o, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	for _, read := range []bool{false, true} {
		op := "write"
		if read {
			op = "read"
		}
		b.ReportMetric(fwdbench.Median(cmp.Ratios(read)), "fwd/direct-"+op)
		if quiet := cmp.QuietRatios(read, fwdbench.NoisySteal); len(quiet) > 0 && len(quiet) < len(cmp.Rounds) {
			// Some rounds were noisy: the median of the others too.
			b.ReportMetric(fwdbench.Median(quiet), "fwd/direct-"+op+"-quiet")
		}
		if cpu := cmp.CPURatios(read); len(cpu) > 0 {
			b.ReportMetric(fwdbench.Median(cpu), "cpu-direct/fwd-"+op)
		}
	}
	// The most CPU time the hypervisor stole in any phase: read the
	// ratios of a run with much of it as the host's noise (fwdbench.NoisySteal).
	steal := 0.0
	for _, r := range cmp.Rounds {
		for _, ph := range []fwdbench.Phase{r.Forwarded.Write, r.Forwarded.Read, r.Direct.Write, r.Direct.Read} {
			steal = max(steal, ph.Steal)
		}
	}
	b.ReportMetric(100*steal, "steal-max-%")
}
