package fwdbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/internal/cpustat"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// ErrVerify reports bytes read back that differ from those written.
var ErrVerify = errors.New("bench: read-back verification failed")

// ErrNotDir reports a direct run's directory that is not a directory.
var ErrNotDir = errors.New("bench: not a directory")

// Options configure Run. Zero fields take the defaults listed.
type Options struct {
	// Dir is the directory on the forwarder holding the files (default
	// "bench"); RunDirect takes its directory as an argument instead.
	Dir string
	// Clients are extra connections; processes are spread over the client
	// passed to Run and these in blocks of consecutive processes, as MPI
	// places ranks on nodes (default: just the one).
	Clients []*client.Client
	// Seed varies the content written (default 0).
	Seed uint64
	// NoVerify skips the read-back phase.
	NoVerify bool
	// NoFill times the I/O alone: each process fills its buffer once and
	// writes it in every request, and the read phase reads without
	// checking (the content no longer tells where bytes came from). By
	// default every request's content is generated (Fill) and every byte
	// read back is checked, as IOR does with its verification options;
	// that work is in the makespan of forwarded and direct runs alike.
	NoFill bool
	// Keep leaves the files in place (default: unlinked at the end).
	Keep bool
	// ReadPasses is how many times the read phase reads each process's
	// requests, in a row through the one handle the process opened, with
	// no barrier between passes (default 1): a longer read phase of the
	// same access pattern, as an application re-reading its input.
	ReadPasses int
	// Progress receives a line every ProgressEvery during a phase and one
	// at its end (nil: none).
	Progress io.Writer
	// ProgressEvery is the interval of progress lines (default 2 s).
	ProgressEvery time.Duration
	// TransfersOnly times each phase over its transfers alone: every
	// process opens its file first, the clock starts once all have, and it
	// stops at the last process's last request, before the files are
	// closed (IOR reports open and close apart from the transfers). The
	// time the processes then take to close their files, which waits for a
	// mount's write-behind, is Phase.Close. By default the makespan runs
	// from the first open to the last close.
	TransfersOnly bool
	// ForwarderCPU, if set, returns the forwarding daemon's CPU time so far
	// (MetricsCPU reads it from the daemon's /metrics); a forwarded run
	// then records the daemon's CPU over each phase (Phase.ForwarderCPU).
	ForwarderCPU func() (time.Duration, error)
	// Job is the job every process runs under on the forwarder (its QoS
	// rules and per-job metrics; default none: the client's own).
	Job string
	// Jobs, if 2 or more, splits the processes into that many jobs in
	// blocks of consecutive processes (JobOf), named Job.1 ... (or
	// bench.1 ...), as several applications sharing the I/O node.
	Jobs int
}

// Phase is the outcome of one access phase, timed like IOR: the makespan
// runs from the start of the first process to the end of the last.
type Phase struct {
	Op        rw.Op
	Bytes     int64
	Requests  int64
	Makespan  time.Duration
	Bandwidth float64 // bytes per second over the makespan
	MaxLat    time.Duration
	MeanLat   time.Duration
	// CPU is this process's CPU time (user and system) over the phase: in
	// a direct run its whole I/O, through a forwarder the client's side.
	CPU time.Duration
	// ForwarderCPU is the daemon's CPU time over the phase, when known
	// (Options.ForwarderCPU set and answering at both ends).
	ForwarderCPU      time.Duration
	ForwarderCPUKnown bool
	// Steal is the fraction of the machine's CPU time that the
	// hypervisor gave to other guests over the phase (Linux's steal time,
	// /proc/stat), when known (StealKnown). On a shared virtual machine it
	// is the noise that moves forwarder/direct ratios most (see
	// Comparison.Print).
	Steal      float64
	StealKnown bool
	// ProcessEnds holds, for each process, when it finished its last
	// request, from the phase's start: the phase's tail, process by
	// process (ClientOf says which connection, or I/O node, each was on).
	ProcessEnds []time.Duration
	// Close, with Options.TransfersOnly, is the time from the last
	// request's end until every process has closed its file, outside the
	// makespan (on a mount with write-behind, the writes still in flight).
	Close time.Duration
}

// CPUPerGiB is the phase's CPU time per GiB moved: this process's and,
// when known, the daemon's. On a shared machine another tenant's load
// moves it less than it moves bandwidth.
func (ph Phase) CPUPerGiB() float64 {
	if ph.Bytes <= 0 {
		return 0
	}
	return (ph.CPU + ph.ForwarderCPU).Seconds() / (float64(ph.Bytes) / (1 << 30))
}

// Result is the outcome of Run.
type Result struct {
	Pattern  workload.Pattern
	Write    Phase
	Read     Phase // zero with NoVerify
	Verified bool  // every byte read back was checked and matched (not with NoVerify or NoFill)
	Direct   bool  // RunDirect's: no forwarder
}

