package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/qos"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
	"github.com/adaptio/adaptio/workload"
)

// ErrTimeLimit is returned when a run reaches Config.MaxTime unfinished.
var ErrTimeLimit = errors.New("sim: virtual time limit reached")

// link is one direction of a network port: messages queue FIFO behind each other.
type link struct{ free int64 }

type process struct {
	client  int32 // client node
	ion     int32
	next    int   // index of the next request to issue
	n       int   // requests to issue in this pattern
	file    int   // current request's file index
	off     int64 // current request's offset
	length  int64 // current request's bytes
	op      rw.Op // current request's operation
	pending int32 // pieces not yet completed
	start   int64 // when the current request was issued
	arrive  int64 // when it reached its I/O node
	job     int32 // index in Config.Jobs (jobs.go)
}

// ion is an I/O node: the dispatch core the daemon runs too (package
// ionode), with the simulator's dispatcher threads and network ports.
type ion struct {
	core    *ionode.Node
	sch     *sched.Switcher // core's scheduler
	acc     access.Accumulator
	jacc    []access.Accumulator // with Config.Jobs: each job's requests apart (JobObservations)
	jobs    []access.Observation // each job's observation of the last closed interval
	free    []int32              // free dispatcher threads (global thread ids)
	retryAt int64                // pending retry event time (0: none)
	tx, rx  link
	twins   bool
}

// thread is a dispatcher thread: it carries one access made of one or
// more contiguous batches.
type thread struct {
	ion  int32
	acc  ionode.Access
	sent int64 // when the access left the I/O node
	disk int64 // when its data server started it
}

// server is a data server: the shared model (package dataserver) with the
// simulator's network ports. Accesses are tagged with the thread carrying
// them.
type server struct {
	m       *dataserver.Server
	busy    int32 // thread being served, -1: idle
	waiting bool  // the head of the queue waits for its file (FileConcurrency)
	tx      link
	rx      link
}

// Result is the outcome of a run.
type Result struct {
	Makespan  time.Duration   // from the start to the last reply of the last pattern
	Phases    []time.Duration // makespan of each pattern
	Bytes     int64           // bytes moved by all processes
	Bandwidth float64         // Bytes / Makespan, bytes per second
	Events    uint64          // events processed
	Requests  uint64          // client requests completed
	Sched     []sched.Stats   // per I/O node scheduler statistics
	Servers   []ServerStats   // per data server
	// PhaseServers holds, per finished phase, the counters of all data
	// servers together during that phase.
	PhaseServers []ServerStats
	// Jobs holds each job's outcome, in Config.Jobs order (nil without
	// jobs).
	Jobs []JobResult
}

// ServerStats describe one data server over a run: the data-server
// model's counters.
type ServerStats = dataserver.Stats

// Sim is one experiment in virtual time. It is driven by Step (one interval
// at a time) or by Run. Not safe for concurrent use.
type Sim struct {
	cfg      Config
	log      *slog.Logger
	pl       disk.Placement
	q        eventQueue
	now      int64
	procs    []process
	clients  []struct{ tx, rx link }
	ions     []ion
	threads  []thread
	servers  []server
	scratch  []piece
	bpieces  []layout.Piece
	layout   layout.Layout
	firsts   []int            // server of stripe 0 of each file of the current pattern
	tr       traceState       // the current phase's trace (Config.Traces)
	jobs     []jobState       // Config.Jobs (jobs.go), nil without
	fileBusy map[uint64]int32 // FileConcurrency: accesses in service per file
	fileWait map[uint64][]int32

	phase      int
	phaseStart int64
	remaining  int // processes not finished in the current phase
	done       bool
	doneAt     int64
	phases     []time.Duration
	bytes      int64
	requests   uint64
	events     uint64

	// The data servers' counters at the last phase's end, and per phase.
	serversAtPhase ServerStats
	phaseServers   []ServerStats

	intervalEnd int64 // end of the current observation interval
	obs         []access.Observation

	trace func(NodeEvent)
	err   error // a trace's request could not be read or was invalid: the run stops
}

