// Package summary tells, from a Darshan log, what adaptio would see of a
// job: for every file the access pattern (file per process, shared
// contiguous, shared 1D-strided, or random) of its reads and writes, the
// request sizes, and, where the log has DXT traces, the job's phases over
// time as the Council would label them second by second (its default
// detection model fed with the traced accesses, as one I/O node would
// observe them).
package summary

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
)

// Pattern is a file's access pattern for one operation.
type Pattern string

// The patterns: the Council's three classes, and random (the Council
// labels it like 1D-strided: non-contiguous accesses to a shared file).
const (
	FPP      Pattern = "FPP"
	SC       Pattern = "SC"
	SS       Pattern = "SS"
	Random   Pattern = "random"
	NoAccess Pattern = ""
)

// SizeBins are the request-size bins of Darshan's POSIX counters.
var SizeBins = []string{"0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"}

// OpStats describe one operation on one file.
type OpStats struct {
	Ops     int64
	Bytes   int64
	Consec  int64   // accesses at the offset where the rank's previous one ended
	Seq     int64   // accesses at a higher offset than the rank's previous one
	Sizes   []int64 // request counts by SizeBins
	Pattern Pattern
	Why     string // what the pattern was read from
}

// File is one file of the job, from its POSIX records.
type File struct {
	ID     uint64
	Name   string
	Ranks  int // ranks with a record of their own (0: a shared record, every rank)
	Shared bool
	Read   OpStats
	Write  OpStats
}

// Second is one second of the job as the Council would label it.
type Second struct {
	At      float64 // seconds since the job started
	Op      rw.Op
	Class   access.Class
	Bytes   int64
	Reqs    int64
	Procs   int
	Files   int
	ReqAvg  float64
	Sources string // "DXT_POSIX" or "DXT_MPIIO"
}

// Phase is a run of consecutive seconds with one label.
type Phase struct {
	Start, End float64 // seconds since the job started
	Op         rw.Op
	Class      access.Class
	Bytes      int64
}

// Rank is one rank's accesses, from the DXT trace: how its own accesses
// follow each other in each file (the counters of a shared file are
// reduced over the ranks and cannot tell this).
type Rank struct {
	Rank        int64
	Read, Write RankOp
}

// RankOp is one operation of one rank.
type RankOp struct {
	Ops, Bytes  int64
	Consec, Seq int64 // accesses to shared files continuing / moving forward from the rank's previous one in the file
	Pattern     Pattern
	ownBytes    int64 // bytes to files no other rank accesses
	pairs       int64 // accesses to shared files that had a previous one in the same file
}

// rankPattern labels a rank's operation: its own files (FPP), or how its
// accesses to shared files follow each other, as pattern does for files.
func rankPattern(o RankOp) Pattern {
	switch {
	case o.Ops == 0:
		return NoAccess
	case o.ownBytes*2 > o.Bytes:
		return FPP
	case o.pairs == 0:
		return SC
	}
	return sharedPattern(float64(o.Consec)/float64(o.pairs), float64(o.Seq)/float64(o.pairs))
}

// sharedPattern labels accesses to a shared file from the shares that
// continue the rank's previous access (consec) and that move forward from
// it (seq): mostly contiguous SC, mostly forward SS, else random.
func sharedPattern(consec, seq float64) Pattern {
	switch {
	case consec >= 0.5:
		return SC
	case seq >= 0.9:
		return SS
	}
	return Random
}

// Summary is what Summarize found.
type Summary struct {
	Exe      string
	Procs    int64
	Start    time.Time
	Runtime  time.Duration
	Version  string
	Partial  []darshan.Module // modules whose records are incomplete
	Files    []File           // by bytes moved, largest first
	Seconds  []Second         // from DXT (nil without)
	Ranks    []Rank           // from DXT (nil without), by rank
	Phases   []Phase
	Patterns map[Pattern]int64 // bytes moved per pattern
}