// Measured is the phase of the pattern's operation.
func (r Result) Measured() Phase {
	if r.Pattern.Op == rw.Read {
		return r.Read
	}
	return r.Write
}

// FileName is the name of file index i of pattern p under dir.
func FileName(dir string, p workload.Pattern, i int) string {
	return path.Join(dir, p.FileName(i))
}

// Fill writes the benchmark's content of file file at byte offset off into
// b: the same bytes whatever the request boundaries, so any reader can check
// any range.
func Fill(b []byte, seed uint64, file int, off int64) {
	key := seed*0x9E3779B97F4A7C15 ^ uint64(file+1)*0xC2B2AE3D27D4EB4F
	word := func(w int64) uint64 {
		x := uint64(w)*0xD6E8FEB86659FD93 ^ key
		x ^= x >> 32
		return x * 0xD6E8FEB86659FD93
	}
	i := 0
	for ; i < len(b) && (off+int64(i))%8 != 0; i++ {
		o := off + int64(i)
		b[i] = byte(word(o/8) >> (8 * (o % 8)))
	}
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], word((off+int64(i))/8))
	}
	for ; i < len(b); i++ {
		o := off + int64(i)
		b[i] = byte(word(o/8) >> (8 * (o % 8)))
	}
}

// Run creates the pattern's files under o.Dir on the forwarder behind c
// (and o.Clients), runs the write phase, then (unless NoVerify) the read
// phase checking every byte, and removes the files (unless Keep). An error
// stops the run; a verification failure returns the result so far and an
// error wrapping ErrVerify.
func Run(ctx context.Context, c *client.Client, p workload.Pattern, o Options) (Result, error) {
	t := forwarder(append([]*client.Client{c}, o.Clients...))
	if err := t.bindJobs(p.Processes, o); err != nil {
		return Result{}, err
	}
	return run(ctx, t, fwdDir(o), p, o)
}

// RunDirect runs the pattern as Run does, on the local directory dir with
// no forwarder: the baseline of the same workload, for forwarder over direct
// ratios. dir must exist; the files are named by FileName(dir, p, i),
// created or truncated, and each process opens its file with os.OpenFile and
// moves its requests with WriteAt and ReadAt (pwrite, pread) through a
// buffer of its own. Content, verification, timing and removal are Run's;
// o.Dir and o.Clients are not used.
func RunDirect(ctx context.Context, dir string, p workload.Pattern, o Options) (Result, error) {
	o.ForwarderCPU = nil
	if o.Job != "" || o.Jobs > 1 {
		return Result{}, ErrJobsDirect
	}
	res, err := run(ctx, direct{}, dir, p, o)
	res.Direct = true
	return res, err
}

// Verify reads the files a Run with the same pattern and options left
// (Keep) and checks every byte, as Run's read phase does.
func Verify(ctx context.Context, c *client.Client, p workload.Pattern, o Options) (Phase, error) {
	if err := p.Validate(); err != nil {
		return Phase{}, err
	}
	t := forwarder(append([]*client.Client{c}, o.Clients...))
	if err := t.bindJobs(p.Processes, o); err != nil {
		return Phase{}, err
	}
	return phase(ctx, t, fwdDir(o), p, o, rw.Read)
}

// VerifyDirect is Verify for the files a RunDirect on dir left (Keep).
func VerifyDirect(ctx context.Context, dir string, p workload.Pattern, o Options) (Phase, error) {
	if err := p.Validate(); err != nil {
		return Phase{}, err
	}
	o.ForwarderCPU = nil
	return phase(ctx, direct{}, dir, p, o, rw.Read)
}

// fwdDir is the forwarder's directory of the files.
func fwdDir(o Options) string {
	if o.Dir == "" {
		return "bench"
	}
	return o.Dir
}

