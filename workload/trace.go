package workload

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// Request is one access of a recorded workload (a Trace): what a process
// asks for after waiting Think since its previous request completed (since
// the phase started, for its first request).
type Request struct {
	Think  time.Duration // >= 0
	Offset int64         // byte offset in the file, >= 0
	Length int64         // bytes, > 0
	File   int32         // index in the trace's Files
	Op     rw.Op
}

// ErrBadRequest is wrapped by Request.Validate's errors.
var ErrBadRequest = errors.New("workload: invalid trace request")

// Validate checks r against a trace of files files.
func (r Request) Validate(files int) error {
	switch {
	case r.File < 0 || int(r.File) >= files:
		return fmt.Errorf("%w: file %d of %d", ErrBadRequest, r.File, files)
	case r.Offset < 0 || r.Length <= 0 || r.Offset > math.MaxInt64-r.Length:
		return fmt.Errorf("%w: %d bytes at offset %d", ErrBadRequest, r.Length, r.Offset)
	case !r.Op.Valid():
		return fmt.Errorf("%w: %w", ErrBadRequest, rw.ErrBadOp)
	case r.Think < 0:
		return fmt.Errorf("%w: think time %v", ErrBadRequest, r.Think)
	}
	return nil
}

// Trace is a recorded workload: each process's requests in the order it
// issued them, on named files; a replay issues them one at a time per
// process, synchronously, each after its think time (package sim,
// Config.Traces). Processes are numbered 0 to Processes()-1 (MPI ranks).
// A Trace may stream its requests from storage: a replay reads them
// through a Cursor, one at a time per process. Every Cursor of a Trace
// yields the same requests, so replays repeat exactly.
type Trace interface {
	// Processes is the number of processes (>= 1); one may issue nothing.
	Processes() int
	// Files names the files, Request.File indexing it, relative to the
	// run's directory (see TraceFileName): the simulator stripes a file by
	// its name (layout.Layout.FirstServer) as the daemon's backends do.
	Files() []string
	// Cursor returns a reader of the requests from the start.
	Cursor() (Cursor, error)
}

// Cursor reads a Trace's requests, each process's in order. Not safe for
// concurrent use.
type Cursor interface {
	// Next returns process proc's next request; ok is false when the
	// process has issued all of them.
	Next(proc int) (r Request, ok bool, err error)
}

// TraceFileName is the name of file index file of a trace converted from
// a log, relative to the run's directory: "trace.00012.dat". The simulator
// stripes these names (layout.Layout.FirstServer) as a forwarder's
// backends would stripe the files a replay creates under them.
func TraceFileName(file int) string { return fmt.Sprintf("trace.%05d.dat", file) }

// Recorded is a Trace held in memory: Procs[p] is process p's requests in
// order, Names the files. It must not change while a replay reads it.
type Recorded struct {
	Names []string
	Procs [][]Request
}

var _ Trace = (*Recorded)(nil)

// Processes is len(Procs).
func (t *Recorded) Processes() int { return len(t.Procs) }

// Files is Names.
func (t *Recorded) Files() []string { return t.Names }

// Cursor returns a reader of the requests from the start.
func (t *Recorded) Cursor() (Cursor, error) {
	return &recordedCursor{t: t, next: make([]int, len(t.Procs))}, nil
}

// Requests is the number of requests of every process.
func (t *Recorded) Requests() int64 {
	var n int64
	for _, p := range t.Procs {
		n += int64(len(p))
	}
	return n
}

// Bytes is the bytes the trace reads and writes.
func (t *Recorded) Bytes() (read, written int64) {
	for _, p := range t.Procs {
		for _, r := range p {
			if r.Op == rw.Write {
				written += r.Length
			} else {
				read += r.Length
			}
		}
	}
	return read, written
}

type recordedCursor struct {
	t    *Recorded
	next []int
}

func (c *recordedCursor) Next(proc int) (Request, bool, error) {
	if proc < 0 || proc >= len(c.next) {
		return Request{}, false, fmt.Errorf("%w: no process %d of %d", ErrBadRequest, proc, len(c.next))
	}
	reqs := c.t.Procs[proc]
	i := c.next[proc]
	if i >= len(reqs) {
		return Request{}, false, nil
	}
	c.next[proc]++
	return reqs[i], true, nil
}

// Record reads every request of t into memory, through one cursor.
func Record(t Trace) (*Recorded, error) {
	c, err := t.Cursor()
	if err != nil {
		return nil, err
	}
	r := &Recorded{Names: t.Files(), Procs: make([][]Request, t.Processes())}
	for p := range r.Procs {
		for {
			q, ok, err := c.Next(p)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			r.Procs[p] = append(r.Procs[p], q)
		}
	}
	return r, nil
}