// NodeEvent is what happens at an I/O node's dispatch core, for SetTrace:
// a client request arrives and is split into pieces (NodeArrive), a dispatcher
// thread asks the core for an access (NodeNext, OK when it got one), or an
// access finishes (NodeDone). Replaying the arrivals and completions into the
// daemon's path at the same instants must give the same NodeNext results:
// the daemon and the simulator run one dispatch core.
type NodeEvent struct {
	Kind NodeEventKind
	At   time.Duration
	Node int

	// Arrive: the client request.
	Client  int    // client node (the scheduler's App)
	File    string // the file's name (workload.Pattern.FileName)
	FileID  uint64 // the scheduler's file id
	Op      rw.Op
	Offset  int64
	Length  int64
	Process int

	// Next (when OK) and Done: the access.
	OK     bool
	Access ionode.Access // Batches valid during the call only
}

// NodeEventKind says what a NodeEvent records.
type NodeEventKind uint8

// The kinds of NodeEvent.
const (
	NodeArrive NodeEventKind = iota + 1
	NodeNext
	NodeDone
)

// SetTrace makes the simulator call f with every I/O node event from now on
// (nil: none).
func (s *Sim) SetTrace(f func(NodeEvent)) { s.trace = f }

type piece struct {
	server int
	local  int64
	length int64
}

// pieceBits is the low bits of a scheduler request id that number the
// pieces of one process's request (the process is the high bits).
const pieceBits = 20

// New builds an experiment at virtual time 0 (nothing has happened yet).
// logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Sim, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Sim{cfg: cfg, log: logger, layout: layout.Layout{StripeSize: cfg.StripeBytes, StripeCount: cfg.Servers}}
	if cfg.Placement != nil {
		s.pl = *cfg.Placement
	} else {
		s.pl = disk.DefaultPlacement(cfg.Disk.CapacityBytes)
	}
	s.ions = make([]ion, cfg.IONodes)
	s.threads = make([]thread, cfg.IONodes*cfg.Threads)
	for i := range s.ions {
		sw, err := sched.NewSwitcher(cfg.Scheduler, sched.Config{
			Servers: cfg.Servers, Node: i, Nodes: cfg.IONodes, Window: cfg.Window, Aligned: cfg.AlignedWindows,
		})
		if err != nil {
			return nil, fmt.Errorf("sim: I/O node %d: %w", i, err)
		}
		n := &s.ions[i]
		n.sch = sw
		n.core = ionode.New(sw, ionode.Config{Aggregate: cfg.Aggregate, PerServer: ionode.PerServerLimit(cfg.Threads, cfg.Servers)})
		n.twins = sw.Name() == "twins"
		if cfg.QoS != nil {
			g, err := qos.NewGate(qos.Config{Rules: cfg.QoS.Rules, Share: cfg.QoS.Share, Window: cfg.QoS.Window, Anticipation: cfg.QoS.Anticipation, Fairness: cfg.QoS.Fairness})
			if err != nil {
				return nil, fmt.Errorf("sim: %w", err)
			}
			n.core.SetGate(0, g, cfg.QoS.Depth)
		}
		n.free = make([]int32, 0, cfg.Threads)
		for k := cfg.Threads - 1; k >= 0; k-- {
			id := int32(i*cfg.Threads + k)
			n.free = append(n.free, id)
			s.threads[id].ion = int32(i)
		}
	}
	s.servers = make([]server, cfg.Servers)
	for i := range s.servers {
		d, err := disk.New(cfg.Disk)
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		m, err := dataserver.New(cfg.DataServer(), d, s.pl, rand.New(rand.NewPCG(cfg.Seed, 0x5e7e7+uint64(i))))
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		s.servers[i] = server{m: m, busy: -1}
	}
	s.fileBusy = map[uint64]int32{}
	s.fileWait = map[uint64][]int32{}
	s.clients = make([]struct{ tx, rx link }, cfg.ClientNodes)
	s.intervalEnd = int64(cfg.Interval)
	if len(cfg.Jobs) > 0 {
		s.startJobs()
		return s, nil
	}
	s.startPhase(0)
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// Config returns the configuration in force (with defaults).
func (s *Sim) Config() Config { return s.cfg }

