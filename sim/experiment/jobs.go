package experiment

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/virtual"
	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// JobScenario is a mix of jobs sharing the I/O nodes.
type JobScenario struct {
	Name string
	What string
	Jobs []sim.Job
}

// JobScenarios are the mixes of "adaptio sim jobs", with jobs concurrent
// jobs each (2 or 4: each kind of job once or twice), every job with
// procs processes:
//
//   - strided-vs-fpp: a job writing one shared file in 32 KiB 1D-strided
//     requests against jobs reading a file per process in 1 MiB requests;
//   - checkpoint-vs-reader: a bursty checkpoint (each process writes
//     64 MiB to its own file in 1 MiB requests, then computes for 2 s)
//     against a steady reader of a file per process in 256 KiB requests.
func JobScenarios(jobs, procs int) ([]JobScenario, error) {
	if jobs != 2 && jobs != 4 {
		return nil, fmt.Errorf("experiment: %d jobs: want 2 or 4", jobs)
	}
	if procs < 1 {
		return nil, fmt.Errorf("experiment: %d processes per job: want >= 1", procs)
	}
	pat := func(l workload.Layout, s workload.Spatiality, op rw.Op, req, perProc int64) workload.Pattern {
		return workload.Pattern{Processes: procs, Layout: l, Spatiality: s, Op: op, RequestSize: req, TotalBytes: perProc * int64(procs)}
	}
	strided := sim.Job{Patterns: []workload.Pattern{pat(workload.Shared, workload.Strided, rw.Write, 32<<10, 8<<20)}}
	fppRead := sim.Job{Patterns: []workload.Pattern{pat(workload.FilePerProcess, workload.Contiguous, rw.Read, 1<<20, 32<<20)}}
	ckpt := sim.Job{Patterns: []workload.Pattern{pat(workload.FilePerProcess, workload.Contiguous, rw.Write, 1<<20, 64<<20)}, Gap: 2 * time.Second}
	reader := sim.Job{Patterns: []workload.Pattern{pat(workload.FilePerProcess, workload.Contiguous, rw.Read, 256<<10, 32<<20)}}
	mix := func(a, b sim.Job, an, bn string) []sim.Job {
		if jobs == 2 {
			a.Name, b.Name = an, bn
			return []sim.Job{a, b}
		}
		a2, b2 := a, b
		a.Name, a2.Name, b.Name, b2.Name = an+"1", an+"2", bn+"1", bn+"2"
		return []sim.Job{a, b, a2, b2}
	}
	return []JobScenario{
		{Name: "strided-vs-fpp", What: "shared-file 1D-strided writer (32 KiB) against file-per-process readers (1 MiB)", Jobs: mix(strided, fppRead, "strided", "fpp")},
		{Name: "checkpoint-vs-reader", What: "bursty checkpoint (64 MiB per process in 1 MiB writes, 2 s between) against a steady file-per-process reader (256 KiB)", Jobs: mix(ckpt, reader, "ckpt", "reader")},
	}, nil
}

// JobSetting is how the I/O nodes run a scenario.
type JobSetting struct {
	Label     string
	Scheduler string        // "fifo" or "twins"
	Window    time.Duration // TWINS window (static)
	Learn     bool          // the Council chooses the window every interval
	// JobContext is, with Learn, how the Council reads the jobs the I/O
	// nodes report (council.Config.JobContext; "": council.JobContextNode,
	// no job in its view).
	JobContext string
	QoS        *sim.QoS // the QoS gate, nil none
}

// JobSettings are FIFO, static TWINS with each of windows, learning by
// the Council (which sees the node's mix, not its jobs; then with the jobs,
// its context the pattern of the job with the most bytes, and the set of
// the jobs' patterns), and with the QoS gate: over FIFO, fair sharing of
// bytes (qos.ShareBytes); equal shares of the data servers' time
// (qos.ShareTime, Fairness 1) in slices of SliceWindow without
// anticipation, where the jobs' requests interleave whenever one waits for
// its completions, and in job windows (the gate's runs); shares of server
// time tilted toward the efficient jobs with Jain's index at least
// fairness (qos.Config.Fairness), over FIFO and over TWINS with
// TiltWindow; then capRule (if its Rate is set) added to equal shares in
// job windows. depth is the gate's depth.
func JobSettings(windows []time.Duration, depth int, capRule qos.Rule, fairness float64) []JobSetting {
	out := []JobSetting{{Label: "fifo", Scheduler: "fifo"}}
	for _, w := range windows {
		out = append(out, JobSetting{Label: "twins " + w.String(), Scheduler: "twins", Window: w})
	}
	out = append(out, JobSetting{Label: "learning", Scheduler: "twins", Learn: true})
	out = append(out, JobSetting{Label: "learning+jobs dominant", Scheduler: "twins", Learn: true, JobContext: council.JobContextDominant})
	out = append(out, JobSetting{Label: "learning+jobs mix", Scheduler: "twins", Learn: true, JobContext: council.JobContextMix})
	out = append(out, JobSetting{Label: "fifo+fair bytes", Scheduler: "fifo", QoS: &sim.QoS{Depth: depth, Share: qos.ShareBytes}})
	out = append(out, JobSetting{Label: "fifo+fair time slices", Scheduler: "fifo", QoS: &sim.QoS{Depth: depth, Share: qos.ShareTime, Window: SliceWindow, Anticipation: -1, Fairness: 1}})
	out = append(out, JobSetting{Label: "fifo+fair time runs", Scheduler: "fifo", QoS: &sim.QoS{Depth: depth, Share: qos.ShareTime, Fairness: 1}})
	floor := fmt.Sprintf("fair time floor %g", fairness)
	out = append(out, JobSetting{Label: "fifo+" + floor, Scheduler: "fifo", QoS: &sim.QoS{Depth: depth, Share: qos.ShareTime, Fairness: fairness}})
	out = append(out, JobSetting{Label: "twins " + TiltWindow.String() + "+" + floor, Scheduler: "twins", Window: TiltWindow, QoS: &sim.QoS{Depth: depth, Share: qos.ShareTime, Fairness: fairness}})
	if capRule.Rate > 0 {
		out = append(out, JobSetting{Label: "fifo+fair time runs+" + capRule.String(), Scheduler: "fifo", QoS: &sim.QoS{Rules: []qos.Rule{capRule}, Depth: depth, Fairness: 1}})
	}
	return out
}

