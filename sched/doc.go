// Package sched holds adaptio's request schedulers: pure, deterministic state
// machines that decide in which order, and how aggregated, the requests an
// I/O node forwards reach the parallel file system's data servers. It is the
// Go counterpart of the AGIOS library, with IOFSL's FIFO and HBRR and TWINS.
//
// # Usage
//
// The shell (the forwarding daemon, the simulator) holds a Switcher:
//
//	s, err := sched.NewSwitcher("twins", sched.Config{Servers: 8, Node: k, Nodes: n})
//	s.Add(now, req)                     // on each request (error: bad request, nothing queued)
//	for {                               // whenever something happened
//		b, ok, retryAt := s.Next(now)
//		if !ok { break }                // sleep until retryAt (0: until the next Add or Complete)
//		send b to data server b.Queue   // b.Requests stays valid until Complete
//	}
//	s.Complete(now, b.ID, bytes, took)  // when the data server answered
//	s.SetWindow(now, w)                 // the Council's decision (SetParams: any other parameter)
//	s.Switch(now, "fifo")               // change algorithm, keep every queued request
//
// Schedulers never sleep, start goroutines, read the clock or keep globals:
// time is the now argument (it must not go backwards) and a Scheduler is not
// safe for concurrent use. New returns a bare algorithm; every one implements
// Tunable and StatsReporter. Add keeps a request's Arrival when it is set
// (non-zero) and stamps now otherwise.
//
// # Algorithms
//
// A stream below is the queued requests of one (server, file, operation),
// kept in offset order: AGIOS keeps one read and one write queue per file;
// the server is added because a batch goes to one server. Aggregation joins
// requests whose byte ranges are exactly adjacent, up to MaxBatch requests
// and MaxAggregate bytes (a single larger request still goes alone).
//
//	name    what it does                                   reference / ours
//	noop    arrival order, one request per batch            AGIOS NOOP; identical to fifo in a pull scheduler
//	fifo    arrival order, one request per batch            IOFSL FIFO
//	to      arrival order, one request per batch            AGIOS TO (time order)
//	to-agg  oldest request + contiguous stream neighbours   AGIOS TO-agg; ours: merged at dispatch, not at Add
//	sjf     stream with fewest queued bytes, aggregated     AGIOS SJF
//	aioli   FCFS between eligible stream heads; a stream    aIOLi as in AGIOS; ours: quanta grow with time
//	        keeps going for an adaptive time quantum;       (Timeslice) not scheduling steps; no waiting
//	        synchronous (one batch in flight)               for shifts; quantum forgotten when a stream empties
//	mlf     streams round robin, one batch per visit when   AGIOS MLF; ours: time-based quanta as aioli,
//	        the head's quantum covers its size              reads and writes are separate streams
//	sw      order (arrival / SWWindow, App, arrival)        AGIOS SW (App stands for AGIOS's queue_id)
//	hbrr    streams round robin, Quantum bytes per turn,    IOFSL HBRR; ours: a turn sends at least one
//	        batches of up to MaxBatch (16) merged requests  batch, no deficit carried between turns
//	wfq     queues (servers) round robin, Weights[i] x      AGIOS WFQ (2022, byte weights from a file);
//	        Quantum bytes per visit, deficit carried        ours: weights scale Quantum, idle rounds skipped
//	twins   one queue per server, one server per Window,    TWINS (Bez et al.); ours: SkipEmpty variant,
//	        round robin from server Node mod Servers;       run-time Window changes, runs alongside Switch
//	        waits out the window when its queue is empty
//
// TWINS details. Translation rule: I/O node k starts at server k mod Servers
// and visits k+1, k+2, ... (mod Servers). As in AGIOS, the first window
// starts at the first Next that finds requests queued, and a window ends at
// the first Next at or after its end, which moves one server on and starts
// the next window then. With the current queue empty Next returns ok=false
// and retryAt = the window's end; with SkipEmpty (ours) TWINS instead moves
// at once to the next server with requests and starts a window there.
// SetWindow (or SetParams) with a new Window keeps the current window's
// start and sets its end to start + Window (ending it at the next Next if
// that is past).
//
// # Promises tested (property tests over random streams)
//
// Every algorithm: each request is dispatched exactly once and unchanged;
// a batch is one server, file and operation, contiguous, at most MaxBatch
// requests and, when aggregated, at most MaxAggregate bytes; parameter
// changes lose nothing. Order and starvation bounds, per algorithm:
//
//	noop, fifo, to  the oldest queued request goes next; a request waits at most
//	                as many batches as requests were queued when it arrived
//	to-agg          each batch holds the oldest queued request; same bound
//	sw              the first in (window, App, arrival) order goes next; a request
//	                waits at most for those queued at its arrival plus later
//	                arrivals of its window or earlier
//	twins           only the current server is served, inside its window, servers
//	                in translated round robin; per-server arrival order; served
//	                promptly, a request waits at most Servers x Window
//	wfq             per-server arrival order; while server i waits, server j sends
//	                at most (K+2) x Weights[j] x Quantum + one request's bytes,
//	                K = the rounds the largest request needs
//	hbrr, mlf       each batch starts at its stream's lowest offset; while a stream
//	                waits, every other stream is served in at most one turn (mlf:
//	                when heads are eligible). No bound within a stream that keeps
//	                receiving lower offsets (offset order, as the references)
//	aioli           the selected stream's head is the oldest eligible head; a turn
//	                lasts under 16 Timeslice; one batch in flight
//	sjf             the stream with the fewest queued bytes goes next; no bound:
//	                a large stream starves while smaller ones keep arriving, as in
//	                the reference
//
// # Speed
//
// FIFO-like algorithms and TWINS use ring buffers; stream algorithms keep
// per-stream sorted slices indexed by a map, with heaps or rings over
// streams; batch slots and their request slices are recycled on Complete and
// request ids live in an open-addressing set, so the steady state allocates
// nothing. BenchmarkSteadyState and "adaptio sched bench" measure it.
package sched