// Summarize reads l's POSIX records (and DXT traces, if any).
func Summarize(l *darshan.Log) (*Summary, error) {
	s := &Summary{Exe: l.Exe, Procs: l.Job.Procs, Start: l.Job.Start, Runtime: l.Job.End.Sub(l.Job.Start),
		Version: l.Version, Patterns: map[Pattern]int64{}}
	for _, m := range l.Modules() {
		if l.PartialModule(m) {
			s.Partial = append(s.Partial, m)
		}
	}
	files := map[uint64]*File{}
	for r, err := range l.Records(darshan.POSIX) {
		if err != nil {
			return nil, err
		}
		f := files[r.ID]
		if f == nil {
			f = &File{ID: r.ID, Name: r.Name, Read: OpStats{Sizes: make([]int64, len(SizeBins))}, Write: OpStats{Sizes: make([]int64, len(SizeBins))}}
			files[r.ID] = f
		}
		if r.Rank < 0 {
			f.Shared = true
		} else {
			f.Ranks++
		}
		add := func(o *OpStats, op string) {
			get := func(c string) int64 { v, _ := r.Counter("POSIX_" + c); return max(v, 0) }
			o.Ops += get(op + "S")
			o.Bytes += get("BYTES_" + map[string]string{"READ": "READ", "WRITE": "WRITTEN"}[op])
			o.Consec += get("CONSEC_" + op + "S")
			o.Seq += get("SEQ_" + op + "S")
			for i, b := range []string{"0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS"} {
				o.Sizes[i] += get("SIZE_" + op + "_" + b)
			}
		}
		add(&f.Read, "READ")
		add(&f.Write, "WRITE")
	}
	for _, f := range files {
		f.Shared = (f.Shared || f.Ranks > 1) && l.Job.Procs > 1 // one process's job has no shared file
		for _, o := range []*OpStats{&f.Read, &f.Write} {
			o.Pattern, o.Why = pattern(f, o, l.Job.Procs)
			s.Patterns[o.Pattern] += o.Bytes
		}
		s.Files = append(s.Files, *f)
	}
	slices.SortFunc(s.Files, func(a, b File) int {
		return cmp.Or(cmp.Compare(b.Read.Bytes+b.Write.Bytes, a.Read.Bytes+a.Write.Bytes), cmp.Compare(a.Name, b.Name))
	})
	if err := s.traceSeconds(l); err != nil {
		return nil, err
	}
	return s, nil
}

// pattern labels one operation on one file from its counters. A file one
// rank accesses is file per process. On a shared file a rank's accesses
// that mostly continue where its previous one ended are contiguous; ranks
// that access it once each (a block each) too; accesses that mostly move
// forward but not contiguously are 1D-strided; the rest random.
func pattern(f *File, o *OpStats, procs int64) (Pattern, string) {
	if o.Ops == 0 {
		return NoAccess, ""
	}
	if !f.Shared {
		return FPP, "one rank's file"
	}
	perRank := float64(o.Ops) / float64(max(procs, 1))
	consec, seq := float64(o.Consec)/float64(o.Ops), float64(o.Seq)/float64(o.Ops)
	if perRank <= 1 {
		return SC, fmt.Sprintf("shared, %.1f access per rank: a block each", perRank)
	}
	switch p := sharedPattern(consec, seq); p {
	case SC:
		return p, fmt.Sprintf("shared, %.0f%% of a rank's accesses continue its previous one", 100*consec)
	case SS:
		return p, fmt.Sprintf("shared, %.0f%% contiguous, %.0f%% forward: a stride", 100*consec, 100*seq)
	default:
		return p, fmt.Sprintf("shared, %.0f%% contiguous, %.0f%% forward", 100*consec, 100*seq)
	}
}

// spillChunk is how many DXT segments the summary sorts in memory (64
// bytes each: 32 MiB) before it spills them to a temporary file: a 1 GiB
// DXT log is summarised in 167 MB of RSS (docs/darshan.md).
var spillChunk = 1 << 19