// Now returns the current virtual time.
func (s *Sim) Now() time.Duration { return time.Duration(s.now) }

// Done reports whether every pattern has finished.
func (s *Sim) Done() bool { return s.done }

// Window returns I/O node node's current TWINS window.
func (s *Sim) Window(node int) time.Duration { return s.ions[node].sch.Params().Window }

// SetWindow changes I/O node node's TWINS window from now on (queued
// requests are kept).
func (s *Sim) SetWindow(node int, w time.Duration) error {
	if node < 0 || node >= len(s.ions) {
		return fmt.Errorf("%w: no I/O node %d", ErrBadConfig, node)
	}
	return s.ions[node].sch.SetWindow(time.Duration(s.now), w)
}

// Follow makes I/O node node follow a Council's plan from now on (see
// ionode.Node.Follow): the window of the direction its requests take,
// switched as they turn; w where the plan has none.
func (s *Sim) Follow(node int, plan ionode.Plan, w time.Duration) error {
	if node < 0 || node >= len(s.ions) {
		return fmt.Errorf("%w: no I/O node %d", ErrBadConfig, node)
	}
	return s.ions[node].core.Follow(time.Duration(s.now), plan, w)
}

// Switch makes I/O node node run the named scheduler from now on.
func (s *Sim) Switch(node int, name string) error {
	if node < 0 || node >= len(s.ions) {
		return fmt.Errorf("%w: no I/O node %d", ErrBadConfig, node)
	}
	n := &s.ions[node]
	if err := n.sch.Switch(time.Duration(s.now), name); err != nil {
		return err
	}
	n.twins = name == "twins"
	s.dispatch(node)
	return nil
}

// startPhase places the processes of pattern (or trace) k and lets them start.
func (s *Sim) startPhase(k int) {
	if len(s.cfg.Traces) > 0 {
		s.startTrace(k)
		return
	}
	p := s.cfg.Patterns[k]
	s.phase = k
	s.phaseStart = s.now
	s.firsts = s.firsts[:0]
	for f := range p.Files() {
		s.firsts = append(s.firsts, s.layout.FirstServer(p.FileName(f), s.cfg.Servers))
	}
	if cap(s.procs) < p.Processes {
		s.procs = make([]process, p.Processes)
	}
	s.procs = s.procs[:p.Processes]
	clients := min(s.cfg.ClientNodes, p.Processes)
	nreq := p.RequestsPerProcess()
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0xc11e47+uint64(k)))
	for i := range s.procs {
		c := i * clients / p.Processes
		s.procs[i] = process{client: int32(c), ion: int32(c * s.cfg.IONodes / clients), n: nreq}
	}
	s.remaining = p.Processes
	for i := range s.procs {
		var j int64
		if s.cfg.StartJitter > 0 {
			j = rng.Int64N(int64(s.cfg.StartJitter))
		}
		s.q.push(s.now+j, evClientDone, int32(-1-i)) // negative id: first request
	}
}

// send books a message of the given size from a transmitting port to a
// receiving port at time t and returns its arrival time.
func (s *Sim) send(t int64, tx, rx *link, bytes int64) int64 {
	d := int64(float64(bytes) / s.cfg.NetBytesPerSec * 1e9)
	st := max(t, tx.free)
	tx.free = st + d
	at := st + int64(s.cfg.NetLatency)
	at = max(at, rx.free)
	rx.free = at + d
	return at + d
}

func (s *Sim) fileHandle(file int) uint64 {
	if s.tr.cur != nil {
		return s.tr.handles[file]
	}
	return uint64(file) + 1
}

// fileName is the name of file of the current pattern or trace.
func (s *Sim) fileName(file int) string {
	if s.tr.cur != nil {
		return s.tr.names[file]
	}
	if s.jobs != nil {
		for k := len(s.jobs) - 1; k >= 0; k-- {
			if file >= s.jobs[k].files {
				return s.jobFileName(k, file-s.jobs[k].files)
			}
		}
	}
	return s.cfg.Patterns[s.phase].FileName(file)
}

