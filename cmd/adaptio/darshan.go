package main

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/darshan/replay"
	"github.com/adaptio/adaptio/darshan/summary"
	"github.com/adaptio/adaptio/demo/report"
	"github.com/adaptio/adaptio/eval"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/sim"
	"github.com/adaptio/adaptio/workload"
)

func newDarshanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "darshan",
		Short: "Read Darshan logs (pure Go, every format from 3.00): what adaptio would see of a job",
		Long: `Reads Darshan I/O characterisation logs without darshan-util: log formats 3.00 to 3.41,
either byte order, zlib or bzip2 regions.

  adaptio darshan summary LOG  each file's access pattern, request sizes and the job's phases
  adaptio darshan replay LOG   the job in the simulator under every window, FIFO and learning: advice`,
	}
	cmd.AddCommand(newDarshanSummaryCmd(), newDarshanReplayCmd())
	return cmd
}

func newDarshanSummaryCmd() *cobra.Command {
	var htmlOut string
	var top int
	cmd := &cobra.Command{
		Use:   "summary LOG",
		Short: "Each file's access pattern and request sizes, and the job's phases as the Council would label them",
		Long: `Summarises a Darshan log as adaptio would see the job:

  - per file (POSIX records) the access pattern of its writes and of its reads: FPP (one
    rank's file), SC (a shared file, each rank's accesses contiguous, or one block per
    rank), SS (shared, each rank's accesses moving forward by a stride) or random, with
    what it was read from, and the request-size histogram;
  - with DXT traces, the job second by second as one I/O node serving every rank would
    observe it, labelled by the Council's default detection model, and merged into phases.

--html also writes an offline report (tables and a plot of the bytes per second).`,
		Example: `  adaptio darshan summary job.darshan
  adaptio darshan summary job.darshan --html job.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if top < 0 {
				return fmt.Errorf("darshan summary: --files %d: want 0 (all) or how many to list", top)
			}
			l, c, err := darshan.Open(args[0])
			if err != nil {
				return fmt.Errorf("darshan summary: %w", err)
			}
			defer c.Close()
			s, err := summary.Summarize(l)
			if err != nil {
				return fmt.Errorf("darshan summary: %s: %w", args[0], err)
			}
			writeSummary(cmd.OutOrStdout(), args[0], s, top)
			if htmlOut != "" {
				r, err := summaryReport(args[0], s)
				if err != nil {
					return err
				}
				if err := r.WriteHTML(htmlOut); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", htmlOut)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write an HTML report to this file")
	cmd.Flags().IntVar(&top, "files", 20, "files and ranks listed (files largest first; 0: all)")
	return cmd
}

func sizeString(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// histogram names the non-empty size bins of o, e.g. "1K-10K:1024".
func histogram(o summary.OpStats) string {
	var parts []string
	for i, n := range o.Sizes {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", summary.SizeBins[i], n))
		}
	}
	return strings.Join(parts, " ")
}

// patternOf names a pattern, "-" for no access.
func patternOf(p summary.Pattern) string {
	if p == summary.NoAccess {
		return "-"
	}
	return string(p)
}

func writeSummary(w io.Writer, path string, s *summary.Summary, top int) {
	fmt.Fprintf(w, "%s: Darshan log %s\n", path, s.Version)
	fmt.Fprintf(w, "job: %s\n     %d processes, started %s, ran %s\n", s.Exe, s.Procs, s.Start.UTC().Format("2006-01-02 15:04:05 UTC"), s.Runtime)
	if len(s.Partial) > 0 {
		fmt.Fprintf(w, "warning: the log is partial: %v ran out of memory; their records are incomplete\n", s.Partial)
	}
	var read, written int64
	shared := 0
	for _, f := range s.Files {
		read, written = read+f.Read.Bytes, written+f.Write.Bytes
		if f.Shared {
			shared++
		}
	}
	fmt.Fprintf(w, "files: %d (%d shared); read %s, written %s\n", len(s.Files), shared, sizeString(read), sizeString(written))
	if total := read + written; total > 0 {
		var parts []string
		for _, p := range []summary.Pattern{summary.FPP, summary.SC, summary.SS, summary.Random} {
			if b := s.Patterns[p]; b > 0 {
				parts = append(parts, fmt.Sprintf("%s %s (%.0f%%)", p, sizeString(b), 100*float64(b)/float64(total)))
			}
		}
		fmt.Fprintf(w, "bytes by pattern: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "\n%-7s %-7s %10s %10s  %s\n", "write", "read", "written", "read", "file")
	for i, f := range s.Files {
		if top > 0 && i == top {
			fmt.Fprintf(w, "... %d more (--files 0 lists all)\n", len(s.Files)-top)
			break
		}
		fmt.Fprintf(w, "%-7s %-7s %10s %10s  %s\n", patternOf(f.Write.Pattern), patternOf(f.Read.Pattern), sizeString(f.Write.Bytes), sizeString(f.Read.Bytes), f.Name)
		for _, o := range []struct {
			op string
			s  summary.OpStats
		}{{"write", f.Write}, {"read", f.Read}} {
			if o.s.Ops > 0 {
				fmt.Fprintf(w, "%18s %s: %d requests, sizes %s; %s\n", "", o.op, o.s.Ops, histogram(o.s), o.s.Why)
			}
		}
	}
	if len(s.Phases) == 0 {
		fmt.Fprintln(w, "\nphases and ranks: the log has no DXT trace (Darshan's DXT module, DXT_ENABLE_IO_TRACE=1, records one)")
		return
	}
	fmt.Fprintf(w, "\nranks (%d, from the trace): %s\n", len(s.Ranks), rankPatterns(s.Ranks))
	for i, r := range s.Ranks {
		if top > 0 && i == top {
			fmt.Fprintf(w, "... %d more ranks (--files 0 lists all)\n", len(s.Ranks)-top)
			break
		}
		fmt.Fprintf(w, "  rank %-5d write %-6s %10s  read %-6s %10s\n", r.Rank, patternOf(r.Write.Pattern), sizeString(r.Write.Bytes),
			patternOf(r.Read.Pattern), sizeString(r.Read.Bytes))
	}
	fmt.Fprintf(w, "\nphases (%s, one I/O node's view, the Council's default model, 1 s):\n", s.Seconds[0].Sources)
	for _, p := range s.Phases {
		fmt.Fprintf(w, "  %14s  %-5s %-3s %10s\n", fmt.Sprintf("%.0f-%.0f s", p.Start, p.End), p.Op, p.Class, sizeString(p.Bytes))
	}
}

// rankPatterns counts the ranks by their write and read patterns, e.g.
// "write SS 32, read SS 32".
func rankPatterns(ranks []summary.Rank) string {
	var parts []string
	for _, op := range []string{"write", "read"} {
		n := map[summary.Pattern]int{}
		for _, r := range ranks {
			p := r.Write.Pattern
			if op == "read" {
				p = r.Read.Pattern
			}
			if p != "" {
				n[p]++
			}
		}
		for _, p := range []summary.Pattern{summary.FPP, summary.SC, summary.SS, summary.Random} {
			if n[p] > 0 {
				parts = append(parts, fmt.Sprintf("%s %s %d", op, p, n[p]))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// summaryReport is the HTML form of the summary.
func summaryReport(path string, s *summary.Summary) (*eval.Report, error) {
	files := eval.Table{Title: "Files, largest first", Header: []string{"file", "write", "read", "written", "read", "write sizes", "read sizes", "why (write / read)"}}
	for _, f := range s.Files {
		files.Rows = append(files.Rows, []string{f.Name, patternOf(f.Write.Pattern), patternOf(f.Read.Pattern), sizeString(f.Write.Bytes), sizeString(f.Read.Bytes),
			histogram(f.Write), histogram(f.Read), strings.Trim(f.Write.Why+" / "+f.Read.Why, " /")})
	}
	sec := eval.Section{Title: "Files", Tables: []eval.Table{files}}
	r := &eval.Report{Title: "Darshan log summary", Command: commandLine(),
		Intro:    fmt.Sprintf("%s: %s, %d processes, ran %s (Darshan log format %s).", path, s.Exe, s.Procs, s.Runtime, s.Version),
		Sections: []eval.Section{sec}}
	if len(s.Seconds) > 0 {
		phases := eval.Table{Title: "Phases", Header: []string{"from (s)", "to (s)", "operation", "pattern", "bytes"}}
		for _, p := range s.Phases {
			phases.Rows = append(phases.Rows, []string{fmt.Sprint(p.Start), fmt.Sprint(p.End), p.Op.String(), p.Class.String(), sizeString(p.Bytes)})
		}
		var series []eval.Series
		for _, op := range []string{"write", "read"} {
			sr := eval.Series{Name: op + " (MiB/s)"}
			for _, sc := range s.Seconds {
				if sc.Op.String() == op {
					sr.X, sr.Y = append(sr.X, sc.At), append(sr.Y, float64(sc.Bytes)/(1<<20))
				}
			}
			if len(sr.X) > 0 {
				series = append(series, sr)
			}
		}
		var figs []template.HTML
		if len(series) > 0 {
			fig, err := eval.LinePlot("Bytes per second", "seconds since the job started", "MiB/s", series, 0, math.NaN())
			if err != nil {
				return nil, err
			}
			figs = append(figs, fig)
		}
		ranks := eval.Table{Title: "Ranks (from the trace)", Note: rankPatterns(s.Ranks), Header: []string{"rank", "write", "written", "read", "read bytes"}}
		for _, rk := range s.Ranks {
			ranks.Rows = append(ranks.Rows, []string{fmt.Sprint(rk.Rank), patternOf(rk.Write.Pattern), sizeString(rk.Write.Bytes),
				patternOf(rk.Read.Pattern), sizeString(rk.Read.Bytes)})
		}
		r.Sections = append(r.Sections, eval.Section{Title: "Ranks", Tables: []eval.Table{ranks}})
		r.Sections = append([]eval.Section{{Title: "Phases as the Council would label them",
			Text:   "From " + s.Seconds[0].Sources + ": every traced access, one second at a time, as one I/O node serving every rank would observe it, labelled by the Council's default detection model.",
			Tables: []eval.Table{phases}, Figures: figs}}, r.Sections...)
	}
	return r, nil
}

// newReplayCmd is "adaptio replay LOG", the same command as "adaptio
// darshan replay LOG" at the top level, where a user bringing a job's log
// looks first.
func newReplayCmd() *cobra.Command {
	cmd := newDarshanReplayCmd()
	cmd.Short += " (also: adaptio darshan replay)"
	return cmd
}

func newDarshanReplayCmd() *cobra.Command {
	var m modelFlags
	var ion, repeat, maxProcs int
	var maxBytes, from, dxtModule, htmlOut, real, realDir string
	var realScale float64
	var noFit bool
	var lo learnOptions
	var ro replay.Options
	cmd := &cobra.Command{
		Use:   "replay LOG",
		Short: "Replay a job's I/O in the simulator under every TWINS window, FIFO and the learning Council; advise",
		Long: `Turns a Darshan log into the simulator's workload and runs it on --io-nodes I/O nodes
under FIFO, each TWINS window and the learning Council (the code adaptio council runs, in
virtual time), then advises the setting that would have finished the job's I/O first.

With a DXT trace (DXT_POSIX, else DXT_MPIIO; --dxt chooses) the trace itself is replayed,
access by access: each rank issues its traced accesses (file, offset, length, read or
write) in the order it started them, one at a time, waiting between them the time it
waited in the trace after its previous access ended (think time: --think-scale multiplies
it, --no-think drops it). Files are renamed trace.NNNNN.dat in the order the log names them
and striped by those names as a forwarder's backends would stripe them; accesses of no
bytes are left out. A trace of any size replays in bounded memory: past 512 Ki accesses it
is sorted in runs spilled to temporary files and read back from one (32 bytes an access);
--max-accesses refuses a larger trace than that.

Without DXT, or with --from counters, the workload comes from the log's POSIX counters, as
adaptio darshan summary reads them: for the job's writes, then its reads, the pattern that
moved most of their bytes (file per process, shared contiguous, shared 1D-strided; random
counts as strided), the job's processes (at most --max-processes), its mean request size
and its bytes (at most --max-bytes, so that a large job replays in seconds).

Before advising, the data servers are fitted to the log: their service time is scaled
(as --server-time-scale does) until one run of the workload under FIFO moves its bytes at
the bandwidth the log shows (DXT: the trace's bytes over its span; counters: the bytes over
the slowest process's time in reads, writes and metadata calls). The command prints the
fit, simulated against traced time; where no scale brings them within a factor of 1.5 (the
model's network or think time alone is slower, or the log shows no time), the advice is
marked not trustworthy. --no-fit keeps the model as --disk and --server-time-scale give it.

Either workload runs --repeat times back to back, so that the Council has rounds to learn
in. --html also writes an offline report with the makespans plotted.

--real ADDR then replays the same trace once through the forwarder at ADDR (adaptio forward),
with adaptio bench's client: the files are created under --real-dir, the ranges the trace
reads are first filled with the benchmark's content (untimed), then every rank runs in a
goroutine of its own, waiting its think times multiplied by --real-time-scale (0: none),
writing that content and checking every byte it reads; the files are removed at the end.`,
		Example: `  adaptio darshan replay job.darshan --io-nodes 4
  adaptio darshan replay job.darshan --no-think --html replay.html
  adaptio darshan replay job.darshan --from counters --max-bytes 256MiB
  adaptio darshan replay job.darshan --real 127.0.0.1:7700 --real-time-scale 0.1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ion < 1 || repeat < 1 || maxProcs < 1 {
				return fmt.Errorf("darshan replay: --io-nodes %d, --repeat %d and --max-processes %d: want >= 1 each", ion, repeat, maxProcs)
			}
			limit, err := workload.ParseSize(maxBytes)
			if err != nil || limit < 1 {
				return fmt.Errorf("darshan replay: --max-bytes %q: want a size such as 1GiB", maxBytes)
			}
			switch dxtModule {
			case "":
			case "posix":
				ro.Module = darshan.DXTPOSIX
			case "mpiio":
				ro.Module = darshan.DXTMPIIO
			default:
				return fmt.Errorf("darshan replay: --dxt %q: want posix or mpiio", dxtModule)
			}
			if ro.ThinkScale < 0 {
				return fmt.Errorf("darshan replay: --think-scale %v: want >= 0", ro.ThinkScale)
			}
			l, c, err := darshan.Open(args[0])
			if err != nil {
				return fmt.Errorf("darshan replay: %w", err)
			}
			defer c.Close()
			cfg, err := m.config()
			if err != nil {
				return err
			}
			cfg.IONodes, cfg.Scheduler, cfg.Window = ion, "twins", sched.DefaultWindow
			_, hasDXT := replay.Module(l)
			if ro.Module != 0 {
				hasDXT = l.HasModule(ro.Module)
			}
			var useDXT bool
			switch from {
			case "auto":
				useDXT = hasDXT
			case "dxt":
				useDXT = true
			case "counters":
			default:
				return fmt.Errorf("darshan replay: --from %q: want auto, dxt or counters", from)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %s, %d processes\n", args[0], l.Exe, l.Job.Procs)
			if real != "" && !useDXT {
				return fmt.Errorf("darshan replay: --real replays a DXT trace; %s is replayed from its counters", args[0])
			}
			var desc string
			var trace *replay.Trace
			var traced replay.Traced
			var tracedErr error
			once := cfg // one run of the job, for the fit
			if useDXT {
				tr, info, err := replay.FromDXT(l, ro)
				if err != nil {
					return fmt.Errorf("darshan replay: %s: %w", args[0], err)
				}
				defer tr.Close()
				trace = tr
				for range repeat {
					cfg.Traces = append(cfg.Traces, tr)
				}
				once.Traces = []workload.Trace{tr}
				once.MaxTime = sim.DefaultMaxTime + info.Think
				traced = replay.TracedDXT(info)
				cfg.MaxTime = sim.DefaultMaxTime + time.Duration(repeat)*info.Think
				desc = dxtDescription(info, ro)
				if info.Partial {
					fmt.Fprintf(w, "warning: the log says %s ran out of memory: the trace is incomplete\n", info.Module)
				}
			} else {
				s, err := summary.Summarize(l)
				if err != nil {
					return fmt.Errorf("darshan replay: %s: %w", args[0], err)
				}
				pats, err := s.Workload(limit, maxProcs)
				if err != nil {
					return fmt.Errorf("darshan replay: %s: %w", args[0], err)
				}
				for range repeat {
					cfg.Patterns = append(cfg.Patterns, pats...)
				}
				once.Patterns = pats
				traced, tracedErr = replay.TracedCounters(l)
				if from == "auto" {
					desc = "the log has no DXT trace: "
				}
				desc += "replayed as:"
				for _, p := range pats {
					desc += fmt.Sprintf(" %s (%s);", p, sizeString(p.TotalBytes))
				}
			}
			desc += fmt.Sprintf(" x %d, on %s", repeat, counted(ion, "I/O node"))
			fmt.Fprintf(w, "%s\n", desc)
			trusted := true
			switch {
			case noFit:
				fmt.Fprintf(w, "model: not fitted to the log (--no-fit): the data servers as --disk and --server-time-scale give them\n")
			case tracedErr != nil:
				trusted = false
				fmt.Fprintf(w, "model: not fitted: %v\n", tracedErr)
			default:
				fit, err := replay.Fit(cmd.Context(), once, traced)
				if err != nil {
					trusted = false
					fmt.Fprintf(w, "model: not fitted: %v\n", err)
					break
				}
				if cfg.ServerTimeScale == 0 {
					cfg.ServerTimeScale = 1
				}
				cfg.ServerTimeScale *= fit.Scale
				desc += fmt.Sprintf("; data servers fitted to the log: service time x %.3g", fit.Scale)
				fmt.Fprintf(w, "model fitted to the log (%s: %s in %.3f s, %.3g MB/s): data servers' service time x %.3g; one run under FIFO simulated in %.3f s against %.3f s traced for its bytes (%.2fx; %.3f s before the fit, %d simulations)\n",
					traced.Source, sizeString(traced.Bytes), traced.Time.Seconds(), traced.Bandwidth()/1e6, fit.Scale,
					fit.Simulated.Seconds(), fit.Target.Seconds(), fit.Ratio(), fit.Unfitted.Seconds(), fit.Runs)
				trusted = fit.Trusted()
			}
			fmt.Fprintln(w)
			lo.Seed, lo.Compare = m.seed, true
			r, err := simLearn(cmd.Context(), cfg, lo, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("darshan replay: %w", err)
			}
			r.write(w)
			advice := r.advice(ion)
			if advice != "" && !trusted {
				advice += fmt.Sprintf(" (not trustworthy: the model does not reproduce the job's traced time within a factor of %g; see the model line above)", replay.FitTolerance)
			}
			if advice != "" {
				fmt.Fprintf(w, "\nadvice: %s\n", advice)
			}
			if real != "" {
				if err := replayReal(cmd, trace, real, realDir, realScale); err != nil {
					return fmt.Errorf("darshan replay: --real %s: %w", real, err)
				}
			}
			if htmlOut != "" {
				rep := replayReport(args[0], l, desc, advice, r)
				if err := rep.WriteHTML(htmlOut); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", htmlOut)
			}
			return nil
		},
	}
	m.register(cmd)
	f := cmd.Flags()
	f.IntVar(&ion, "io-nodes", 4, "I/O nodes (forwarders) the job's processes are spread over")
	f.IntVar(&repeat, "repeat", 5, "times the job's I/O runs back to back (rounds to learn in)")
	f.StringVar(&from, "from", "auto", "the workload: dxt (the trace, access by access), counters (the counters' pattern), auto (dxt when the log has a trace)")
	f.StringVar(&dxtModule, "dxt", "", "the trace replayed: posix or mpiio (default: posix when the log has it)")
	f.Float64Var(&ro.ThinkScale, "think-scale", 1, "multiply the traced think times (DXT)")
	f.BoolVar(&ro.NoThink, "no-think", false, "drop the think times: each rank issues its accesses back to back (DXT)")
	f.Int64Var(&ro.MaxAccesses, "max-accesses", 0, "most DXT accesses replayed; a larger trace is refused (0: no limit)")
	f.IntVar(&maxProcs, "max-processes", 512, "most processes simulated from the counters (a larger job is replayed with this many)")
	f.StringVar(&maxBytes, "max-bytes", "1GiB", "most bytes per operation replayed from the counters")
	f.StringVar(&lo.Policy, "policy", council.DefaultPolicy, "the Council's bandit policy")
	f.BoolVar(&noFit, "no-fit", false, "do not fit the data servers' service time to the log's traced bandwidth (by default it is fitted, and the advice flagged when the fit misses by more than a factor of 1.5)")
	f.StringVar(&htmlOut, "html", "", "also write an HTML report to this file")
	f.StringVar(&real, "real", "", "also replay the trace through the forwarder at this address (host:port), verifying what it reads")
	f.StringVar(&realDir, "real-dir", "replay", "directory on the forwarder for --real's files")
	f.Float64Var(&realScale, "real-time-scale", 1, "multiply the think times of --real's replay (0: none)")
	return cmd
}

// replayReal replays tr once through the forwarder at addr and prints the
// outcome.
func replayReal(cmd *cobra.Command, tr *replay.Trace, addr, dir string, scale float64) error {
	if scale < 0 {
		return fmt.Errorf("--real-time-scale %v: want >= 0", scale)
	}
	if scale == 0 {
		scale = -1 // fwdbench: no think time
	}
	c, err := client.DialOptions(addr, client.Options{Name: "replay"})
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := fwdbench.RunTrace(cmd.Context(), c, tr, fwdbench.TraceOptions{Dir: dir, TimeScale: scale})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nreal (%s, one repetition): makespan %.3f s; %s of %s, %s written, %s read and verified; latency mean %.3f ms, max %.3f ms\n",
		addr, res.Makespan.Seconds(), counted(res.Requests, "request"), counted(res.Processes, "process"), sizeString(res.Written), sizeString(res.Read),
		float64(res.MeanLat)/1e6, float64(res.MaxLat)/1e6)
	return nil
}

// dxtDescription says what of a DXT trace is replayed.
func dxtDescription(info replay.Info, o replay.Options) string {
	think := "think time as traced"
	switch {
	case o.NoThink:
		think = "no think time"
	case o.ThinkScale != 0 && o.ThinkScale != 1:
		think = fmt.Sprintf("think time x %g", o.ThinkScale)
	}
	if info.Think > 0 {
		think += fmt.Sprintf(" (the most of one rank: %.3g s)", info.Think.Seconds())
	}
	d := fmt.Sprintf("replaying the DXT trace (%s) access by access: %s of %s (%s) on %s, %s written, %s read, traced over %.3g s; %s;",
		info.Module, counted(info.Accesses, "access"), counted(info.Ranks, "rank"), counted(info.Processes, "process"), counted(len(info.Files), "file"),
		sizeString(info.Written), sizeString(info.Read), info.Span.Seconds(), think)
	if info.Skipped > 0 {
		d += fmt.Sprintf(" %s of no bytes left out;", counted(info.Skipped, "access"))
	}
	if info.Spilled {
		d += " read from a temporary file;"
	}
	return d
}

// counted is "1 rank", "2 ranks", "3 accesses".
func counted[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// advice names the static setting that finished first, against FIFO, and
// what learning reached ("" when FIFO was not run).
func (r learnResult) advice(ion int) string {
	best, _ := r.bestStatic()
	var fifo staticRun
	for _, st := range r.static {
		if strings.EqualFold(st.label, "fifo") {
			fifo = st
		}
	}
	switch {
	case fifo.label == "":
		return ""
	case best.label == fifo.label:
		return fmt.Sprintf("this job: FIFO on %s (simulated): no TWINS window beats it; the learning Council reaches %.2f of its bandwidth",
			counted(ion, "I/O node"), r.learned.Bandwidth/best.res.Bandwidth)
	}
	gain := fifo.res.Makespan.Seconds()/best.res.Makespan.Seconds() - 1
	return fmt.Sprintf("this job: TWINS %s, %.0f%% faster than FIFO on %s (simulated); the learning Council reaches %.2f of its bandwidth",
		best.label, 100*gain, counted(ion, "I/O node"), r.learned.Bandwidth/best.res.Bandwidth)
}

// replayReport is the HTML form of a replay: each setting's makespan,
// plotted, and the advice.
func replayReport(path string, l *darshan.Log, desc, advice string, r learnResult) *eval.Report {
	best, _ := r.bestStatic()
	t := eval.Table{Title: "Makespan per setting", Header: []string{"setting", "makespan (s)", "bandwidth (MB/s)", "learning / setting (bandwidth)"}}
	var bars []report.Bar
	add := func(label string, res sim.Result, color string) {
		t.Rows = append(t.Rows, []string{label, fmt.Sprintf("%.3f", res.Makespan.Seconds()), fmt.Sprintf("%.1f", res.Bandwidth/1e6),
			fmt.Sprintf("%.3f", r.learned.Bandwidth/res.Bandwidth)})
		bars = append(bars, report.Bar{Label: label, Value: res.Makespan.Seconds(), Note: fmt.Sprintf("%.3g", res.Makespan.Seconds()), Color: color})
	}
	for _, st := range r.static {
		color := ""
		if st.label == best.label {
			color = "#4a9a5b"
		}
		add(st.label, st.res, color)
	}
	add("learning", r.learned, "#c7873e")
	fig := template.HTML(report.BarChart("Makespan of the job's I/O (lower is better)", "seconds", bars, 760, 280))
	return &eval.Report{Title: "Darshan log replayed in the simulator", Command: commandLine(),
		Intro:    fmt.Sprintf("%s: %s, %d processes (Darshan log format %s). %s", path, l.Exe, l.Job.Procs, l.Version, desc),
		Sections: []eval.Section{{Title: "Advice", Text: advice, Tables: []eval.Table{t}, Figures: []template.HTML{fig}}}}
}
