package fwd_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/fwdtest"
	"github.com/adaptio/adaptio/qos"
)

// TestJobsQoS runs three clients against a forwarder with a rule capping
// job "capped": a client of that job, one of job "free" and one that sends
// no job (as a client older than jobs). The capped job stays within its
// bucket, the others are not held back, every job's bytes show in the
// per-job metrics, and the rules change at run time.
func TestJobsQoS(t *testing.T) {
	const rate = 8 << 20
	const burst = 1 << 20
	const size = 128 << 10
	reg := prometheus.NewRegistry()
	d := fwdtest.Start(t, fwd.Options{
		Backend: fwdtest.Posix(t, fwdtest.MemDir(t)), Registerer: reg, Scheduler: "fifo",
		QoS: true, QoSRules: []qos.Rule{{Job: "capped", Op: 0, Rate: rate, Burst: burst}},
	})
	written := map[string]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	const d0 = 1500 * time.Millisecond
	for _, job := range []string{"capped", "free", ""} {
		c, err := client.DialOptions(d.Addr(), client.Options{Job: job})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f, err := c.Create("f-" + job)
		if err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := fwdtest.Content(1, 0, size)
				for k := int64(g); time.Since(start) < d0; k += 4 {
					if _, err := f.WriteAt(buf, k*size); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					written[job] += size
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	el := time.Since(start)
	if lim := int64(rate*el.Seconds()) + burst + 4*size; written["capped"] > lim {
		t.Errorf("capped job wrote %d bytes in %v, more than its bucket allows (%d)", written["capped"], el, lim)
	}
	if written["free"] <= written["capped"] || written[""] <= written["capped"] {
		t.Errorf("uncapped jobs wrote %d and %d bytes, the capped one %d: they were held back", written["free"], written[""], written["capped"])
	}
	for job, label := range map[string]string{"capped": "capped", "free": "free", "": fwd.UnknownJob} {
		if got := fwdtest.Metric(t, reg, "adaptio_fwd_job_bytes_total", "job", label, "op", "write"); int64(got) != written[job] {
			t.Errorf("adaptio_fwd_job_bytes_total{job=%q} = %.0f, want %d", label, got, written[job])
		}
	}
	if got := fwdtest.Metric(t, reg, "adaptio_qos_throttled_seconds_total", "job", "capped"); got <= 0 {
		t.Errorf("adaptio_qos_throttled_seconds_total{job=capped} = %v, want > 0", got)
	}
	if got := fwdtest.Metric(t, reg, "adaptio_qos_throttled_seconds_total", "job", "free"); got != 0 {
		t.Errorf("adaptio_qos_throttled_seconds_total{job=free} = %v, want 0", got)
	}

	if err := d.SetQoSRules([]qos.Rule{{Job: qos.Any, Weight: 0}}); !errors.Is(err, qos.ErrBadRule) {
		t.Errorf("a rule without rate or weight: %v, want ErrBadRule", err)
	}
	want := []qos.Rule{{Job: "free", Weight: 4}}
	if err := d.SetQoSRules(want); err != nil {
		t.Fatal(err)
	}
	if got := d.QoSRules(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("QoSRules() = %v, want %v", got, want)
	}
	if got := fwdtest.Metric(t, reg, "adaptio_qos_rule_reloads_total"); got != 1 {
		t.Errorf("adaptio_qos_rule_reloads_total = %v, want 1", got)
	}
}

// TestJobBindings: a process bound to its own job is counted under it,
// other processes under the session's default; a bad job id is refused
// with a clear error and the session goes on.
func TestJobBindings(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := fwdtest.Start(t, fwd.Options{Backend: fwdtest.Posix(t, t.TempDir()), Registerer: reg, JobLabels: 2})
	c, err := client.DialOptions(d.Addr(), client.Options{Job: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 100), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.SetJob(fwdproto.AllProcesses, "second"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 50), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.SetJob(fwdproto.AllProcesses, "third"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 7), 0); err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]float64{"default": 100, "second": 50, "other": 7} {
		if got := fwdtest.Metric(t, reg, "adaptio_fwd_job_bytes_total", "job", label); got != want {
			t.Errorf("bytes of job label %q = %v, want %v (JobLabels 2)", label, got, want)
		}
	}
	err = c.SetJob(7, "bad job")
	var pe *fwdproto.Error
	if !errors.As(err, &pe) || pe.Code != fwdproto.CodeBadArgument {
		t.Fatalf("job id with a space: %v, want bad argument", err)
	}
	if _, err := c.Stat("x"); err != nil {
		t.Fatalf("the session ended after a refused job: %v", err)
	}
	if err := d.SetQoSRules(nil); !errors.Is(err, fwd.ErrQoSOff) {
		t.Errorf("SetQoSRules without QoS: %v, want ErrQoSOff", err)
	}
}

// Options.QoSFairness reaches the gate: a floor outside (0, 1] is refused
// when the daemon starts, naming it; 1 (equal shares) starts.
func TestQoSFairnessReachesTheGate(t *testing.T) {
	for _, tt := range []struct {
		fairness float64
		ok       bool
	}{{1, true}, {0.5, true}, {1.5, false}, {-0.1, false}} {
		d, err := fwd.New(fwd.Options{Backend: fwdtest.Posix(t, fwdtest.MemDir(t)), QoS: true, QoSFairness: tt.fairness, Listen: []string{"unix:" + t.TempDir() + "/s"}})
		if err == nil {
			d.Shutdown()
		}
		if ok := err == nil; ok != tt.ok || (err != nil && !strings.Contains(err.Error(), "fairness")) {
			t.Errorf("QoSFairness %v: %v, want ok %v (an error naming the fairness)", tt.fairness, err, tt.ok)
		}
	}
}