// traceSeconds labels the job's seconds from its DXT traces (POSIX level
// if traced, else MPI-IO), as one I/O node serving every rank would
// observe them, with the Council's default detection model.
func (s *Summary) traceSeconds(l *darshan.Log) error {
	mod := darshan.DXTPOSIX
	if !l.HasModule(mod) {
		mod = darshan.DXTMPIIO
	}
	if !l.HasModule(mod) {
		return nil
	}
	order := newTimeOrder(spillChunk)
	defer order.s.Close()
	hosts := map[string]uint32{}
	ranks := map[int64]*Rank{}
	sharedFile := map[uint64]bool{}
	for _, f := range s.Files {
		sharedFile[f.ID] = f.Shared
	}
	defer func() {
		for _, r := range ranks {
			for _, o := range []*RankOp{&r.Read, &r.Write} {
				o.Pattern = rankPattern(*o)
			}
			s.Ranks = append(s.Ranks, *r)
		}
		slices.SortFunc(s.Ranks, func(a, b Rank) int { return cmp.Compare(a.Rank, b.Rank) })
	}()
	for tr, err := range l.Traces(mod) {
		if err != nil {
			return err
		}
		h, ok := hosts[tr.Hostname]
		if !ok {
			h = uint32(len(hosts))
			hosts[tr.Hostname] = h
		}
		rk := ranks[tr.Rank]
		if rk == nil {
			rk = &Rank{Rank: tr.Rank}
			ranks[tr.Rank] = rk
		}
		var end [2]int64 // per operation, where the rank's previous access to this file ended
		var started [2]bool
		for sg, err := range tr.Segments() {
			if err != nil {
				return err
			}
			if sg.Offset < 0 || sg.Length <= 0 {
				continue
			}
			w := 0
			o := &rk.Read
			if sg.Write {
				w, o = 1, &rk.Write
			}
			o.Ops++
			o.Bytes += sg.Length
			if started[w] && sharedFile[tr.ID] { // how a rank moves in the files it shares
				o.pairs++
				if sg.Offset == end[w] {
					o.Consec++
				}
				if sg.Offset >= end[w] {
					o.Seq++
				}
			}
			started[w], end[w] = true, sg.Offset+sg.Length
			if !sharedFile[tr.ID] {
				o.ownBytes += sg.Length
			}
			if err := order.add(segment{start: sg.Start, rank: tr.Rank, host: h, file: tr.ID, off: sg.Offset, len: sg.Length, write: sg.Write}); err != nil {
				return err
			}
		}
	}
	model := detect.Default()
	var acc access.Accumulator
	flush := func(sec int) {
		o := acc.Close(0, time.Duration(sec)*time.Second, time.Second, 4, 0)
		if o.Idle() {
			return
		}
		class, _ := model.Detect(o)
		s.Seconds = append(s.Seconds, Second{At: float64(sec), Op: o.Op, Class: class, Bytes: o.Bytes, Reqs: o.Requests,
			Procs: o.Processes, Files: o.FileHandles, ReqAvg: o.ReqAvg, Sources: mod.String()})
	}
	cur := -1
	err := order.each(func(g segment) {
		sec := int(g.start)
		if sec != cur {
			if cur >= 0 {
				flush(cur)
			}
			cur = sec
		}
		op := rw.Read
		if g.write {
			op = rw.Write
		}
		acc.Request(g.host, uint64(g.rank), g.file, g.off, g.len, op)
		acc.Done(g.len)
	})
	if err != nil {
		return err
	}
	if cur >= 0 {
		flush(cur)
	}
	for _, sc := range s.Seconds {
		if n := len(s.Phases); n > 0 && s.Phases[n-1].Op == sc.Op && s.Phases[n-1].Class == sc.Class && s.Phases[n-1].End >= sc.At {
			s.Phases[n-1].End = sc.At + 1
			s.Phases[n-1].Bytes += sc.Bytes
			continue
		}
		s.Phases = append(s.Phases, Phase{Start: sc.At, End: sc.At + 1, Op: sc.Op, Class: sc.Class, Bytes: sc.Bytes})
	}
	return nil
}
