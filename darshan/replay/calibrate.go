package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/sim"
)

// ErrNoFit: the log shows no I/O time to fit the model to.
var ErrNoFit = errors.New("replay: nothing to fit the model to")

// Traced is what a log shows of its job's I/O: the bytes it moved and the
// time it took, the target of a fit (Fit).
type Traced struct {
	Bytes int64         // bytes read and written
	Time  time.Duration // the I/O's duration
	// Source says where Time comes from: "DXT span" (the trace's first
	// access's start to its last one's end, think time included) or
	// "POSIX counters" (the slowest process's time in reads, writes and
	// metadata calls).
	Source string
}

// Bandwidth is the traced bytes per second.
func (t Traced) Bandwidth() float64 { return float64(t.Bytes) / t.Time.Seconds() }

// TracedDXT is the I/O a converted DXT trace shows: its bytes over its
// span.
func TracedDXT(info Info) Traced {
	return Traced{Bytes: info.Read + info.Written, Time: info.Span, Source: "DXT span"}
}

// TracedCounters is the I/O the log's POSIX counters show: each process's
// time in reads, writes and metadata calls (POSIX_F_READ_TIME,
// POSIX_F_WRITE_TIME, POSIX_F_META_TIME) on the files it opened alone,
// plus its share (1/procs) of the same times of the files every rank
// shared (whose counters are summed over the ranks); Time is the largest
// of the processes', Bytes every record's bytes read and written.
func TracedCounters(l *darshan.Log) (Traced, error) {
	procs := max(l.Job.Procs, 1)
	perRank := map[int64]float64{}
	var shared float64
	var bytes int64
	for r, err := range l.Records(darshan.POSIX) {
		if err != nil {
			return Traced{}, err
		}
		var t float64
		for _, n := range []string{"POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME"} {
			if v, ok := r.FCounter(n); ok && v > 0 && !math.IsInf(v, 0) {
				t += v
			}
		}
		for _, n := range []string{"POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"} {
			if v, ok := r.Counter(n); ok && v > 0 {
				bytes += v
			}
		}
		if r.Rank < 0 {
			shared += t
		} else {
			perRank[r.Rank] += t
		}
	}
	slowest := shared / float64(procs)
	for _, t := range perRank {
		slowest = max(slowest, t+shared/float64(procs))
	}
	if bytes == 0 || !(slowest > 0) || slowest > 1e9 {
		return Traced{}, fmt.Errorf("%w: the POSIX counters show %d bytes in %.3g s", ErrNoFit, bytes, slowest)
	}
	return Traced{Bytes: bytes, Time: time.Duration(slowest * float64(time.Second)), Source: "POSIX counters"}, nil
}

// FitTolerance is how far, as a ratio, a fitted model's simulated time may
// be from the traced one for its advice to be trusted (1.5: within a
// factor of 1.5 either way).
const FitTolerance = 1.5

// Fitted is a data-server model fitted to a traced job: the service time
// scale (sim.Config.ServerTimeScale) under which the simulator, running
// the job once under FIFO (the traced system had no forwarding
// scheduler), moves its bytes at the traced bandwidth.
type Fitted struct {
	Scale float64 // the fitted ServerTimeScale (relative to the configuration's)
	// Simulated and Target are the fitted model's makespan of one run of
	// the workload and the time the traced bandwidth gives its bytes.
	Simulated, Target time.Duration
	Unfitted          time.Duration // the makespan before the fit (scale 1)
	Runs              int           // simulations the fit took
}

// Ratio is Simulated over Target (1: exact).
func (f Fitted) Ratio() float64 { return f.Simulated.Seconds() / f.Target.Seconds() }

// Trusted reports whether the fitted model reproduces the traced time
// within FitTolerance.
func (f Fitted) Trusted() bool {
	r := f.Ratio()
	return r <= FitTolerance && r >= 1/FitTolerance
}

// Fit scales the data servers' service time of cfg (one run of the job's
// workload: its Traces or Patterns once) until the simulator's makespan
// under FIFO matches the traced bandwidth over the workload's bytes, by a
// secant search on the logarithm of the scale between 1/1000 and 1000 (at
// most 8 simulations, stopping within 5%). The model's other parts
// (network, client, think time) are kept: where they alone exceed the
// traced time, no scale fits, and the Fitted result says by how much
// (Trusted false). cfg's ServerTimeScale (0: 1) is the starting point.
func Fit(ctx context.Context, cfg sim.Config, tr Traced) (Fitted, error) {
	if tr.Bytes <= 0 || tr.Time <= 0 {
		return Fitted{}, fmt.Errorf("%w: %d bytes in %v", ErrNoFit, tr.Bytes, tr.Time)
	}
	cfg.Scheduler = "fifo"
	base := cfg.ServerTimeScale
	if base == 0 {
		base = 1
	}
	f := Fitted{}
	run := func(scale float64) (time.Duration, int64, error) {
		c := cfg
		c.ServerTimeScale = base * scale
		res, err := sim.Run(ctx, c, sim.Hooks{})
		f.Runs++
		return res.Makespan, res.Bytes, err
	}
	t1, moved, err := run(1)
	if err != nil {
		return Fitted{}, err
	}
	if moved <= 0 || t1 <= 0 {
		return Fitted{}, fmt.Errorf("%w: the workload moves no bytes", ErrNoFit)
	}
	f.Unfitted = t1
	f.Target = time.Duration(float64(moved) / tr.Bandwidth() * float64(time.Second))
	// Secant on (log scale, log makespan), from scale 1 and a tenth or
	// ten times it, toward the target.
	lt := math.Log(f.Target.Seconds())
	x0, y0 := 0.0, math.Log(t1.Seconds())
	x1 := math.Log(10)
	if y0 > lt {
		x1 = -x1
	}
	best, bestT := 0.0, t1
	const lo, hi = -3 * math.Ln10, 3 * math.Ln10
	for range 7 {
		if math.Abs(math.Log(bestT.Seconds())-lt) < math.Log(1.05) {
			break
		}
		t, _, err := run(math.Exp(x1))
		if err != nil {
			return Fitted{}, err
		}
		y1 := math.Log(t.Seconds())
		if math.Abs(y1-lt) < math.Abs(math.Log(bestT.Seconds())-lt) {
			best, bestT = x1, t
		}
		slope := (y1 - y0) / (x1 - x0)
		if !(slope > 1e-3) {
			break // the servers' time no longer moves the makespan
		}
		x0, y0 = x1, y1
		next := min(hi, max(lo, x1+(lt-y1)/slope))
		if next == x1 {
			break // at a bound of the scale
		}
		x1 = next
	}
	f.Scale, f.Simulated = math.Exp(best), bestT
	return f, nil
}
