package sim

import (
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// demandedChunks returns, per data server, the page-cache chunks of every
// request the processes of s's current pattern have issued so far.
func demandedChunks(s *Sim) []map[uint64]bool {
	out := make([]map[uint64]bool, len(s.servers))
	for i := range out {
		out[i] = map[uint64]bool{}
	}
	p := &s.cfg.Patterns[s.phase]
	ra := s.cfg.ReadAheadBytes
	for i := range s.procs {
		for k := 0; k < s.procs[i].next; k++ {
			file, off := p.Request(i, k)
			key := s.fileHandle(file) << 40
			for _, pc := range s.split(file, off, p.RequestSize) {
				for c := pc.local / ra; c <= (pc.local+pc.length-1)/ra; c++ {
					out[pc.server][key|uint64(c)] = true
				}
			}
		}
	}
	return out
}

// The page cache holds only chunks some request asked for: a miss merges
// the misses of queued reads next to it, but never reads data nobody has
// requested yet (the read-back of an earlier model cached the second half
// of every neighbouring process's region at its first read, which the
// processes then drained from memory in one burst at the end).
func TestPageCacheReadsOnlyDemandedChunks(t *testing.T) {
	tests := []struct {
		name string
		p    workload.Pattern
	}{
		{"shared contiguous", pattern(64, workload.Shared, workload.Contiguous, rw.Read, 32<<10, 128<<20)},
		{"shared strided", pattern(64, workload.Shared, workload.Strided, rw.Read, 32<<10, 128<<20)},
		{"file per process", pattern(32, workload.FilePerProcess, workload.Contiguous, rw.Read, 32<<10, 64<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Patterns: []workload.Pattern{tt.p}, IONodes: 2, Interval: 50 * time.Millisecond, Seed: 3}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for steps := 0; ; steps++ {
				_, done, err := s.Step()
				if err != nil {
					t.Fatal(err)
				}
				if done {
					break
				}
				if steps%5 != 0 {
					continue
				}
				want := demandedChunks(s)
				for si := range s.servers {
					s.servers[si].m.Cached(func(file uint64, chunk int64) {
						if !want[si][file<<40|uint64(chunk)] {
							t.Fatalf("at %v server %d caches chunk %d of file %d that no request issued so far covers",
								s.Now(), si, chunk, file)
						}
					})
				}
			}
		})
	}
}

// Merging the misses of queued adjacent reads lets interleaved strided
// readers stream: one I/O node with FIFO reaches the disks' rate, where
// reading only each access's own chunks leaves the disk seeking between
// out-of-order 128 KiB reads.
func TestReadMergeStreamsStridedReads(t *testing.T) {
	p := pattern(128, workload.Shared, workload.Strided, rw.Read, 32<<10, 512<<20)
	run := func(merge int) Result {
		r, err := Run(t.Context(), Config{Patterns: []workload.Pattern{p}, Scheduler: "fifo", ReadMerge: merge, Seed: 5}, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	merged, alone := run(DefaultReadMerge), run(-1)
	var mMiss, aMiss uint64
	for i := range merged.Servers {
		mMiss += merged.Servers[i].PageMisses
		aMiss += alone.Servers[i].PageMisses
	}
	if mMiss*2 > aMiss {
		t.Errorf("disk reads: merged %d, alone %d; want merging to at least halve them", mMiss, aMiss)
	}
	if merged.Makespan*10 > alone.Makespan*7 {
		t.Errorf("makespan: merged %v, alone %v; want merged at least 30%% shorter", merged.Makespan, alone.Makespan)
	}
	// 4 disks at up to 200 MB/s: 512 MiB takes at least 0.67 s.
	if ceiling := time.Duration(float64(p.TotalBytes) / (4 * 200e6) * 1e9); merged.Makespan > ceiling*3/2 {
		t.Errorf("merged makespan %v, want within 1.5x of the disks' ceiling %v", merged.Makespan, ceiling)
	}
}
