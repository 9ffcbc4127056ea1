package fusemount

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
)

func TestEnvJob(t *testing.T) {
	names := []string{"MY_JOB", "SLURM_JOB_ID", "PBS_JOBID"}
	for _, tt := range []struct {
		name, environ, want string
	}{
		{"none", "HOME=/root\x00PATH=/bin\x00", ""},
		{"slurm", "HOME=/root\x00SLURM_JOB_ID=123\x00", "123"},
		{"order of names, not of the environment", "PBS_JOBID=7.pbs\x00SLURM_JOB_ID=123\x00", "123"},
		{"first name wins", "SLURM_JOB_ID=123\x00MY_JOB=mine\x00", "mine"},
		{"empty value skipped", "SLURM_JOB_ID=\x00PBS_JOBID=7.pbs", "7.pbs"},
		{"prefix is not the name", "SLURM_JOB_ID_X=1\x00XSLURM_JOB_ID=2\x00", ""},
		{"value with =", "MY_JOB=a=b\x00", "a=b"},
		{"no =", "SLURM_JOB_ID\x00", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := envJob([]byte(tt.environ), names); got != tt.want {
				t.Errorf("envJob(%q) = %q, want %q", tt.environ, got, tt.want)
			}
		})
	}
}

func TestCgroupJob(t *testing.T) {
	for _, tt := range []struct {
		name, cgroup, want string
	}{
		{"v2 outside slurm", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"v2 slurm", "0::/system.slice/slurmstepd.scope/job_4711/step_0/user/task_0\n", "4711"},
		{"v1 slurm", "12:memory:/slurm/uid_1000/job_99/step_batch\n11:cpuset:/slurm/uid_1000/job_99/step_batch/task_0\n", "99"},
		{"job_ not under slurm", "0::/docker/job_5\n", ""},
		{"not a number", "0::/slurm/uid_1/job_x1/step_0\n", ""},
		{"job_ alone", "0::/slurm/job_/step_0\n", ""},
		{"garbage", "slurm job_1", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cgroupJob([]byte(tt.cgroup)); got != tt.want {
				t.Errorf("cgroupJob(%q) = %q, want %q", tt.cgroup, got, tt.want)
			}
		})
	}
}

func TestStatStart(t *testing.T) {
	line := "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615\n"
	got, err := statStart([]byte(line))
	if err != nil || got != 987654 {
		t.Errorf("statStart = %d, %v; want 987654", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"} {
		if _, err := statStart([]byte(bad)); err == nil {
			t.Errorf("statStart(%q): no error", bad)
		}
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	if s, err := statStart(b); err != nil || s == 0 {
		t.Errorf("statStart(/proc/self/stat) = %d, %v", s, err)
	}
}

// FuzzEnvJob: a process's environment and cgroup are its own to write;
// the parsers never panic and return only what the input holds.
func FuzzEnvJob(f *testing.F) {
	f.Add([]byte("SLURM_JOB_ID=1\x00"), []byte("0::/slurm/job_1\n"), []byte("1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"))
	f.Add([]byte("=\x00\x00=="), []byte(":::\n::"), []byte(")))"))
	f.Fuzz(func(t *testing.T, environ, cgroup, stat []byte) {
		if j := envJob(environ, DefaultJobEnv); j != "" && !strings.Contains(string(environ), "="+j) {
			t.Errorf("envJob = %q, not a value of %q", j, environ)
		}
		if j := cgroupJob(cgroup); j != "" && !strings.Contains(string(cgroup), "job_"+j) {
			t.Errorf("cgroupJob = %q, not in %q", j, cgroup)
		}
		_, _ = statStart(stat)
	})
}

// TestJobLookupForgetsEnded: the lookup remembers processes by PID and
// start time; once full it forgets those that ended and unbinds them on
// the forwarder, and a remembered PID whose start time changed (a reused
// PID) is looked up again.
func TestJobLookupForgetsEnded(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	reg := prometheus.NewRegistry()
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Registerer: reg})
	c, err := client.Dial(d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := newJobLookup(c, nil, slog.New(slog.DiscardHandler))
	l.max = 2
	start := func(job string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = []string{"SLURM_JOB_ID=" + job}
		if err := cmd.Start(); err != nil {
			t.Skipf("sleep: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	pid := func(c *exec.Cmd) uint32 { return uint32(c.Process.Pid) }
	a, b := start("1"), start("2")
	l.bind(pid(a))
	l.bind(pid(b))
	if got := l.byPID[pid(a)].job; got != "1" {
		t.Errorf("job of a = %q, want 1", got)
	}
	if got := l.byPID[pid(b)].job; got != "2" {
		t.Errorf("job of b = %q, want 2", got)
	}
	a.Process.Kill()
	a.Wait()
	c3 := start("3")
	l.bind(pid(c3)) // full: a has ended and is forgotten
	if _, ok := l.byPID[pid(a)]; ok {
		t.Errorf("process a ended but is still remembered")
	}
	if len(l.byPID) != 2 || l.byPID[pid(c3)].job != "3" {
		t.Errorf("remembered %v, want b and c", l.byPID)
	}
	// A PID reused by another process: its start time differs.
	e := l.byPID[pid(b)]
	e.start--
	e.job = "stale"
	l.byPID[pid(b)] = e
	l.bind(pid(b))
	if got := l.byPID[pid(b)].job; got != "2" {
		t.Errorf("reused PID: job %q, want 2 (looked up again)", got)
	}
}
