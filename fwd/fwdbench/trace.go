package fwdbench

import (
	"context"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// TraceOptions configure RunTrace. Zero fields take the defaults listed.
type TraceOptions struct {
	// Dir is the directory on the forwarder holding the trace's files
	// (default "replay").
	Dir string
	// Clients are extra connections; processes are spread over the client
	// passed to RunTrace and these in blocks of consecutive processes, as
	// MPI places ranks on nodes (default: just the one).
	Clients []*client.Client
	// Seed varies the content written (default 0).
	Seed uint64
	// TimeScale multiplies the trace's think times (0: 1, as in the trace;
	// negative: none, each process issues back to back).
	TimeScale float64
	// Keep leaves the files in place (default: unlinked at the end).
	Keep bool
}

// TraceResult is the outcome of RunTrace.
type TraceResult struct {
	Processes int           // processes that issued requests
	Requests  int64         // requests completed
	Read      int64         // bytes read (and checked)
	Written   int64         // bytes written
	Makespan  time.Duration // from the start of the first process to the end of the last, think times included
	MeanLat   time.Duration // per request, think times excluded
	MaxLat    time.Duration
}

// RunTrace replays a recorded workload through the forwarder behind c (and
// o.Clients): it creates the trace's files under o.Dir, writes Fill's
// content over every range the trace reads (untimed, so that every read
// has known bytes to check whatever order the processes run in), then runs
// every process in a goroutine of its own, issuing its requests in order,
// one at a time, each after its think time (scaled by o.TimeScale). Writes
// carry Fill's content of their range (the same bytes the ranges already
// hold or will), and every byte read is checked against it. It removes the
// files unless o.Keep. A read that differs returns the result so far and
// an error wrapping ErrVerify.
func RunTrace(ctx context.Context, c *client.Client, tr workload.Trace, o TraceOptions) (TraceResult, error) {
	clients := forwarder(append([]*client.Client{c}, o.Clients...))
	dir := o.Dir
	if dir == "" {
		dir = "replay"
	}
	names := tr.Files()
	name := func(file int32) string { return path.Join(dir, names[file]) }
	if err := clients.prepare(dir); err != nil {
		return TraceResult{}, err
	}
	for i := range names {
		if err := clients.create(name(int32(i))); err != nil {
			return TraceResult{}, err
		}
	}
	if err := prefill(ctx, c, tr, name, o.Seed); err != nil {
		return TraceResult{}, err
	}
	res, err := replayTrace(ctx, clients, tr, name, o)
	if err != nil {
		return res, err
	}
	if !o.Keep {
		for i := range names {
			if err := clients.remove(name(int32(i))); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// fillChunk bounds the buffer that writes a long range's content.
const fillChunk = 4 << 20

// prefill writes Fill's content over every range tr reads.
func prefill(ctx context.Context, c *client.Client, tr workload.Trace, name func(int32) string, seed uint64) error {
	cur, err := tr.Cursor()
	if err != nil {
		return err
	}
	files := map[int32]*client.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var buf []byte
	for p := range tr.Processes() {
		for {
			r, ok, err := cur.Next(p)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if r.Op != rw.Read {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			f := files[r.File]
			if f == nil {
				if f, err = c.Open(name(r.File)); err != nil {
					return err
				}
				files[r.File] = f
			}
			for off, end := r.Offset, r.Offset+r.Length; off < end; {
				n := min(end-off, fillChunk)
				if int64(cap(buf)) < n {
					buf = make([]byte, n)
				}
				b := buf[:n]
				Fill(b, seed, int(r.File), off)
				if _, err := f.WriteAt(b, off); err != nil {
					return fmt.Errorf("bench: writing what %s is read: %w", name(r.File), err)
				}
				off += n
			}
		}
	}
	return nil
}

// verifyChunk is how much of a read filled checks at a time.
const verifyChunk = 64 << 10

// filled reports whether b, read at off of file, holds Fill's content,
// checking it a chunk at a time in scratch; if not, at is the offset of the
// first chunk that differs.
func filled(b, scratch []byte, seed uint64, file int, off int64) (at int64, ok bool) {
	for i := 0; i < len(b); i += len(scratch) {
		c := b[i:min(i+len(scratch), len(b))]
		w := scratch[:len(c)]
		Fill(w, seed, file, off+int64(i))
		if string(c) != string(w) {
			return off + int64(i), false
		}
	}
	return 0, true
}

// replayTrace runs the timed replay: one goroutine per process, reading its
// requests from one cursor shared under a lock.
func replayTrace(ctx context.Context, clients forwarder, tr workload.Trace, name func(int32) string, o TraceOptions) (TraceResult, error) {
	cur, err := tr.Cursor()
	if err != nil {
		return TraceResult{}, err
	}
	scale := o.TimeScale
	if scale == 0 {
		scale = 1
	}
	var (
		mu                      sync.Mutex // cur
		wg                      sync.WaitGroup
		errOnce                 sync.Once
		first                   error
		reqs, read, written     atomic.Int64
		latSum, latMax, started atomic.Int64
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) { errOnce.Do(func() { first = err; cancel() }) }
	start := time.Now()
	for proc := range tr.Processes() {
		wg.Go(func() {
			files := map[int32]*client.File{}
			defer func() {
				for _, f := range files {
					f.Close()
				}
			}()
			var buf []byte
			want := make([]byte, verifyChunk)
			for n := 0; ; n++ {
				mu.Lock()
				r, ok, err := cur.Next(proc)
				mu.Unlock()
				if err != nil {
					fail(err)
					return
				}
				if !ok {
					return
				}
				if n == 0 {
					started.Add(1)
				}
				if think := time.Duration(float64(r.Think) * scale); think > 0 {
					t := time.NewTimer(think)
					select {
					case <-ctx.Done():
						t.Stop()
						fail(ctx.Err())
						return
					case <-t.C:
					}
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				f := files[r.File]
				if f == nil {
					if f, err = clients[ClientOf(proc, tr.Processes(), len(clients))].Open(name(r.File)); err != nil {
						fail(err)
						return
					}
					f.Process = uint32(proc)
					files[r.File] = f
				}
				if int64(cap(buf)) < r.Length {
					buf = make([]byte, r.Length)
				}
				b := buf[:r.Length]
				var t0 time.Time
				if r.Op == rw.Write {
					Fill(b, o.Seed, int(r.File), r.Offset)
					t0 = time.Now()
					if _, err := f.WriteAt(b, r.Offset); err != nil {
						fail(fmt.Errorf("bench: process %d, request %d: %w", proc, n, err))
						return
					}
					written.Add(r.Length)
				} else {
					t0 = time.Now()
					if k, err := f.ReadAt(b, r.Offset); err != nil {
						fail(fmt.Errorf("%w: process %d, request %d read %d of %d bytes at %d of %s: %v", ErrVerify, proc, n, k, r.Length, r.Offset, name(r.File), err))
						return
					}
				}
				lat := int64(time.Since(t0))
				if r.Op == rw.Read {
					if at, ok := filled(b, want, o.Seed, int(r.File), r.Offset); !ok {
						fail(fmt.Errorf("%w: process %d, request %d, %s bytes [%d, %d): byte %d differs", ErrVerify, proc, n, name(r.File), r.Offset, r.Offset+r.Length, at))
						return
					}
					read.Add(r.Length)
				}
				reqs.Add(1)
				latSum.Add(lat)
				for m := latMax.Load(); lat > m && !latMax.CompareAndSwap(m, lat); m = latMax.Load() {
				}
			}
		})
	}
	wg.Wait()
	res := TraceResult{Processes: int(started.Load()), Requests: reqs.Load(), Read: read.Load(), Written: written.Load(),
		Makespan: time.Since(start), MaxLat: time.Duration(latMax.Load())}
	if res.Requests > 0 {
		res.MeanLat = time.Duration(latSum.Load() / res.Requests)
	}
	return res, first
}
