package fusemount

import (
	"math/rand/v2"
	"testing"
)

// planReads feeds reads (offset, size) to a new plan and returns how many
// of them asked for bytes past their end (prefetched).
func planReads(reads [][2]int64) (prefetched int) {
	p := newReadPlan(8 << 20)
	for _, r := range reads {
		if p.read(r[0], r[1]) > r[0]+r[1] {
			prefetched++
		}
	}
	return prefetched
}

func TestReadPlan(t *testing.T) {
	const k = 64 << 10
	rnd := rand.New(rand.NewPCG(1, 2))
	var (
		contiguous, strided, segments, random, randomBig, backwards [][2]int64
	)
	for i := range int64(256) {
		contiguous = append(contiguous, [2]int64{i * k, k})
	}
	// 8 ranks reading one file 1D-strided, in the order a loaded machine
	// runs them: each round's ranks shuffled, and rank 0 two rounds behind.
	for round := range int64(32) {
		for _, r := range rnd.Perm(8) {
			rr := round
			if r == 0 {
				rr = max(round-2, 0)
			}
			strided = append(strided, [2]int64{(rr*8 + int64(r)) * k, k})
		}
	}
	// 8 ranks each reading its own 16 MiB segment, interleaved.
	for i := range int64(64) {
		for r := range int64(8) {
			segments = append(segments, [2]int64{r*(16<<20) + i*k, k})
		}
	}
	for range 1024 {
		random = append(random, [2]int64{rnd.Int64N(1<<30) &^ 4095, 4096})
		randomBig = append(randomBig, [2]int64{rnd.Int64N(256) << 20, 1 << 20})
	}
	for i := int64(255); i >= 0; i-- {
		backwards = append(backwards, [2]int64{i * k, k})
	}
	for _, tt := range []struct {
		name     string
		reads    [][2]int64
		min, max int // reads that prefetch
	}{
		{"contiguous", contiguous, 254, 254}, // all but the first two
		{"8 ranks 1D-strided, out of order", strided, 200, 254},
		{"8 ranks' segments", segments, 496, 496}, // all but each rank's first two
		{"random 4 KiB in 1 GiB", random, 0, 0},
		{"random 1 MiB in 256 MiB", randomBig, 0, 30}, // a few: in a small file, random reads may look dense
		{"backwards", backwards, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := planReads(tt.reads); got < tt.min || got > tt.max {
				t.Errorf("%d of %d reads prefetch, want %d to %d", got, len(tt.reads), tt.min, tt.max)
			}
		})
	}
}

func TestReadPlanAhead(t *testing.T) {
	p := newReadPlan(4 << 20)
	if got := p.read(0, 1<<20); got > 1<<20 {
		t.Fatalf("first read: until %d, want none past its end", got)
	}
	if got := p.read(1<<20, 1<<20); got > 2<<20 {
		t.Fatalf("second read: until %d, want none past its end", got)
	}
	if got, want := p.read(2<<20, 1<<20), int64(3<<20+4<<20); got != want {
		t.Fatalf("third read: until %d, want %d (its end plus ahead)", got, want)
	}
	// A rank behind the stream's front gets the front's window.
	if got, want := p.read(1<<20+512<<10, 64<<10), int64(3<<20+4<<20); got != want {
		t.Fatalf("a read behind the front: until %d, want %d", got, want)
	}
	p.reset()
	if got := p.read(4<<20, 1<<20); got > 5<<20 {
		t.Fatalf("after reset: until %d, want none past the read", got)
	}
}

// Streams reading their own segments do not prefetch into the next one's.
func TestReadPlanSegments(t *testing.T) {
	p := newReadPlan(8 << 20)
	const seg, k = 16 << 20, 64 << 10 // segments longer than the density window
	for i := range int64(seg / k) {
		for r := range int64(8) {
			off := r*seg + i*k
			if until := p.read(off, k); r < 7 && until > (r+1)*seg {
				t.Fatalf("rank %d's read at %d prefetches to %d, into the next segment (%d)", r, off, until, (r+1)*seg)
			}
		}
	}
}

// The plan tracks a bounded number of streams.
func TestReadPlanStreamsBounded(t *testing.T) {
	p := newReadPlan(1 << 20)
	for i := range int64(10 * readPlanStreams) {
		p.read(i<<30, 4096)
	}
	if len(p.streams) != readPlanStreams {
		t.Fatalf("%d streams, want %d", len(p.streams), readPlanStreams)
	}
}
