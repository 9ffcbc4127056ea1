package fwdbench

import (
	"errors"
	"fmt"
)

// DefaultJobPrefix names the jobs of Options.Jobs when Options.Job is "".
const DefaultJobPrefix = "bench"

// ErrJobsDirect is returned by RunDirect and VerifyDirect given a job: jobs
// are the forwarder's.
var ErrJobsDirect = errors.New("fwdbench: jobs are told apart by the forwarder only: a run without one (--direct) cannot take a job")

// JobOf is the job of process proc of procs under o: "" without o.Job and
// o.Jobs; o.Job for all of them if o.Jobs <= 1; otherwise the processes
// are split into o.Jobs jobs in blocks of consecutive processes, named
// PREFIX.1 to PREFIX.N (PREFIX: o.Job, else DefaultJobPrefix).
func JobOf(proc, procs int, o Options) string {
	if o.Jobs <= 1 {
		return o.Job
	}
	prefix := o.Job
	if prefix == "" {
		prefix = DefaultJobPrefix
	}
	return fmt.Sprintf("%s.%d", prefix, ClientOf(proc, procs, o.Jobs)+1)
}

// checkJobs validates o's jobs for a run of procs processes.
func checkJobs(procs int, o Options) error {
	if o.Jobs < 0 {
		return fmt.Errorf("fwdbench: %d jobs: want 0 or more", o.Jobs)
	}
	if o.Jobs > procs {
		return fmt.Errorf("fwdbench: %d jobs for %d processes: want at most one job per process", o.Jobs, procs)
	}
	return nil
}

// bindJobs binds each process to its job (JobOf) on its client.
func (t forwarder) bindJobs(procs int, o Options) error {
	if o.Job == "" && o.Jobs <= 1 {
		return nil
	}
	if err := checkJobs(procs, o); err != nil {
		return err
	}
	for proc := range procs {
		if err := t[ClientOf(proc, procs, len(t))].SetJob(uint32(proc), JobOf(proc, procs, o)); err != nil {
			return fmt.Errorf("fwdbench: job of process %d: %w", proc, err)
		}
	}
	return nil
}
