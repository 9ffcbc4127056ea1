package client

import (
	"errors"
	"fmt"
	"sync"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// jobs are the job bindings the client keeps: sent after every hello, so
// that they survive a reconnection.
type jobs struct {
	mu     sync.Mutex
	byProc map[uint32]string
}

// SetJob binds process (the Process of reads and writes; fwdproto.AllProcesses:
// the session's default, Options.Job) to job on the forwarder, whose QoS
// rules and per-job metrics then count the process's requests under it;
// job "" unbinds it. The binding is sent again after a reconnection. The
// forwarder must speak protocol version 5: an older one closes the
// connection (ErrJobUnsupported).
func (c *Client) SetJob(process uint32, job string) error {
	c.jobs.mu.Lock()
	if c.jobs.byProc == nil {
		c.jobs.byProc = map[uint32]string{}
	}
	if job == "" {
		delete(c.jobs.byProc, process)
	} else {
		c.jobs.byProc[process] = job
	}
	c.jobs.mu.Unlock()
	_, err := c.do(&fwdproto.Msg{Op: fwdproto.OpJob, Process: process, Job: job}, nil, nil)
	return jobErr(err)
}

// ErrJobUnsupported is returned when the forwarder does not know jobs
// (a daemon older than protocol version 5).
var ErrJobUnsupported = errors.New("client: the forwarder does not take job ids (it speaks protocol version 4 or older): upgrade adaptio forward, or run without a job")

func jobErr(err error) error {
	var pe *fwdproto.Error
	if errors.As(err, &pe) && pe.Code == fwdproto.CodeBadFrame {
		return fmt.Errorf("%w (%v)", ErrJobUnsupported, err)
	}
	return err
}

// sendJobs sends the job bindings on a new connection, after its hello.
func (c *Client) sendJobs(cc *clientConn) error {
	c.jobs.mu.Lock()
	if c.opts.Job != "" {
		if c.jobs.byProc == nil {
			c.jobs.byProc = map[uint32]string{}
		}
		if _, ok := c.jobs.byProc[fwdproto.AllProcesses]; !ok {
			c.jobs.byProc[fwdproto.AllProcesses] = c.opts.Job
		}
	}
	bind := make(map[uint32]string, len(c.jobs.byProc))
	for p, j := range c.jobs.byProc {
		bind[p] = j
	}
	c.jobs.mu.Unlock()
	for p, j := range bind {
		if _, err := cc.do(&fwdproto.Msg{Op: fwdproto.OpJob, Process: p, Job: j}, nil); err != nil {
			return fmt.Errorf("job %q: %w", j, jobErr(err))
		}
	}
	return nil
}
