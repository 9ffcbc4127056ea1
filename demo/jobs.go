package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/virtual"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/internal/atomicfile"
	"github.com/adaptio/adaptio/internal/statelock"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

// Job ids of the two-job scenario (Config.Jobs).
const (
	JobStrided = "strided" // the shared-file 1D-strided writer and reader
	JobFPP     = "fpp"     // the file-per-process readers
)

// JobsDecisionLog is the decision log of the last two-job run in the
// state directory.
const JobsDecisionLog = "decisions-jobs.jsonl"

// JobsReport is the outcome of a two-job run (Config.Jobs).
type JobsReport struct {
	Mode    string        // "real" or "sim"
	Elapsed time.Duration // run time (virtual with Sim)
	Jobs    []JobOutcome  // JobStrided, then JobFPP
	// Total is every job's bytes over the time both ran, bytes per second;
	// Jain is Jain's fairness index of the jobs' bandwidths.
	Total, Jain float64
	Decisions   []JobsDecision
	// Contexts counts the node reports by the context the Council learned
	// them under (a mix of jobs: "FPP/read+SS/write").
	Contexts map[string]int
	// Windows counts the decisions by window.
	Windows map[time.Duration]int
	Notes   []string
}

// JobOutcome is one job's part of a two-job run.
type JobOutcome struct {
	ID        string
	Workload  string
	Bytes     int64
	Bandwidth float64 // bytes per second over the run
}

// JobsDecision is one of the Council's decisions in a two-job run.
type JobsDecision struct {
	At      float64       `json:"at"` // seconds since the start
	Round   uint64        `json:"round"`
	Window  time.Duration `json:"win_ns"`
	Explore bool          `json:"explore"`
	Context string        `json:"context"` // the context that governed the decision
	// Nodes is, per reporting node, its context, where it came from ("mix":
	// the jobs it reported), and each job's pattern and bytes.
	Nodes []JobsNode `json:"nodes"`
}

// JobsNode is one node's report in a JobsDecision.
type JobsNode struct {
	Node    int                 `json:"node"`
	Context string              `json:"context"`
	From    string              `json:"from,omitempty"`
	Jobs    []council.JobReport `json:"jobs,omitempty"`
}

// jobsPatterns are the two jobs' patterns: the strided job writes, then
// reads, a shared file in RequestSize 1D-strided requests (PhaseBytes
// each); the file-per-process job reads a file per process in 1 MiB
// requests (FPPBytes in all). Each job has half the processes.
func (c Config) jobsPatterns() (strided []workload.Pattern, fpp workload.Pattern) {
	procs := max(c.Processes/2, 1)
	p := workload.Pattern{Processes: procs, Layout: workload.Shared, Spatiality: workload.Strided, RequestSize: c.RequestSize, TotalBytes: c.PhaseBytes}
	w, r := p, p
	w.Op, r.Op = rw.Write, rw.Read
	fpp = workload.Pattern{Processes: procs, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Read,
		RequestSize: 1 << 20, TotalBytes: max(c.FPPBytes, int64(procs)<<20)}
	fpp.TotalBytes -= fpp.TotalBytes % (int64(procs) << 20)
	return []workload.Pattern{w, r}, fpp
}

// RunJobs runs the two-job scenario (Config.Jobs 2) and returns its
// report; see runJobs.
func RunJobs(ctx context.Context, cfg Config) (JobsReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return JobsReport{}, err
	}
	if cfg.Jobs != 2 {
		return JobsReport{}, fmt.Errorf("%w: %d jobs: the multi-job scenario has 2", ErrBadConfig, cfg.Jobs)
	}
	lock, err := statelock.Acquire(cfg.StateDir)
	if err != nil {
		return JobsReport{}, fmt.Errorf("demo: %w", err)
	}
	defer lock.Release()
	return runJobs(ctx, cfg)
}

