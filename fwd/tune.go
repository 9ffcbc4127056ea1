package fwd

import (
	"fmt"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/ionode"
)

// CloseInterval ends the current metrics interval at now and returns its
// observation (the Announcer's Source): clients, processes, file handles,
// request sizes and offset distances of the client requests received, bytes
// acknowledged, and the window in force.
func (d *Daemon) CloseInterval(now time.Time) access.Observation {
	o, _ := d.closeInterval(now, false)
	return o
}

// maxJobAccumulators bounds the jobs whose requests an interval observes
// apart (CloseIntervalJobs); the requests of later jobs count in the
// node's observation only.
const maxJobAccumulators = 64

// jobAccumulator returns job's accumulator of the interval, nil for
// requests without a job or beyond maxJobAccumulators jobs (accMu held).
func (d *Daemon) jobAccumulator(job string) *access.Accumulator {
	if job == "" {
		return nil
	}
	if a, ok := d.jobAcc[job]; ok {
		return a
	}
	if len(d.jobAcc) >= maxJobAccumulators {
		return nil
	}
	if d.jobAcc == nil {
		d.jobAcc = map[string]*access.Accumulator{}
	}
	a := &access.Accumulator{}
	d.jobAcc[job] = a
	return a
}

// CloseIntervalJobs is CloseInterval with each declared job's part of the
// interval (announce.JobSource): the observation of its own requests, by
// job id, for every job that sent requests or completed some in the
// interval. A job idle for a whole interval is forgotten (its requests'
// history, such as the processes sharing its files, starts again).
func (d *Daemon) CloseIntervalJobs(now time.Time) (access.Observation, map[string]access.Observation) {
	return d.closeInterval(now, true)
}

func (d *Daemon) closeInterval(now time.Time, jobs bool) (access.Observation, map[string]access.Observation) {
	d.accMu.Lock()
	defer d.accMu.Unlock()
	start := d.accStart
	if start.IsZero() {
		start = now
	}
	iv := now.Sub(start)
	if iv < 0 {
		iv = 0
	}
	var rel time.Duration
	if !d.t0.IsZero() {
		rel = start.Sub(d.t0)
	}
	total := d.m.bytesTotal()
	d.acc.Done(total - d.accBytes)
	d.accBytes = total
	o := d.acc.Close(d.opts.Sched.Node, rel, iv, d.be.Servers(), d.Window())
	if o.Op.Valid() && o.Window > 0 {
		// Following a plan, the requests of each direction ran under their
		// own window: credit the interval's direction with its own.
		d.q.mu.Lock()
		o.Window = d.q.node.WindowOf(o.Op)
		d.q.mu.Unlock()
	}
	var byJob map[string]access.Observation
	for job, a := range d.jobAcc {
		jo := a.Close(d.opts.Sched.Node, rel, iv, d.be.Servers(), o.Window)
		if jo.Idle() && jo.Completed == 0 {
			delete(d.jobAcc, job)
			continue
		}
		if jobs {
			if byJob == nil {
				byJob = map[string]access.Observation{}
			}
			byJob[job] = jo
		}
	}
	d.accStart = now
	if o.Interval > 0 {
		d.m.bandwidth.Set(o.Bandwidth)
	}
	return o, byJob
}

// SetObserve turns the collection of access statistics for the Announcer
// on or off (Options.Observe) while the daemon runs: an operator attaching
// or detaching an Announcer, or a benchmark comparing both on one daemon.
func (d *Daemon) SetObserve(on bool) {
	d.accMu.Lock()
	defer d.accMu.Unlock()
	if on && !d.observe.Load() {
		d.accBytes = d.m.bytesTotal() // bytes acknowledged while off are not the next interval's
	}
	d.observe.Store(on)
}

// Window returns the TWINS window in force (0 when the scheduler is not TWINS).
func (d *Daemon) Window() time.Duration { return time.Duration(d.window.Load()) }

// Workers returns the number of workers executing batches (Options.Workers,
// or its default for the backend).
func (d *Daemon) Workers() int { return d.opts.Workers }

// Scheduler returns the name of the scheduling algorithm in force.
func (d *Daemon) Scheduler() string {
	var name string
	_ = d.control(func(time.Duration) error { name = d.sw.Name(); return nil })
	return name
}

// ApplyWindow sets the TWINS window live (the Announcer's Applier): queued
// requests stay queued and the current window's end moves. It ends any
// plan the daemon followed (ApplyPlan).
func (d *Daemon) ApplyWindow(w time.Duration) error {
	return d.ApplyPlan(w, 0, 0)
}

// ApplyPlan sets the TWINS window live to the plan's window for the
// direction the daemon's requests take now (read or write; w when the
// plan has none for it), and from then on to the plan's window for each
// direction as the requests turn (ionode.Plan): the Announcer's
// PlanApplier.
func (d *Daemon) ApplyPlan(w, read, write time.Duration) error {
	if w <= 0 || read < 0 || write < 0 {
		return fmt.Errorf("%w: %v (plan read %v, write %v)", ErrBadWindow, w, read, write)
	}
	return d.control(func(now time.Duration) error {
		if d.sw.Name() != "twins" {
			return fmt.Errorf("%w: %s", ErrNotTunable, d.sw.Name())
		}
		if err := d.q.node.Follow(now, ionode.Plan{Read: read, Write: write}, w); err != nil {
			return err
		}
		if w, ok := d.q.node.Switched(); ok {
			d.windowApplied(w)
			d.log.Info("window applied", "window", w)
		}
		return nil
	})
}

// windowApplied publishes a window the scheduler took (q.mu held).
func (d *Daemon) windowApplied(w time.Duration) {
	d.window.Store(int64(w))
	d.m.window.Set(w.Seconds())
}

// SwitchScheduler changes the scheduling algorithm live; queued requests
// move to the new one in arrival order.
func (d *Daemon) SwitchScheduler(name string) error {
	return d.control(func(now time.Duration) error {
		if err := d.sw.Switch(now, name); err != nil {
			return err
		}
		w := time.Duration(0)
		if name == "twins" {
			w = d.sw.Params().Window
		}
		d.window.Store(int64(w))
		d.m.window.Set(w.Seconds())
		return nil
	})
}

// control runs f with the scheduler held (before Start and after Shutdown
// too: the scheduler outlives the workers), then lets the workers look
// again: a new window or algorithm may make batches dispatchable.
func (d *Daemon) control(f func(now time.Duration) error) error {
	d.mu.Lock()
	started := d.started
	d.mu.Unlock()
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	now := time.Duration(0)
	if started {
		now = d.now()
	}
	err := f(now)
	d.q.work.Broadcast()
	return err
}

// BytesTotal is the number of bytes the daemon has acknowledged since it
// started (read and written): a selector's or tuner's measure of progress.
func (d *Daemon) BytesTotal() int64 { return d.m.bytesTotal() }

// BytesRead is the part of BytesTotal that was read.
func (d *Daemon) BytesRead() int64 { return int64(d.m.readBytes.Load()) }
