package sched

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/rw"
)

// StreamConfig describes a synthetic request stream for benchmarks.
type StreamConfig struct {
	Requests int    // number of requests
	Files    int    // files they spread over (uniformly at random)
	Servers  int    // data servers; a request's queue follows its file's striping
	Size     int64  // request size in bytes (default 32 KiB)
	Stripe   int64  // stripe size in bytes (default 64 KiB)
	Seed     uint64 // PCG seed
}

// Stream returns a seeded stream: each request picks a file at random and
// reads or writes (one operation per file) the next Size bytes of it, so
// requests to one file are contiguous and can be aggregated; the queue is the
// server holding the stripe of the request's offset under the project's one
// striping rule (layout.Layout over Servers servers, file f named
// "stream.F"). A request is not split: Size should not exceed Stripe.
// IDs are 1..Requests; Arrival is left zero.
func Stream(sc StreamConfig) []Request {
	if sc.Size <= 0 {
		sc.Size = 32 << 10
	}
	if sc.Stripe <= 0 {
		sc.Stripe = 64 << 10
	}
	sc.Files = max(sc.Files, 1)
	sc.Servers = max(sc.Servers, 1)
	rng := rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x9e3779b97f4a7c15))
	lay := layout.Layout{StripeSize: sc.Stripe, StripeCount: sc.Servers}
	first := make([]int, sc.Files)
	for f := range first {
		first[f] = lay.FirstServer(fmt.Sprint("stream.", f), sc.Servers)
	}
	cursor := make([]int64, sc.Files)
	var piece [1]layout.Piece
	out := make([]Request, sc.Requests)
	for i := range out {
		f := rng.IntN(sc.Files)
		off := cursor[f]
		cursor[f] += sc.Size
		op := rw.Read
		if f%2 == 1 {
			op = rw.Write
		}
		out[i] = Request{
			ID: uint64(i + 1), Queue: lay.Split(piece[:0], sc.Servers, first[f], off, 1)[0].Server,
			File: uint64(f), Offset: off, Length: sc.Size, Op: op, App: uint32(f % 16),
		}
	}
	return out
}

// Driver pushes requests through a scheduler in virtual time, keeping about
// Backlog requests queued: each Push adds one request, advances the clock by
// Tick, and dispatches and completes batches (immediately, reporting their
// length) until at most Backlog are queued, jumping the clock to retryAt when
// the scheduler asks to wait. It is the steady-state loop of the benchmarks
// and of "adaptio sched bench".
type Driver struct {
	S          Scheduler
	Backlog    int
	Tick       time.Duration
	Now        time.Duration
	Dispatched int // requests dispatched so far
}

// Push adds r (its Arrival is set to the current time) and dispatches down
// to the backlog.
func (d *Driver) Push(r Request) error {
	d.Now += d.Tick
	r.Arrival = d.Now
	if err := d.S.Add(d.Now, r); err != nil {
		return err
	}
	return d.dispatch(d.Backlog)
}

// Drain dispatches and completes everything queued.
func (d *Driver) Drain() error { return d.dispatch(0) }

func (d *Driver) dispatch(backlog int) error {
	for d.S.Len() > backlog {
		b, ok, retry := d.S.Next(d.Now)
		if !ok {
			if retry <= d.Now {
				if d.S.InFlight() == 0 {
					return fmt.Errorf("sched: %s has %d queued, nothing in flight, and dispatches nothing", d.S.Name(), d.S.Len())
				}
				return nil
			}
			d.Now = retry
			continue
		}
		d.Dispatched += len(b.Requests)
		if err := d.S.Complete(d.Now, b.ID, b.Length, 0); err != nil {
			return err
		}
	}
	return nil
}