// runJobs runs the two-job scenario: on the real stack, the strided job's
// clients and the file-per-process job's clients tagged with their job
// ids, every forwarding daemon with its QoS gate; in the simulator, the
// same jobs (sim.Config.Jobs) with the gate. The Council detects each
// job's pattern in what each node reports and learns as configured
// (council.Config.JobContext, by default from the node's mixed metrics). It prints the live view
// and the summary on Out and writes the report.
func runJobs(ctx context.Context, cfg Config) (JobsReport, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return JobsReport{}, fmt.Errorf("demo: %w", err)
	}
	logf, err := os.Create(filepath.Join(cfg.StateDir, JobsDecisionLog))
	if err != nil {
		return JobsReport{}, fmt.Errorf("demo: decision log: %w", err)
	}
	defer logf.Close()
	trk := &jobsTracker{log: logf, out: cfg.Out, t0: time.Now()}
	var rep JobsReport
	if cfg.Sim {
		rep, err = runJobsSim(ctx, cfg, trk)
	} else {
		rep, err = runJobsReal(ctx, cfg, trk)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return rep, err
	}
	rep.Decisions, rep.Contexts, rep.Windows = trk.snapshot()
	var bws []float64
	for _, j := range rep.Jobs {
		bws = append(bws, j.Bandwidth)
		rep.Total += j.Bandwidth
	}
	rep.Jain = sim.Jain(bws)
	if cfg.Out != nil {
		rep.WriteText(cfg.Out)
	}
	if cfg.Report != "-" {
		if werr := atomicfile.Write(cfg.Report, rep.WriteHTML); werr != nil {
			return rep, werr
		}
		if cfg.Out != nil {
			abs, _ := filepath.Abs(cfg.Report)
			fmt.Fprintf(cfg.Out, "adaptio demo: report written to %s\n", abs)
		}
	}
	return rep, err
}

// jobsTracker keeps the decisions of a two-job run, writes them to the
// decision log and shows them live.
type jobsTracker struct {
	mu        sync.Mutex
	log       io.Writer
	out       io.Writer
	t0        time.Time
	virtual   bool
	buf       []byte
	decisions []JobsDecision
	bytes     map[string]int64 // bytes of each job's finished phases (real stack)
}

// Write takes the Council service's decision log (JSON lines).
func (t *jobsTracker) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := t.log.Write(t.buf[:i+1]); err != nil {
			return 0, err
		}
		var d council.Decision
		if err := json.Unmarshal(t.buf[:i], &d); err == nil {
			t.addLocked(time.Since(t.t0).Seconds(), d)
		}
		t.buf = t.buf[i+1:]
	}
}

// decision records a decision of the simulated run at virtual time at.
func (t *jobsTracker) decision(at time.Duration, d council.Decision) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, err := json.Marshal(d); err == nil {
		t.log.Write(append(b, '\n'))
	}
	t.addLocked(at.Seconds(), d)
}

func (t *jobsTracker) addLocked(at float64, d council.Decision) {
	jd := JobsDecision{At: at, Round: d.Round, Window: d.Window, Explore: d.Explore, Context: d.Context}
	for _, n := range d.Nodes {
		if n.Idle {
			continue
		}
		jd.Nodes = append(jd.Nodes, JobsNode{Node: n.Node, Context: n.Context, From: n.From, Jobs: n.Jobs})
	}
	t.decisions = append(t.decisions, jd)
	if t.out != nil && !t.virtual {
		fmt.Fprintln(t.out, liveLine(jd, t.bytes))
	}
}

// liveLine is the live view's line for a decision: the window and its
// context, and what the Council saw of each job at the nodes.
func liveLine(d JobsDecision, done map[string]int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  round %-4d window %-6v context %-20s", d.At, d.Round, d.Window, orDash(d.Context))
	seen := map[string]int64{}
	pat := map[string]string{}
	for _, n := range d.Nodes {
		for _, j := range n.Jobs {
			seen[j.ID] += j.Bytes
			if j.Context != "" {
				pat[j.ID] = j.Context
			}
		}
	}
	for _, id := range []string{JobStrided, JobFPP} {
		fmt.Fprintf(&b, "  %s: %s", id, orDash(pat[id]))
		if n, ok := seen[id]; ok {
			fmt.Fprintf(&b, " %.1f MiB this interval", float64(n)/(1<<20))
		}
		if done != nil {
			fmt.Fprintf(&b, ", %.0f MiB done", float64(done[id])/(1<<20))
		}
	}
	return b.String()
}