// processDone counts a process that finished the current phase; the last
// one ends the phase and starts the next (or ends the run).
func (s *Sim) processDone() {
	s.remaining--
	if s.remaining > 0 {
		return
	}
	s.phases = append(s.phases, time.Duration(s.now-s.phaseStart))
	var all ServerStats
	for i := range s.servers {
		all = all.Plus(s.servers[i].m.Stats())
	}
	s.phaseServers = append(s.phaseServers, all.Minus(s.serversAtPhase))
	s.serversAtPhase = all
	if s.phase+1 < len(s.cfg.Patterns)+len(s.cfg.Traces) {
		s.startPhase(s.phase + 1)
	} else {
		s.done = true
		s.doneAt = s.now
	}
}

// issue sends process i's next request (a trace's was read by traceNext).
func (s *Sim) issue(i int) {
	pr := &s.procs[i]
	if s.jobs != nil {
		s.jobIssue(i)
	} else if s.tr.cur == nil {
		p := &s.cfg.Patterns[s.phase]
		pr.file, pr.off = p.Request(i, pr.next)
		pr.length, pr.op = p.RequestSize, p.Op
	}
	pr.next++
	pr.start = s.now
	size := s.cfg.HeaderBytes
	if pr.op == rw.Write {
		size += pr.length
	}
	c := &s.clients[pr.client]
	at := s.send(s.now, &c.tx, &s.ions[pr.ion].rx, size)
	s.q.push(at, evIONArrive, int32(i))
}

// split cuts [off, off+length) of file of the current pattern into its
// pieces, one per stripe run on a data server in file order, with their
// offsets in the server's local (object) byte space: layout.Layout, the
// rule of the daemon's backends, on the file's name (workload.Pattern.FileName).
func (s *Sim) split(file int, off, length int64) []piece {
	first := s.firsts[file]
	bp := s.layout.Split(s.bpieces[:0], s.cfg.Servers, first, off, length)
	s.bpieces = bp
	ps := s.scratch[:0]
	for _, x := range bp {
		ps = append(ps, piece{server: x.Server, local: s.layout.Local(x.Offset), length: x.Length})
	}
	s.scratch = ps
	return ps
}

func (s *Sim) ionArrive(i int) {
	pr := &s.procs[i]
	n := &s.ions[pr.ion]
	fh := s.fileHandle(pr.file)
	n.acc.Request(uint32(pr.client), uint64(i), fh, pr.off, pr.length, pr.op)
	if s.jobs != nil {
		n.jobAcc(int(pr.job), len(s.jobs)).Request(uint32(pr.client), uint64(i), fh, pr.off, pr.length, pr.op)
	}
	if s.trace != nil {
		s.trace(NodeEvent{Kind: NodeArrive, At: time.Duration(s.now), Node: int(pr.ion), Client: int(pr.client),
			File: s.fileName(pr.file), FileID: fh, Op: pr.op, Offset: pr.off, Length: pr.length, Process: i})
	}
	ps := s.split(pr.file, pr.off, pr.length)
	pr.pending = int32(len(ps))
	pr.arrive = s.now
	for j, pc := range ps {
		err := n.core.AddJob(time.Duration(s.now), s.jobName(i), sched.Request{
			ID: uint64(i)<<pieceBits | uint64(j), Queue: pc.server, File: fh,
			Offset: pc.local, Length: pc.length, Op: pr.op, App: uint32(pr.client),
		})
		if err != nil {
			panic("sim: scheduler refused a request: " + err.Error())
		}
	}
	if d := int64(s.cfg.DispatchDelay); d > 0 {
		s.wake(int(pr.ion), s.now+d)
		return
	}
	s.dispatch(int(pr.ion))
}

// wake makes I/O node k dispatch at time at, unless it already will
// earlier (its pending retry event doubles as the wake-up).
func (s *Sim) wake(k int, at int64) {
	n := &s.ions[k]
	if n.retryAt == 0 || at < n.retryAt {
		n.retryAt = at
		s.q.push(at, evIONRetry, int32(k))
	}
}