// run is Run on target t, the files under dir.
func run(ctx context.Context, t target, dir string, p workload.Pattern, o Options) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Pattern: p}
	if err := t.prepare(dir); err != nil {
		return res, err
	}
	for i := 0; i < p.Files(); i++ {
		if err := t.create(FileName(dir, p, i)); err != nil {
			return res, err
		}
	}
	var err error
	res.Write, err = phase(ctx, t, dir, p, o, rw.Write)
	if err != nil {
		return res, err
	}
	progress(o.Progress, res.Write)
	if !o.NoVerify {
		res.Read, err = phase(ctx, t, dir, p, o, rw.Read)
		if err != nil {
			return res, err
		}
		res.Verified = !o.NoFill // NoFill reads without checking
		progress(o.Progress, res.Read)
	}
	if !o.Keep {
		for i := 0; i < p.Files(); i++ {
			if err := t.remove(FileName(dir, p, i)); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func progress(w io.Writer, ph Phase) {
	if w != nil {
		fmt.Fprintf(w, "bench: %s phase: %s in %.3f s, %.1f MiB/s\n", ph.Op, Size(ph.Bytes), ph.Makespan.Seconds(), ph.Bandwidth/(1<<20))
	}
}

// phase runs one access phase of the pattern on t, every process in a
// goroutine of its own.
func phase(ctx context.Context, t target, dir string, p workload.Pattern, o Options, op rw.Op) (Phase, error) {
	n := p.RequestsPerProcess()
	passes := 1
	if op == rw.Read && o.ReadPasses > 1 {
		passes = o.ReadPasses
	}
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
		latSum  atomic.Int64
		latMax  atomic.Int64
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		errOnce.Do(func() { first = err; cancel() })
	}
	// The daemon's CPU is known if the probe answers at both ends.
	probe := o.ForwarderCPU
	var fwdCPU0 time.Duration
	if probe != nil {
		var err error
		if fwdCPU0, err = probe(); err != nil {
			probe = nil
		}
	}
	// With TransfersOnly every process opens its file before the clock
	// starts, and closes it once the clock has stopped (closing), when
	// every process is done with its requests (xfers).
	closing := make(chan struct{})
	var opens, xfers sync.WaitGroup
	handles := make([]handle, p.Processes)
	if o.TransfersOnly {
		opens.Add(p.Processes)
		for proc := range p.Processes {
			go func() {
				defer opens.Done()
				file, _ := p.Request(proc, 0)
				h, err := t.open(proc, p.Processes, FileName(dir, p, file), int(p.RequestSize), op)
				if err != nil {
					fail(err)
					return
				}
				handles[proc] = h
			}()
		}
		opens.Wait()
		if first != nil {
			for _, h := range handles {
				if h != nil {
					h.close()
				}
			}
			return Phase{Op: op}, first
		}
	}
	stat0, statErr := cpustat.Read()
	cpu0 := processCPU()
	start := time.Now()
	var moved atomic.Int64
	total := p.BytesPerProcess() * int64(p.Processes) * int64(passes)
	if o.Progress != nil {
		every := o.ProgressEvery
		if every <= 0 {
			every = 2 * time.Second
		}
		tick := time.NewTicker(every)
		stop := make(chan struct{})
		var reporter sync.WaitGroup
		defer func() { close(stop); reporter.Wait(); tick.Stop() }()
		reporter.Add(1)
		go func() {
			defer reporter.Done()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					m := moved.Load()
					fmt.Fprintf(o.Progress, "bench: %s: %.0f%% (%s of %s), %.1f MiB/s\n", op, 100*float64(m)/float64(total),
						Size(m), Size(total), float64(m)/(1<<20)/time.Since(start).Seconds())
				}
			}
		}()
	}
	ends := make([]time.Duration, p.Processes)
	for proc := 0; proc < p.Processes; proc++ {
		wg.Add(1)
		xfers.Add(1)
		go func() {
			defer wg.Done()
			h := handles[proc]
			if h == nil {
				file, _ := p.Request(proc, 0)
				var err error
				if h, err = t.open(proc, p.Processes, FileName(dir, p, file), int(p.RequestSize), op); err != nil {
					ends[proc] = time.Since(start)
					xfers.Done()
					fail(err)
					return
				}
			}
			defer func() {
				if o.TransfersOnly {
					ends[proc] = time.Since(start)
					xfers.Done()
					<-closing // the clock stops before any file is closed
					h.close()
					return
				}
				h.close()
				ends[proc] = time.Since(start)
				xfers.Done()
			}()
			buf := h.buf()
			want := make([]byte, p.RequestSize)
			for i := 0; i < n*passes; i++ {
				if ctx.Err() != nil {
					fail(ctx.Err())
					return
				}
				file, off := p.Request(proc, i%n)
				t0 := time.Now()
				if op == rw.Write {
					if !o.NoFill || i == 0 {
						Fill(buf, o.Seed, file, off)
					}
					t0 = time.Now()
					if _, err := h.writeAt(off); err != nil {
						fail(err)
						return
					}
				} else {
					if k, err := h.readAt(off); err != nil {
						fail(fmt.Errorf("%w: process %d read %d of %d bytes at %d: %v", ErrVerify, proc, k, len(buf), off, err))
						return
					}
				}
				lat := time.Since(t0)
				moved.Add(int64(len(buf)))
				latSum.Add(int64(lat))
				for {
					m := latMax.Load()
					if int64(lat) <= m || latMax.CompareAndSwap(m, int64(lat)) {
						break
					}
				}
				if op == rw.Read && !o.NoFill {
					Fill(want, o.Seed, file, off)
					if string(buf) != string(want) {
						fail(fmt.Errorf("%w: process %d, %s bytes [%d, %d)", ErrVerify, proc, FileName(dir, p, file), off, off+int64(len(buf))))
						return
					}
				}
			}
		}()
	}
	var span, closeTime time.Duration
	if o.TransfersOnly {
		xfers.Wait()
		span = time.Since(start)
		close(closing)
		wg.Wait()
		closeTime = time.Since(start) - span
	} else {
		wg.Wait()
		span = time.Since(start)
	}
	reqs := int64(n) * int64(p.Processes) * int64(passes)
	ph := Phase{Op: op, Bytes: total, Requests: reqs, Makespan: span,
		MaxLat: time.Duration(latMax.Load()), CPU: processCPU() - cpu0, ProcessEnds: ends, Close: closeTime}
	if stat1, err := cpustat.Read(); err == nil && statErr == nil {
		ph.Steal, ph.StealKnown = stat1.StolenSince(stat0)
	}
	if probe != nil {
		if fwdCPU1, err := probe(); err == nil {
			ph.ForwarderCPU, ph.ForwarderCPUKnown = fwdCPU1-fwdCPU0, true
		}
	}
	if reqs > 0 {
		ph.MeanLat = time.Duration(latSum.Load() / reqs)
	}
	if span > 0 {
		ph.Bandwidth = float64(ph.Bytes) / span.Seconds()
	}
	return ph, first
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Print writes the result as IOR does: a summary of the pattern, then one
// line per phase with bandwidth, transfer size, total and makespan, then
// the CPU time per GiB of each phase.
func (r Result) Print(w io.Writer) {
	p := r.Pattern
	printPattern(w, p)
	fmt.Fprintf(w, "\n%-7s %12s %11s %12s %12s %12s %12s\n", "access", "bw(MiB/s)", "xfer(KiB)", "total(MiB)", "makespan(s)", "mean lat(ms)", "max lat(ms)")
	fmt.Fprintf(w, "%-7s %12s %11s %12s %12s %12s %12s\n", "------", "---------", "---------", "----------", "-----------", "------------", "-----------")
	for _, ph := range []Phase{r.Write, r.Read} {
		if ph.Op == 0 {
			continue
		}
		fmt.Fprintf(w, "%-7s %12.2f %11.2f %12.2f %12.4f %12.3f %12.3f\n", ph.Op, ph.Bandwidth/(1<<20),
			float64(p.RequestSize)/1024, float64(ph.Bytes)/(1<<20), ph.Makespan.Seconds(),
			float64(ph.MeanLat)/1e6, float64(ph.MaxLat)/1e6)
	}
	fmt.Fprintln(w)
	for _, ph := range []Phase{r.Write, r.Read} {
		if ph.Op == 0 {
			continue
		}
		gib := float64(ph.Bytes) / (1 << 30)
		switch {
		case r.Direct:
			fmt.Fprintf(w, "cpu %-6s: %.3f s/GiB\n", ph.Op, ph.CPUPerGiB())
		case ph.ForwarderCPUKnown:
			fmt.Fprintf(w, "cpu %-6s: %.3f s/GiB (this process %.3f, forwarder %.3f)\n", ph.Op, ph.CPUPerGiB(),
				ph.CPU.Seconds()/gib, ph.ForwarderCPU.Seconds()/gib)
		default:
			fmt.Fprintf(w, "cpu %-6s: %.3f s/GiB in this process (the forwarder's not measured)\n", ph.Op, ph.CPUPerGiB())
		}
	}
	for _, ph := range []Phase{r.Write, r.Read} {
		if ph.Op != 0 && ph.Close > 0 {
			fmt.Fprintf(w, "close %-6s: %.4f s after the last request, outside the makespan\n", ph.Op, ph.Close.Seconds())
		}
	}
	for _, ph := range []Phase{r.Write, r.Read} {
		if ph.Op != 0 && ph.StealKnown {
			fmt.Fprintf(w, "steal %-6s: %.1f%% of the machine's CPU time went to other guests of the hypervisor\n", ph.Op, 100*ph.Steal)
		}
	}
	if r.Verified {
		fmt.Fprintf(w, "\nverification: every byte read back matched\n")
	}
}

// printPattern writes the summary of p that heads Result.Print and
// Comparison.Print.
func printPattern(w io.Writer, p workload.Pattern) {
	fmt.Fprintf(w, "pattern    : %s (class %s)\n", p, p.Class())
	fmt.Fprintf(w, "processes  : %d\nlayout     : %s, %s\nxfer size  : %s\naggregate  : %s\n",
		p.Processes, p.Layout, p.Spatiality, Size(p.RequestSize), Size(p.BytesPerProcess()*int64(p.Processes)))
}

// Size formats bytes with a binary unit ("32KiB", "4GiB", "1000B").
func Size(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}