func (t *jobsTracker) addBytes(job string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bytes == nil {
		t.bytes = map[string]int64{}
	}
	t.bytes[job] += n
}

func (t *jobsTracker) snapshot() ([]JobsDecision, map[string]int, map[time.Duration]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ctxs, wins := map[string]int{}, map[time.Duration]int{}
	for _, d := range t.decisions {
		wins[d.Window]++
		for _, n := range d.Nodes {
			if n.Context != "" {
				ctxs[n.Context]++
			}
		}
	}
	return slices.Clone(t.decisions), ctxs, wins
}

// runJobsSim runs the two jobs in the simulator for Iterations half-seconds
// of virtual time (Duration, if set), each repeating its patterns.
func runJobsSim(ctx context.Context, cfg Config, trk *jobsTracker) (JobsReport, error) {
	strided, fpp := cfg.jobsPatterns()
	span := cfg.Duration
	if span == 0 {
		span = time.Duration(cfg.Iterations) * time.Second / 2
	}
	core, err := council.New(council.Config{Policy: cfg.Policy, Windows: sched.Windows, Nodes: 1, Timeout: min(council.DefaultTimeout, cfg.Interval/2),
		NoPlan: cfg.NoPlan, Credit: cfg.Credit, MaxPull: cfg.MaxPull}, rand.New(rand.NewPCG(cfg.Seed, 0xde70)))
	if err != nil {
		return JobsReport{}, fmt.Errorf("demo: council: %w", err)
	}
	sc := sim.Config{Jobs: []sim.Job{{Name: JobStrided, Patterns: strided}, {Name: JobFPP, Patterns: []workload.Pattern{fpp}}}, JobsFor: span,
		IONodes: 1, Servers: cfg.Servers, Scheduler: "twins", Window: sched.DefaultWindow, Seed: cfg.Seed,
		ServerTimeScale: cfg.ServerTimeScale, ReadAheadBytes: cfg.ServerReadAhead, Elevator: cfg.ServerElevator,
		AlignedWindows: !cfg.ReferenceWindows, Interval: cfg.Interval, QoS: &sim.QoS{}}
	if cfg.Static != 0 {
		sc.Window = cfg.Static
	}
	trk.virtual = true
	var hooks sim.Hooks
	if cfg.Static == 0 {
		hooks = virtual.New(core).Hooks(trk.decision)
	}
	res, err := sim.Run(ctx, sc, hooks)
	if err != nil {
		return JobsReport{}, fmt.Errorf("demo: two jobs in the simulator: %w", err)
	}
	rep := JobsReport{Mode: "sim", Elapsed: span}
	for _, j := range res.Jobs {
		rep.Jobs = append(rep.Jobs, JobOutcome{ID: j.Name, Bytes: j.Bytes, Bandwidth: j.Bandwidth})
	}
	rep.Jobs[0].Workload, rep.Jobs[1].Workload = strided[0].String()+", then read back", fpp.String()
	rep.Notes = append(rep.Notes, fmt.Sprintf("Simulator: one I/O node shared by both jobs (the simulator places each job's processes on client nodes of their own, so with more I/O nodes each would serve one job), with the QoS gate (fair sharing of the data servers' time) in front of TWINS, %d data servers, %v of virtual time; each job repeats its patterns until then.",
		cfg.Servers, span))
	return rep, nil
}