// dispatch hands accesses to free dispatcher threads of I/O node k: the
// batches the scheduler releases in a row while they continue the same file
// contiguously on the same server (up to Aggregate requests), joined by the
// dispatch core the daemon runs too (package ionode).
func (s *Sim) dispatch(k int) {
	n := &s.ions[k]
	for len(n.free) > 0 {
		tid := n.free[len(n.free)-1]
		th := &s.threads[tid]
		a, ok, retry := n.core.Next(time.Duration(s.now), th.acc.Batches[:0])
		if s.trace != nil {
			s.trace(NodeEvent{Kind: NodeNext, At: time.Duration(s.now), Node: k, OK: ok, Access: a})
		}
		if r := int64(retry); r > 0 && (n.retryAt == 0 || r < n.retryAt) {
			if r <= s.now {
				r = s.now + 1
			}
			n.retryAt = r
			s.q.push(r, evIONRetry, int32(k))
		}
		if !ok {
			return
		}
		n.free = n.free[:len(n.free)-1]
		th.acc = a
		th.sent = s.now
		size := s.cfg.HeaderBytes
		if a.Op == rw.Write {
			size += a.Length
		}
		sv := &s.servers[a.Queue]
		at := s.send(s.now, &n.tx, &sv.rx, size)
		s.q.push(at, evServerArrive, tid)
	}
}

func (s *Sim) serverStart(si int) {
	sv := &s.servers[si]
	if s.cfg.FileConcurrency > 0 {
		h, _ := sv.m.Head()
		f := h.File
		if s.fileBusy[f] >= int32(s.cfg.FileConcurrency) {
			sv.waiting = true
			s.fileWait[f] = append(s.fileWait[f], int32(si))
			return
		}
		s.fileBusy[f]++
	}
	a, d, ok := sv.m.Start(time.Duration(s.now))
	if !ok {
		panic("sim: a data server with nothing queued was started")
	}
	sv.busy = int32(a.Tag)
	s.threads[a.Tag].disk = s.now
	s.q.push(s.now+int64(d), evDiskDone, int32(si))
}

func (s *Sim) step(e event) {
	s.events++
	switch e.kind {
	case evClientDone:
		i := int(e.id)
		if i < 0 { // a request to issue without a completion: the phase's first, or one after its think time
			s.issue(-1 - i)
			return
		}
		pr := &s.procs[i]
		s.bytes += pr.length
		s.requests++
		if s.jobs != nil {
			s.jobCompleted(i)
			return
		}
		if s.tr.cur != nil {
			s.traceNext(i)
			return
		}
		if pr.next < pr.n {
			s.issue(i)
			return
		}
		s.processDone()
	case evIONArrive:
		s.ionArrive(int(e.id))
	case evIONRetry:
		n := &s.ions[e.id]
		if n.retryAt != e.t {
			return // superseded
		}
		n.retryAt = 0
		s.dispatch(int(e.id))
	case evServerArrive:
		th := &s.threads[e.id]
		a := &th.acc
		si := a.Queue
		sv := &s.servers[si]
		sv.m.Arrive(dataserver.Access{Node: int(th.ion), File: a.File, Op: a.Op, Offset: a.Offset, Length: a.Length, Tag: int64(e.id)})
		if sv.busy < 0 && !sv.waiting {
			s.serverStart(si)
		}
	case evDiskDone:
		si := int(e.id)
		sv := &s.servers[si]
		tid := sv.busy
		th := &s.threads[tid]
		file := th.acc.File
		if s.jobs != nil {
			s.jobServed(th)
		}
		size := s.cfg.HeaderBytes
		if th.acc.Op == rw.Read {
			size += th.acc.Length
		}
		at := s.send(s.now, &sv.tx, &s.ions[th.ion].rx, size)
		s.q.push(at, evBatchDone, tid)
		sv.busy = -1
		sv.m.Done()
		if s.cfg.FileConcurrency > 0 {
			if s.fileBusy[file]--; s.fileBusy[file] == 0 {
				delete(s.fileBusy, file)
			}
			if w := s.fileWait[file]; len(w) > 0 {
				next := w[0]
				s.fileWait[file] = w[1:]
				if len(w) == 1 {
					delete(s.fileWait, file)
				}
				s.servers[next].waiting = false
				s.serverStart(int(next))
			}
		}
		if sv.m.Len() > 0 && !sv.waiting && sv.busy < 0 {
			s.serverStart(si)
		}
	case evBatchDone:
		th := &s.threads[e.id]
		k := int(th.ion)
		n := &s.ions[k]
		for bi := range th.acc.Batches {
			b := &th.acc.Batches[bi]
			for _, r := range b.Requests {
				i := int(r.ID >> pieceBits)
				pr := &s.procs[i]
				pr.pending--
				if pr.pending == 0 {
					n.acc.Done(pr.length)
					n.acc.Served(pr.op, time.Duration(pr.arrive), time.Duration(s.now), pr.length)
					if s.jobs != nil {
						ja := n.jobAcc(int(pr.job), len(s.jobs))
						ja.Done(pr.length)
						ja.Served(pr.op, time.Duration(pr.arrive), time.Duration(s.now), pr.length)
					}
					size := s.cfg.HeaderBytes
					if pr.op == rw.Read {
						size += pr.length
					}
					c := &s.clients[pr.client]
					at := s.send(s.now, &n.tx, &c.rx, size)
					s.q.push(at, evClientDone, int32(i))
				}
			}
		}
		if s.trace != nil {
			s.trace(NodeEvent{Kind: NodeDone, At: time.Duration(s.now), Node: k, OK: true, Access: th.acc})
		}
		if err := n.core.Done(time.Duration(s.now), th.acc, th.acc.Length, time.Duration(s.now-th.sent)); err != nil {
			panic("sim: scheduler refused a completion: " + err.Error())
		}
		clear(th.acc.Batches)
		th.acc.Batches = th.acc.Batches[:0]
		n.free = append(n.free, e.id)
		s.dispatch(k)
	}
}

