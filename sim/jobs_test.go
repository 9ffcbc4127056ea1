package sim_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

func twoJobs() []sim.Job {
	w := workload.Pattern{Processes: 8, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 8 << 20}
	r := workload.Pattern{Processes: 8, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Read, RequestSize: 1 << 20, TotalBytes: 16 << 20}
	return []sim.Job{{Name: "w", Patterns: []workload.Pattern{w, w}}, {Name: "r", Patterns: []workload.Pattern{r}, Gap: 10 * time.Millisecond}}
}

// TestJobsRunOnce: jobs run their patterns once each, at the same time;
// every job's bytes are counted, the run is deterministic, and it takes
// less time than the jobs back to back.
func TestJobsRunOnce(t *testing.T) {
	cfg := sim.Config{Jobs: twoJobs(), Seed: 3}
	res, err := sim.Run(context.Background(), cfg, sim.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 2 {
		t.Fatalf("%d job results, want 2", len(res.Jobs))
	}
	want := map[string]int64{"w": 2 * (8 << 20), "r": 16 << 20}
	var sum int64
	for _, j := range res.Jobs {
		if j.Bytes != want[j.Name] {
			t.Errorf("job %s moved %d bytes, want %d", j.Name, j.Bytes, want[j.Name])
		}
		if j.End <= 0 || j.End > res.Makespan || j.Bandwidth <= 0 {
			t.Errorf("job %s: end %v (makespan %v), bandwidth %v", j.Name, j.End, res.Makespan, j.Bandwidth)
		}
		sum += j.Bytes
	}
	if sum != res.Bytes {
		t.Errorf("jobs' bytes %d, run's %d", sum, res.Bytes)
	}
	again, err := sim.Run(context.Background(), cfg, sim.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Jobs, again.Jobs) || res.Makespan != again.Makespan {
		t.Errorf("same seed, different runs: %+v vs %+v", res.Jobs, again.Jobs)
	}
	var alone time.Duration
	for _, j := range cfg.Jobs {
		r, err := sim.Run(context.Background(), sim.Config{Patterns: j.Patterns, Seed: 3}, sim.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		alone += r.Makespan
	}
	if res.Makespan >= alone {
		t.Errorf("jobs together took %v, back to back %v: they did not overlap", res.Makespan, alone)
	}
}

// TestJobsCapped: with JobsFor, jobs repeat until then; a TBF rule capping
// one job through the QoS gate holds its bandwidth at the rate (within
// 10%), and the other job moves more than when the capped one ran free.
func TestJobsCapped(t *testing.T) {
	base := sim.Config{Jobs: twoJobs(), JobsFor: 3 * time.Second, Threads: 16, Seed: 1}
	free := base
	free.QoS = &sim.QoS{Depth: 16}
	capped := base
	rate := 4 << 20
	capped.QoS = &sim.QoS{Depth: 16, Rules: []qos.Rule{{Job: "r", Rate: float64(rate)}}}
	fr, err := sim.Run(context.Background(), free, sim.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := sim.Run(context.Background(), capped, sim.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if fr.Jobs[1].Bandwidth < 1.5*float64(rate) {
		t.Fatalf("the reader runs free at %.1f MiB/s, not above the cap: the test caps nothing", fr.Jobs[1].Bandwidth/(1<<20))
	}
	if got := cr.Jobs[1].Bandwidth; math.Abs(got-float64(rate)) > 0.1*float64(rate) {
		t.Errorf("capped reader: %.2f MiB/s, want %.2f ± 10%%", got/(1<<20), float64(rate)/(1<<20))
	}
	if cr.Jobs[0].Bandwidth <= fr.Jobs[0].Bandwidth {
		t.Errorf("the writer moved %.1f MiB/s beside the capped reader, %.1f beside the free one: it gained nothing", cr.Jobs[0].Bandwidth/(1<<20), fr.Jobs[0].Bandwidth/(1<<20))
	}
	if cr.Jobs[0].Patterns < 2 {
		t.Errorf("the writer completed %d patterns in %v: JobsFor did not repeat them", cr.Jobs[0].Patterns, base.JobsFor)
	}
}

func TestJobsConfigErrors(t *testing.T) {
	p := twoJobs()[0].Patterns[0]
	for name, c := range map[string]sim.Config{
		"jobs and patterns": {Jobs: twoJobs(), Patterns: []workload.Pattern{p}},
		"bad name":          {Jobs: []sim.Job{{Name: "a b", Patterns: []workload.Pattern{p}}}},
		"same name":         {Jobs: []sim.Job{{Name: "a", Patterns: []workload.Pattern{p}}, {Name: "a", Patterns: []workload.Pattern{p}}}},
		"no pattern":        {Jobs: []sim.Job{{Name: "a"}}},
		"negative gap":      {Jobs: []sim.Job{{Name: "a", Patterns: []workload.Pattern{p}, Gap: -1}}},
		"processes change":  {Jobs: []sim.Job{{Name: "a", Patterns: []workload.Pattern{p, {Processes: 4, Op: rw.Read, RequestSize: 1, TotalBytes: 4}}}}},
	} {
		if _, err := sim.New(c, nil); !errors.Is(err, sim.ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
}

func TestJain(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{0, 0}, 0}, {[]float64{3, 3}, 1}, {[]float64{1, 0}, 0.5}, {[]float64{1, 0, 0, 0}, 0.25}, {[]float64{1, 2}, 0.9}} {
		if got := sim.Jain(tt.xs); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// TestJobsServerTime: each job's data-server time is positive, the jobs'
// sum fits in the servers' time over the run, and the gate sharing time
// gives a seek-bound strided writer and a streaming reader, both
// backlogged, equal server time (within 10%) where FIFO does not (equal
// shares: Fairness 1).
func TestJobsServerTime(t *testing.T) {
	w := workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 32 * 8 << 20}
	r := workload.Pattern{Processes: 32, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Read, RequestSize: 1 << 20, TotalBytes: 32 * 32 << 20}
	jobs := []sim.Job{{Name: "w", Patterns: []workload.Pattern{w}}, {Name: "r", Patterns: []workload.Pattern{r}}}
	cfg := sim.Config{Jobs: jobs, Seed: 3, Threads: 16, JobsFor: 2 * time.Second}
	for _, share := range []*sim.QoS{nil, {Depth: 16, Share: qos.ShareTime, Fairness: 1}} {
		cfg.QoS = share
		res, err := sim.Run(context.Background(), cfg, sim.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		for _, j := range res.Jobs {
			if j.ServerTime <= 0 {
				t.Errorf("job %s: server time %v", j.Name, j.ServerTime)
			}
			sum += j.ServerTime
		}
		if servers := time.Duration(sim.DefaultServers) * cfg.JobsFor; sum > servers {
			t.Errorf("jobs' server time %v over %v of %d servers", sum, cfg.JobsFor, sim.DefaultServers)
		}
		a, b := res.Jobs[0].ServerTime.Seconds(), res.Jobs[1].ServerTime.Seconds()
		equal := math.Abs(a-b) <= 0.1*math.Max(a, b)
		if share != nil && !equal {
			t.Errorf("sharing time: server times %.3fs and %.3fs, want within 10%%", a, b)
		}
		if share == nil && equal {
			t.Errorf("control: FIFO gave equal server times too (%.3fs, %.3fs), so the mix cannot show the gate's effect", a, b)
		}
	}
}

// TestJobsRunsKeepStreaming: a streaming reader sharing the node with a
// seek-bound strided writer, the gate dividing the servers' time, keeps
// most of the efficiency it has alone (bytes per second of server time,
// within 20%) when the gate serves the jobs in runs (job windows, the
// default); in slices without anticipation, which end whenever the writer
// waits for its completions, its reads interleave with the writes at the
// data servers and lose more (the control).
func TestJobsRunsKeepStreaming(t *testing.T) {
	w := workload.Pattern{Processes: 32, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 32 << 10, TotalBytes: 32 * 8 << 20}
	r := workload.Pattern{Processes: 32, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Read, RequestSize: 1 << 20, TotalBytes: 32 * 32 << 20}
	reader := sim.Job{Name: "r", Patterns: []workload.Pattern{r}}
	cfg := sim.Config{Seed: 1, Threads: 16, Scheduler: "fifo", JobsFor: 4 * time.Second}
	efficiency := func(jobs []sim.Job, q *sim.QoS) float64 {
		c := cfg
		c.Jobs, c.QoS = jobs, q
		res, err := sim.Run(context.Background(), c, sim.Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		j := res.Jobs[len(res.Jobs)-1]
		return float64(j.Bytes) / j.ServerTime.Seconds()
	}
	alone := efficiency([]sim.Job{reader}, nil)
	both := []sim.Job{{Name: "w", Patterns: []workload.Pattern{w}}, reader}
	runs := efficiency(both, &sim.QoS{Depth: 16, Fairness: 1})
	slices := efficiency(both, &sim.QoS{Depth: 16, Window: 20 * time.Millisecond, Anticipation: -1, Fairness: 1})
	t.Logf("reader's MiB per second of server time: alone %.1f, runs %.1f, slices %.1f", alone/(1<<20), runs/(1<<20), slices/(1<<20))
	if runs < 0.8*alone {
		t.Errorf("in runs the reader moved %.1f MiB per second of server time, alone %.1f: want at least 80%%", runs/(1<<20), alone/(1<<20))
	}
	if slices >= 0.8*alone {
		t.Errorf("control: in slices the reader kept %.1f of its %.1f MiB per second of server time alone, so the mix cannot show what runs change", slices/(1<<20), alone/(1<<20))
	}
}