// runJobsReal runs the two jobs on the real stack: the strided job runs
// Iterations iterations (write, then read back its shared file), while the
// file-per-process job reads its files again and again until the strided
// job is done.
func runJobsReal(ctx context.Context, cfg Config, trk *jobsTracker) (JobsReport, error) {
	st, err := startStack(ctx, cfg, trk)
	if err != nil {
		return JobsReport{}, err
	}
	defer st.shutdown()
	dial := func(job string) ([]*client.Client, error) {
		var cs []*client.Client
		for _, d := range st.daemons {
			c, err := client.DialOptions(d.Addr(), client.Options{Job: job})
			if err != nil {
				return nil, fmt.Errorf("demo: client of job %s: %w", job, err)
			}
			st.clients = append(st.clients, c)
			cs = append(cs, c)
		}
		return cs, nil
	}
	sc, err := dial(JobStrided)
	if err != nil {
		return JobsReport{}, err
	}
	fc, err := dial(JobFPP)
	if err != nil {
		return JobsReport{}, err
	}
	strided, fpp := cfg.jobsPatterns()
	// The readers' files are written before the run, not counted.
	fo := fwdbench.Options{Dir: JobFPP, Clients: fc[1:], Keep: true, NoVerify: true}
	if _, err := fwdbench.Run(ctx, fc[0], withOp(fpp, rw.Write), fo); err != nil {
		return JobsReport{}, fmt.Errorf("demo: writing the readers' files: %w", err)
	}
	runCtx := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	trk.t0 = time.Now()
	stridedDone := make(chan struct{})
	var sBytes, fBytes int64
	var sErr, fErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(stridedDone)
		for it := 0; it < cfg.Iterations && runCtx.Err() == nil; it++ {
			o := fwdbench.Options{Dir: JobStrided, Clients: sc[1:], Seed: uint64(it), NoVerify: true, Keep: true}
			res, err := fwdbench.Run(runCtx, sc[0], strided[0], o)
			if err == nil {
				sBytes += res.Write.Bytes
				trk.addBytes(JobStrided, res.Write.Bytes)
				var ph fwdbench.Phase
				ph, err = fwdbench.Verify(runCtx, sc[0], strided[1], o)
				sBytes += ph.Bytes
				trk.addBytes(JobStrided, ph.Bytes)
			}
			if err != nil {
				sErr = err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stridedDone:
				return
			default:
			}
			o := fo
			o.Keep, o.NoVerify = true, false
			ph, err := fwdbench.Verify(runCtx, fc[0], fpp, o)
			if err != nil {
				fErr = err
				return
			}
			fBytes += ph.Bytes
			trk.addBytes(JobFPP, ph.Bytes)
		}
	}()
	wg.Wait()
	elapsed := time.Since(trk.t0)
	for _, a := range st.anns {
		a.Shutdown()
	}
	settle(st.svc)
	if err := errors.Join(sErr, fErr); err != nil && runCtx.Err() == nil {
		return JobsReport{}, fmt.Errorf("demo: two jobs: %w", err)
	}
	rep := JobsReport{Mode: "real", Elapsed: elapsed}
	rep.Jobs = []JobOutcome{
		{ID: JobStrided, Workload: strided[0].String() + ", then read back", Bytes: sBytes, Bandwidth: float64(sBytes) / elapsed.Seconds()},
		{ID: JobFPP, Workload: fpp.String() + ", again and again", Bytes: fBytes, Bandwidth: float64(fBytes) / elapsed.Seconds()},
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("Real stack in one process: a Council service, %s, %d forwarding daemons running TWINS with the QoS gate (adaptio forward --qos), each with an Announcer reporting each job every %v; each job's clients declare its id (as adaptio bench --job). Bytes of a phase count when it ends (a read interrupted at the end of the run does not).",
		serversNote(cfg), cfg.Nodes, cfg.Interval))
	return rep, runCtx.Err()
}

func withOp(p workload.Pattern, op rw.Op) workload.Pattern {
	p.Op = op
	return p
}