// closeInterval closes every I/O node's interval [end-length, end).
func (s *Sim) closeInterval(end int64, length time.Duration) []access.Observation {
	s.obs = s.obs[:0]
	start := time.Duration(end) - length
	for k := range s.ions {
		n := &s.ions[k]
		var w time.Duration
		if n.twins {
			w = n.sch.Params().Window
		}
		o := n.acc.Close(k, start, length, s.cfg.Servers, w)
		if w > 0 && o.Op.Valid() {
			o.Window = n.core.WindowOf(o.Op) // a node following a plan credits each direction its own
		}
		s.obs = append(s.obs, o)
		n.jobs = n.jobs[:0]
		for j := range n.jacc {
			n.jobs = append(n.jobs, n.jacc[j].Close(k, start, length, s.cfg.Servers, o.Window))
		}
	}
	return s.obs
}

// jobAcc is job j's accumulator at the I/O node (of jobs in all).
func (n *ion) jobAcc(j, jobs int) *access.Accumulator {
	if n.jacc == nil {
		n.jacc = make([]access.Accumulator, jobs)
	}
	return &n.jacc[j]
}

// JobObservations returns, with Config.Jobs, I/O node k's observation of
// each job's own requests in the interval the last Step closed, by job
// name, for the jobs with requests or completions in it (the forwarding
// daemon's CloseIntervalJobs); nil without jobs.
func (s *Sim) JobObservations(k int) map[string]access.Observation {
	if s.jobs == nil || k < 0 || k >= len(s.ions) {
		return nil
	}
	var out map[string]access.Observation
	for j, o := range s.ions[k].jobs {
		if o.Idle() && o.Completed == 0 {
			continue
		}
		if out == nil {
			out = map[string]access.Observation{}
		}
		out[s.cfg.Jobs[j].Name] = o
	}
	return out
}

