package fwd_test

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/rw"
)

// TestCloseIntervalJobs: a node serving two jobs and a client without
// one observes each job's requests apart, with its own pattern's metrics;
// the jobs' bytes add up to the declared jobs' share of the node's, and a
// job idle for an interval is gone from the next.
func TestCloseIntervalJobs(t *testing.T) {
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, fwdtest.MemDir(t)), Observe: true, Scheduler: "fifo"})
	d.CloseIntervalJobs(time.Now())
	const small, big = 4 << 10, 64 << 10
	write := func(job, name string, size, n int) {
		c, err := client.DialOptions(d.Addr(), client.Options{Job: job})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f, err := c.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := fwdtest.Content(1, 0, size)
		for k := range n {
			if _, err := f.WriteAt(buf, int64(k)*int64(size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("small", "s", small, 10)
	write("big", "b", big, 5)
	write("", "none", small, 3)
	o, jobs := d.CloseIntervalJobs(time.Now())
	if len(jobs) != 2 {
		t.Fatalf("jobs %v, want small and big", jobs)
	}
	s, b := jobs["small"], jobs["big"]
	if s.Requests != 10 || s.Bytes != 10*small || s.ReqAvg != small || s.Op != rw.Write || s.FileHandles != 1 {
		t.Errorf("small: %+v", s)
	}
	if b.Requests != 5 || b.Bytes != 5*big || b.ReqMax != big {
		t.Errorf("big: %+v", b)
	}
	if o.Requests != 18 || o.Bytes != s.Bytes+b.Bytes+3*small {
		t.Errorf("node: %d requests, %d bytes; jobs %d and %d bytes", o.Requests, o.Bytes, s.Bytes, b.Bytes)
	}
	if s.Interval != o.Interval || s.Window != o.Window {
		t.Errorf("job interval %v window %v, node %v %v", s.Interval, s.Window, o.Interval, o.Window)
	}
	write("big", "b2", big, 1)
	if _, jobs := d.CloseIntervalJobs(time.Now()); len(jobs) != 1 || jobs["big"].Requests != 1 {
		t.Errorf("second interval: %v, want big alone", jobs)
	}
}