// TiltWindow is the TWINS window under the gate in the setting "twins
// 4ms+fair time floor F": the static window with the most total on most
// seeds of both mixes.
const TiltWindow = 4 * time.Millisecond

// SliceWindow is the window of the setting "fifo+fair time slices": 20 ms
// of service, ended as soon as the job has nothing queued.
const SliceWindow = 20 * time.Millisecond

// JobRow is one scenario under one setting.
type JobRow struct {
	Scenario string
	Setting  string
	Jobs     []sim.JobResult
	Total    float64 // bytes per second, every job's bytes over the span
	Jain     float64 // Jain's index of the jobs' bandwidths
	// JainTime is Jain's index of the data-server time each job had: 1
	// when the jobs shared the servers' time equally (the fairness the
	// gate's qos.ShareTime aims at).
	JainTime float64
	// Alone is each job's bandwidth when it runs alone under the same
	// scheduler (no gate), and JainNorm Jain's index of the jobs'
	// bandwidths over their Alone: 1 when every job keeps the same
	// fraction of what it would get alone.
	Alone    []float64
	JainNorm float64
}

// RunJobs runs scenario sc under setting st on base (its Jobs, JobsFor,
// Scheduler, Window and QoS replaced) and returns the jobs' bandwidths
// over base.JobsFor.
func RunJobs(ctx context.Context, base sim.Config, sc JobScenario, st JobSetting, seed uint64) (JobRow, error) {
	row, err := runJobs(ctx, base, sc, st, seed)
	if err != nil || len(sc.Jobs) < 2 {
		return row, err
	}
	alone := st
	alone.QoS = nil
	norm := make([]float64, len(sc.Jobs))
	row.Alone = make([]float64, len(sc.Jobs))
	for i, j := range sc.Jobs {
		one := sc
		one.Jobs = []sim.Job{j}
		r, err := runJobs(ctx, base, one, alone, seed)
		if err != nil {
			return JobRow{}, fmt.Errorf("%s alone: %w", j.Name, err)
		}
		row.Alone[i] = r.Total
		if r.Total > 0 {
			norm[i] = row.Jobs[i].Bandwidth / r.Total
		}
	}
	row.JainNorm = sim.Jain(norm)
	return row, nil
}

// runJobs is RunJobs without the runs alone.
func runJobs(ctx context.Context, base sim.Config, sc JobScenario, st JobSetting, seed uint64) (JobRow, error) {
	cfg := base
	cfg.Jobs, cfg.Scheduler, cfg.Window, cfg.QoS = sc.Jobs, st.Scheduler, st.Window, st.QoS
	if cfg.JobsFor == 0 {
		return JobRow{}, fmt.Errorf("experiment: jobs need a span (JobsFor)")
	}
	var hooks sim.Hooks
	if st.Learn {
		jc := st.JobContext
		if jc == "" {
			jc = council.JobContextNode
		}
		core, err := council.New(council.Config{Windows: sched.Windows, Nodes: max(cfg.IONodes, 1), JobContext: jc}, rand.New(rand.NewPCG(seed, 0xc0c1)))
		if err != nil {
			return JobRow{}, err
		}
		hooks = virtual.New(core).Hooks(nil)
	}
	res, err := sim.Run(ctx, cfg, hooks)
	if err != nil {
		return JobRow{}, fmt.Errorf("%s under %s: %w", sc.Name, st.Label, err)
	}
	row := JobRow{Scenario: sc.Name, Setting: st.Label, Jobs: res.Jobs}
	bws := make([]float64, len(res.Jobs))
	srv := make([]float64, len(res.Jobs))
	for i, j := range res.Jobs {
		bws[i] = j.Bandwidth
		srv[i] = j.ServerTime.Seconds()
		row.Total += j.Bandwidth
	}
	row.Jain = sim.Jain(bws)
	row.JainTime = sim.Jain(srv)
	row.JainNorm = 1
	return row, nil
}

// WriteJobRows prints rows as a table: per scenario, one line per setting
// with the total and each job's bandwidth in MiB/s, and Jain's index of
// the jobs' bandwidths, of their data-server time and of their bandwidths
// over their bandwidths alone.
func WriteJobRows(w io.Writer, rows []JobRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	last := ""
	for _, r := range rows {
		if r.Scenario != last {
			if last != "" {
				fmt.Fprintln(tw)
			}
			last = r.Scenario
			names := make([]string, len(r.Jobs))
			for i, j := range r.Jobs {
				names[i] = j.Name + " MiB/s"
			}
			fmt.Fprintf(tw, "%s\ttotal MiB/s\t%s\tJain bytes\tJain time\tJain norm\t\n", r.Scenario, strings.Join(names, "\t"))
		}
		bws := make([]string, len(r.Jobs))
		for i, j := range r.Jobs {
			bws[i] = fmt.Sprintf("%.1f", j.Bandwidth/(1<<20))
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.3f\t%.3f\t%.3f\t\n", r.Setting, r.Total/(1<<20), strings.Join(bws, "\t"), r.Jain, r.JainTime, r.JainNorm)
	}
	return tw.Flush()
}
