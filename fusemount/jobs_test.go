package fusemount_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

// TestJobsFromCallers: processes of two Slurm jobs (SLURM_JOB_ID in their
// environment) and one of a PBS job write and read through the mount; the
// forwarder's per-job metrics count each job's bytes, and a process with
// no job counts as unknown. With NoJobs all count as unknown.
func TestJobsFromCallers(t *testing.T) {
	dd, err := exec.LookPath("dd")
	if err != nil {
		t.Skip("dd not installed")
	}
	run := func(t *testing.T, mnt string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command(dd, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dd %v with %v: %v\n%s", args, env, err, out)
		}
	}
	writes := []struct {
		env   []string
		file  string
		count int // 64 KiB blocks
		label string
	}{
		{[]string{"SLURM_JOB_ID=4711"}, "a", 3, "4711"},
		{[]string{"SLURM_JOB_ID=4712"}, "b", 5, "4712"},
		{[]string{"PBS_JOBID=99.server", "OTHER=1"}, "c", 2, "99.server"},
		{[]string{"SLURM_JOB_ID=4711"}, "d", 4, "4711"}, // a second process of job 4711
		{nil, "e", 1, fwd.UnknownJob},
	}
	for _, tc := range []struct {
		name   string
		noJobs bool
	}{{"lookup", false}, {"nojobs", true}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			mnt, _ := mountedClient(t, t.TempDir(), fwd.Options{Registerer: reg}, fusemount.Options{NoJobs: tc.noJobs, WriteBehind: -1})
			want := map[string]float64{}
			for _, w := range writes {
				run(t, mnt, w.env, "if=/dev/zero", "of="+filepath.Join(mnt, w.file), "bs=64k", "count="+strconv.Itoa(w.count), "oflag=direct")
				label := w.label
				if tc.noJobs {
					label = fwd.UnknownJob
				}
				want[label] += float64(w.count << 16)
			}
			for label, n := range want {
				if got := fwdtest.Metric(t, reg, "adaptio_fwd_job_bytes_total", "job", label, "op", "write"); got != n {
					t.Errorf("adaptio_fwd_job_bytes_total{job=%q,op=write} = %.0f, want %.0f", label, got, n)
				}
			}
			// A reader of job 4712 reads a file job 4711 wrote: its bytes are its own job's.
			run(t, mnt, []string{"SLURM_JOB_ID=4712"}, "if="+filepath.Join(mnt, "a"), "of=/dev/null", "bs=64k", "iflag=direct")
			label := "4712"
			if tc.noJobs {
				label = fwd.UnknownJob
			}
			if got := fwdtest.Metric(t, reg, "adaptio_fwd_job_bytes_total", "job", label, "op", "read"); got != 3<<16 {
				t.Errorf("adaptio_fwd_job_bytes_total{job=%q,op=read} = %.0f, want %d", label, got, 3<<16)
			}
		})
	}
}
