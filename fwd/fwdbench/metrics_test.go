package fwdbench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/adaptio/adaptio/backend/posix"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Every phase reports this process's CPU time; a forwarded run with a probe
// on the daemon's real /metrics also reports the daemon's, and a comparison
// then gives the ratio of CPU per GiB. A probe that fails at the start of a
// phase leaves the daemon's CPU unknown instead of failing the run.
func TestCPU(t *testing.T) {
	be, err := posix.New(t.TempDir(), layout.Layout{StripeSize: 64 << 10, StripeCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	// A registry with the process collector, as adaptio forward serves.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d := fwdtest.Start(t, fwd.Options{Backend: be, Scheduler: "fifo", MetricsAddr: "127.0.0.1:0", Registerer: reg})
	c := dial(t, d.Addr())
	// Enough bytes, generated and checked, for the daemon's counter (in
	// ticks of 10 ms; here the daemon is this process) to move.
	p := workload.Pattern{Processes: 4, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 256 << 10, TotalBytes: 256 << 20}
	probe := fwdbench.MetricsCPU("http://" + d.MetricsAddr() + "/metrics")
	cmp, err := fwdbench.Compare(context.Background(), c, t.TempDir(), p, fwdbench.Options{ForwarderCPU: probe}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := cmp.Rounds[0]
	for _, ph := range []fwdbench.Phase{r.Forwarded.Write, r.Forwarded.Read, r.Direct.Write, r.Direct.Read} {
		if ph.CPU <= 0 {
			t.Errorf("%s phase: CPU %v, want > 0", ph.Op, ph.CPU)
		}
	}
	for _, ph := range []fwdbench.Phase{r.Forwarded.Write, r.Forwarded.Read} {
		if !ph.ForwarderCPUKnown || ph.ForwarderCPU <= 0 {
			t.Errorf("forwarded %s phase: daemon CPU %v (known %v), want > 0", ph.Op, ph.ForwarderCPU, ph.ForwarderCPUKnown)
		}
		if want := (ph.CPU + ph.ForwarderCPU).Seconds() / 0.25; ph.CPUPerGiB() != want {
			t.Errorf("forwarded %s phase: %v s/GiB, want %v", ph.Op, ph.CPUPerGiB(), want)
		}
	}
	if r.Direct.Write.ForwarderCPUKnown || !r.Direct.Direct || r.Forwarded.Direct {
		t.Errorf("direct run: daemon CPU known %v, Direct %v; forwarded run Direct %v", r.Direct.Write.ForwarderCPUKnown, r.Direct.Direct, r.Forwarded.Direct)
	}
	if got := cmp.CPURatios(true); len(got) != 1 || got[0] != r.Direct.Read.CPUPerGiB()/r.Forwarded.Read.CPUPerGiB() {
		t.Errorf("CPU ratios %v", got)
	}
	var out bytes.Buffer
	cmp.Print(&out)
	if !strings.Contains(out.String(), "write   cpu direct/fwd median") {
		t.Errorf("comparison output lacks the CPU ratio:\n%s", out.String())
	}

	calls := 0
	flaky := func() (time.Duration, error) {
		calls++
		if calls == 1 {
			return 0, context.DeadlineExceeded
		}
		return probe()
	}
	res, err := fwdbench.Run(context.Background(), c, p, fwdbench.Options{ForwarderCPU: flaky, NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Write.ForwarderCPUKnown {
		t.Error("the probe failed at the phase's start, yet the daemon's CPU is known")
	}
	out.Reset()
	res.Print(&out)
	if !strings.Contains(out.String(), "the forwarder's not measured") {
		t.Errorf("output does not say the forwarder's CPU is not measured:\n%s", out.String())
	}
	if cmp := (fwdbench.Comparison{Rounds: []fwdbench.Pair{{Forwarded: res, Direct: r.Direct}}}); cmp.CPURatios(false) != nil {
		t.Error("CPU ratios without the daemon's CPU")
	}
}

func TestParseCPU(t *testing.T) {
	for _, tt := range []struct {
		text string
		want time.Duration
		err  string
	}{
		{"# HELP process_cpu_seconds_total x\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n", 12500 * time.Millisecond, ""},
		{"process_cpu_seconds_total 0.01 1700000000000\n", 10 * time.Millisecond, ""},
		{"go_goroutines 3\n", 0, "no process_cpu_seconds_total"},
		{"process_cpu_seconds_total_other 3\n", 0, "no process_cpu_seconds_total"},
		{"process_cpu_seconds_total abc\n", 0, "not a CPU time"},
		{"process_cpu_seconds_total -1\n", 0, "not a CPU time"},
		{"process_cpu_seconds_total NaN\n", 0, "not a CPU time"},
		{"process_cpu_seconds_total +Inf\n", 0, "not a CPU time"},
		{"process_cpu_seconds_total 1e300\n", 0, "not a CPU time"},
		{"process_cpu_seconds_total \n", 0, "no process_cpu_seconds_total"},
	} {
		got, err := fwdbench.ParseCPU(strings.NewReader(tt.text), "u")
		if tt.err == "" && (err != nil || got != tt.want) {
			t.Errorf("%q: %v, %v; want %v", tt.text, got, err, tt.want)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, %v; want an error about %q", tt.text, got, err, tt.err)
		}
	}
}

func FuzzParseCPU(f *testing.F) {
	f.Add("process_cpu_seconds_total 1.5\n")
	f.Add("process_cpu_seconds_total NaN\n")
	f.Add("process_cpu_seconds_total 1e300\n")
	f.Fuzz(func(t *testing.T, text string) {
		if d, err := fwdbench.ParseCPU(strings.NewReader(text), "u"); err == nil && d < 0 {
			t.Fatalf("%q: negative CPU time %v", text, d)
		}
	})
}