// Step runs the simulation to the end of the current observation interval
// (or to the end of the experiment, whichever is first) and returns one
// observation per I/O node for that interval, in node order. The slice is
// reused by the next Step. done is true when every pattern has finished; the
// last interval may be shorter than Config.Interval. Step after done returns
// nil, true.
func (s *Sim) Step() (obs []access.Observation, done bool, err error) {
	if s.done {
		if s.intervalEnd < 0 {
			return nil, true, nil
		}
	}
	for !s.done && s.err == nil && s.q.len() > 0 && s.q.peek() < s.intervalEnd {
		e := s.q.pop()
		s.now = e.t
		s.step(e)
	}
	if s.err != nil {
		return nil, false, s.err
	}
	if s.done {
		start := s.intervalEnd - int64(s.cfg.Interval)
		s.intervalEnd = -1
		if s.doneAt <= start {
			return nil, true, nil
		}
		s.now = s.doneAt
		return s.closeInterval(s.doneAt, time.Duration(s.doneAt-start)), true, nil
	}
	if s.q.len() == 0 {
		return nil, true, errors.New("sim: no event left before every process finished (model error)")
	}
	s.now = s.intervalEnd
	o := s.closeInterval(s.intervalEnd, s.cfg.Interval)
	s.intervalEnd += int64(s.cfg.Interval)
	if time.Duration(s.now) >= s.cfg.MaxTime {
		return o, false, fmt.Errorf("%w (%v)", ErrTimeLimit, s.cfg.MaxTime)
	}
	return o, false, nil
}

// Result returns the outcome so far (final once Done).
func (s *Sim) Result() Result {
	r := Result{Bytes: s.bytes, Events: s.events, Requests: s.requests}
	end := s.now
	if s.done {
		end = s.doneAt
	}
	r.Makespan = time.Duration(end)
	r.Phases = append([]time.Duration(nil), s.phases...)
	r.PhaseServers = append([]ServerStats(nil), s.phaseServers...)
	r.Jobs = s.jobResults()
	if end > 0 {
		r.Bandwidth = float64(s.bytes) / time.Duration(end).Seconds()
	}
	for k := range s.ions {
		r.Sched = append(r.Sched, s.ions[k].sch.Stats())
	}
	for i := range s.servers {
		r.Servers = append(r.Servers, s.servers[i].m.Stats())
	}
	return r
}

// Hooks are called by Run. Nil hooks are skipped.
type Hooks struct {
	// OnInterval receives, at the end of every interval (virtual time now),
	// one observation per I/O node in node order (the slice is reused after
	// the call). If it returns change, every I/O node switches to window from
	// now on.
	OnInterval func(now time.Duration, obs []access.Observation) (window time.Duration, change bool)
	// OnNodeInterval, if set, is called instead with the Sim, so it can set
	// a window per node (Sim.SetWindow) or switch schedulers (Sim.Switch).
	OnNodeInterval func(s *Sim, now time.Duration, obs []access.Observation) error
}

// Run runs one experiment to its end, calling hooks every interval. It
// checks ctx between intervals.
func Run(ctx context.Context, cfg Config, hooks Hooks) (Result, error) {
	s, err := New(cfg, nil)
	if err != nil {
		return Result{}, err
	}
	return s.Run(ctx, hooks)
}

// Run runs s to its end (see the package function Run).
func (s *Sim) Run(ctx context.Context, hooks Hooks) (Result, error) {
	for {
		if err := ctx.Err(); err != nil {
			return s.Result(), err
		}
		obs, done, err := s.Step()
		if err != nil {
			return s.Result(), err
		}
		if obs != nil {
			now := s.Now()
			switch {
			case hooks.OnNodeInterval != nil:
				if err := hooks.OnNodeInterval(s, now, obs); err != nil {
					return s.Result(), err
				}
			case hooks.OnInterval != nil:
				if w, change := hooks.OnInterval(now, obs); change && !done {
					for k := range s.ions {
						if err := s.SetWindow(k, w); err != nil {
							return s.Result(), err
						}
					}
				}
			}
		}
		if done {
			return s.Result(), nil
		}
	}
}

// Patterns is a helper for write-then-read sequences: it returns the
// patterns p with Op Write then p with Op Read, iterations times.
func WriteRead(p workload.Pattern, iterations int) []workload.Pattern {
	var out []workload.Pattern
	for range iterations {
		w, r := p, p
		w.Op, r.Op = rw.Write, rw.Read
		out = append(out, w, r)
	}
	return out
}

// DiskStats returns each data server's device statistics.
func (s *Sim) DiskStats() []disk.Stats {
	out := make([]disk.Stats, len(s.servers))
	for i := range s.servers {
		out[i] = s.servers[i].m.Stats().Disk
	}
	return out
}
