package fwdbench_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

func TestJobOf(t *testing.T) {
	for _, tt := range []struct {
		o    fwdbench.Options
		want []string // of 4 processes
	}{
		{fwdbench.Options{}, []string{"", "", "", ""}},
		{fwdbench.Options{Job: "42"}, []string{"42", "42", "42", "42"}},
		{fwdbench.Options{Jobs: 2}, []string{"bench.1", "bench.1", "bench.2", "bench.2"}},
		{fwdbench.Options{Job: "x", Jobs: 4}, []string{"x.1", "x.2", "x.3", "x.4"}},
	} {
		for proc, want := range tt.want {
			if got := fwdbench.JobOf(proc, 4, tt.o); got != want {
				t.Errorf("JobOf(%d, 4, Job %q Jobs %d) = %q, want %q", proc, tt.o.Job, tt.o.Jobs, got, want)
			}
		}
	}
}

// TestRunJobs: a run split into two jobs is counted on the forwarder half
// under each; a single job takes all the bytes; a direct run refuses jobs.
func TestRunJobs(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Registerer: reg})
	c := dial(t, d.Addr())
	p := workload.Pattern{Processes: 4, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 16 << 10, TotalBytes: 1 << 20}
	ctx := context.Background()
	if _, err := fwdbench.Run(ctx, c, p, fwdbench.Options{Jobs: 2, NoVerify: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := fwdbench.Run(ctx, c, p, fwdbench.Options{Job: "solo", NoVerify: true, Dir: "b2"}); err != nil {
		t.Fatal(err)
	}
	for job, want := range map[string]float64{"bench.1": 1 << 19, "bench.2": 1 << 19, "solo": 1 << 20} {
		if got := fwdtest.Metric(t, reg, "adaptio_fwd_job_bytes_total", "job", job, "op", "write"); got != want {
			t.Errorf("bytes written by job %s = %.0f, want %.0f", job, got, want)
		}
	}
	if _, err := fwdbench.Run(ctx, c, p, fwdbench.Options{Jobs: 5}); err == nil {
		t.Error("5 jobs for 4 processes: no error")
	}
	if _, err := fwdbench.RunDirect(ctx, t.TempDir(), p, fwdbench.Options{Job: "x"}); !errors.Is(err, fwdbench.ErrJobsDirect) {
		t.Errorf("direct run with a job: %v, want ErrJobsDirect", err)
	}
}