// WriteText prints the report's summary: each job's bandwidth and bytes,
// the total and Jain's index, the windows decided and the contexts the
// Council learned under.
func (r JobsReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "adaptio demo --jobs 2 (%s, %v):\n", r.Mode, r.Elapsed.Round(time.Millisecond))
	for _, j := range r.Jobs {
		fmt.Fprintf(w, "  job %-8s %8.1f MiB/s  %8.0f MiB  %s\n", j.ID, j.Bandwidth/(1<<20), float64(j.Bytes)/(1<<20), j.Workload)
	}
	fmt.Fprintf(w, "  total    %8.1f MiB/s  Jain's index %.3f\n", r.Total/(1<<20), r.Jain)
	fmt.Fprintf(w, "  %d decisions; windows: %s\n", len(r.Decisions), r.windowsText())
	fmt.Fprintf(w, "  contexts learned (node reports): %s\n", r.contextsText())
}

func (r JobsReport) windowsText() string {
	var ws []time.Duration
	for w := range r.Windows {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%v x%d", w, r.Windows[w]))
	}
	return orDash(strings.Join(parts, ", "))
}

func (r JobsReport) contextsText() string {
	var cs []string
	for c := range r.Contexts {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool {
		return r.Contexts[cs[i]] > r.Contexts[cs[j]] || r.Contexts[cs[i]] == r.Contexts[cs[j]] && cs[i] < cs[j]
	})
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s x%d", c, r.Contexts[c]))
	}
	return orDash(strings.Join(parts, ", "))
}

var jobsPage = template.Must(template.New("jobs").Funcs(template.FuncMap{
	"mib":  func(x float64) string { return fmt.Sprintf("%.1f", x/(1<<20)) },
	"mibi": func(x int64) string { return fmt.Sprintf("%.0f", float64(x)/(1<<20)) },
	"jobs": func(n JobsNode) string {
		var parts []string
		for _, j := range n.Jobs {
			s := fmt.Sprintf("%s %s %.1f MiB", j.ID, orDash(j.Context), float64(j.Bytes)/(1<<20))
			if !j.Counted {
				s += " (not counted)"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>adaptio demo: two jobs</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td.l,th.l{text-align:left}</style></head>
<body><h1>adaptio demo: two jobs on shared I/O nodes ({{.Mode}})</h1>
<p>Total {{mib .Total}} MiB/s, Jain's fairness index of the jobs' bandwidths {{printf "%.3f" .Jain}}, over {{.Elapsed}}.</p>
<table><tr><th class="l">job</th><th>MiB/s</th><th>MiB</th><th class="l">workload</th></tr>
{{range .Jobs}}<tr><td class="l">{{.ID}}</td><td>{{mib .Bandwidth}}</td><td>{{mibi .Bytes}}</td><td class="l">{{.Workload}}</td></tr>
{{end}}</table>
<h2>What the Council learned under</h2>
<p>Windows decided: {{.WindowsText}}.<br>Contexts of the node reports: {{.ContextsText}}.</p>
<table><tr><th>s</th><th>round</th><th>window</th><th>explore</th><th class="l">governing context</th><th class="l">node: context (from), jobs seen</th></tr>
{{range .Decisions}}<tr><td>{{printf "%.1f" .At}}</td><td>{{.Round}}</td><td>{{.Window}}</td><td>{{if .Explore}}yes{{end}}</td><td class="l">{{.Context}}</td><td class="l">{{range .Nodes}}{{.Node}}: {{.Context}}{{if .From}} ({{.From}}){{end}} {{jobs .}}<br>{{end}}</td></tr>
{{end}}</table>
{{range .Notes}}<p>{{.}}</p>{{end}}
</body></html>
`))

// WindowsText and ContextsText are the report's counts as text.
func (r JobsReport) WindowsText() string  { return r.windowsText() }
func (r JobsReport) ContextsText() string { return r.contextsText() }

// WriteHTML writes the report as an HTML page.
func (r JobsReport) WriteHTML(w io.Writer) error { return jobsPage.Execute(w, r) }
