package fusemount

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/qos"
)

// DefaultJobEnv are the environment variables that name a process's batch
// job, in the order they are looked up: Slurm, PBS/Torque, LSF, Flux.
var DefaultJobEnv = []string{"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"}

// DefaultJobCache is how many processes the mount remembers the job of.
const DefaultJobCache = 4096

// jobLookup finds the batch job of the processes that open files through
// the mount and binds each to it on the forwarder (client.SetJob), so that
// the forwarder's QoS rules and per-job metrics count its requests under
// its job. A process's job is read once, when it first opens a file: its
// environment (/proc/PID/environ: the variables of env, in order), else
// its cgroup (/proc/PID/cgroup: a Slurm job's job_N path component). The
// processes are remembered by PID and start time, so that a PID reused by
// another process is looked up again; once max are remembered, the
// processes that have ended are forgotten and unbound.
type jobLookup struct {
	proc string // the proc file system, "/proc"
	env  []string
	max  int
	c    *client.Client
	log  *slog.Logger

	mu    sync.Mutex
	off   bool // the forwarder does not take jobs
	byPID map[uint32]procJob
}

// procJob is a remembered process: its start time (clock ticks after boot,
// /proc/PID/stat field 22) and its job ("" none).
type procJob struct {
	start uint64
	job   string
}

func newJobLookup(c *client.Client, env []string, log *slog.Logger) *jobLookup {
	if env == nil {
		env = DefaultJobEnv
	}
	return &jobLookup{proc: "/proc", env: env, max: DefaultJobCache, c: c, log: log, byPID: map[uint32]procJob{}}
}

// bind makes sure process pid is bound to its job on the forwarder before
// it reads or writes. It returns at once for a process already looked up.
func (l *jobLookup) bind(pid uint32) {
	if l == nil || pid == 0 {
		return
	}
	start, ok := l.startTime(pid)
	if !ok {
		return // gone already: it will not read or write
	}
	l.mu.Lock()
	old, known := l.byPID[pid]
	if l.off || (known && old.start == start) {
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()

	job := l.jobOf(pid)
	var ended []uint32
	l.mu.Lock()
	if !known && len(l.byPID) >= l.max {
		ended = l.sweep()
	}
	l.byPID[pid] = procJob{start: start, job: job}
	l.mu.Unlock()

	for _, p := range ended {
		l.set(p, "")
	}
	if job != "" || (known && old.job != "") { // a reused PID drops the old process's job
		l.set(pid, job)
	}
}

// sweep forgets the processes that have ended and returns those that were
// bound to a job, to be unbound. If all are alive it forgets them all
// (they stay bound; their next open looks them up again). l.mu is held.
func (l *jobLookup) sweep() (unbind []uint32) {
	for p, e := range l.byPID {
		if s, ok := l.startTime(p); ok && s == e.start {
			continue
		}
		delete(l.byPID, p)
		if e.job != "" {
			unbind = append(unbind, p)
		}
	}
	if len(l.byPID) >= l.max {
		clear(l.byPID)
	}
	return unbind
}

// set binds p to job on the forwarder; a forwarder without jobs turns the
// lookup off.
func (l *jobLookup) set(p uint32, job string) {
	err := l.c.SetJob(p, job)
	switch {
	case err == nil:
	case errors.Is(err, client.ErrJobUnsupported):
		l.mu.Lock()
		first := !l.off
		l.off = true
		l.mu.Unlock()
		if first {
			l.log.Warn("the forwarder does not take job ids: requests are not tagged with their job (upgrade adaptio forward, or mount with --no-jobs)", "err", err)
		}
	default:
		l.log.Warn("could not bind a process to its job on the forwarder: its requests count as job unknown", "pid", p, "job", job, "err", err)
	}
}

// jobOf is process pid's job: from its environment, else its cgroup, else
// "". An id the forwarder would refuse (qos.ValidJob) is logged and
// ignored.
func (l *jobLookup) jobOf(pid uint32) string {
	dir := l.proc + "/" + strconv.FormatUint(uint64(pid), 10)
	job := ""
	if b, err := os.ReadFile(dir + "/environ"); err == nil {
		job = envJob(b, l.env)
	}
	if job == "" {
		if b, err := os.ReadFile(dir + "/cgroup"); err == nil {
			job = cgroupJob(b)
		}
	}
	if job != "" {
		if err := qos.ValidJob(job); err != nil {
			l.log.Warn("a process's job id is not one the forwarder takes; its requests count as job unknown", "pid", pid, "err", err)
			return ""
		}
	}
	return job
}

// startTime is process pid's start time, false if it does not exist.
func (l *jobLookup) startTime(pid uint32) (uint64, bool) {
	b, err := os.ReadFile(l.proc + "/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	s, err := statStart(b)
	return s, err == nil
}

// statStart parses the start time (field 22) of a /proc/PID/stat line. The
// command name (field 2) is in parentheses and may hold spaces and
// parentheses: the fields after it follow the last ')'.
func statStart(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("fusemount: /proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 { // fields 3 to 22
		return 0, fmt.Errorf("fusemount: /proc stat: %d fields after the command name, want at least 20", len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// envJob is the value of the first variable of names set (non-empty) in
// environ, a /proc/PID/environ: NUL-separated NAME=VALUE entries.
func envJob(environ []byte, names []string) string {
	vals := make([]string, len(names))
	for e := range bytes.SplitSeq(environ, []byte{0}) {
		k, v, ok := bytes.Cut(e, []byte{'='})
		if !ok {
			continue
		}
		for i, n := range names {
			if vals[i] == "" && string(k) == n {
				vals[i] = string(v)
			}
		}
	}
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// cgroupJob is the Slurm job of a /proc/PID/cgroup: the N of a path
// component job_N under a Slurm hierarchy (cgroup v1
// /slurm/uid_U/job_N/step_S, v2 /system.slice/slurmstepd.scope/job_N/...).
func cgroupJob(cgroup []byte) string {
	for line := range bytes.SplitSeq(cgroup, []byte{'\n'}) {
		// hierarchy-ID:controllers:path
		parts := bytes.SplitN(line, []byte{':'}, 3)
		if len(parts) != 3 || !bytes.Contains(parts[2], []byte("slurm")) {
			continue
		}
		for c := range bytes.SplitSeq(parts[2], []byte{'/'}) {
			n, ok := bytes.CutPrefix(c, []byte("job_"))
			if ok && len(n) > 0 && len(n) <= 20 && allDigits(n) {
				return string(n)
			}
		}
	}
	return ""
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
