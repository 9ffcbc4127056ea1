package client

import (
	"testing"

	"pgregory.net/rapid"
)

// The region's allocator against a naive reference: first fit over a
// slice of booleans; allocations never overlap and free gives chunks back.
func TestRegionAllocMatchesReference(t *testing.T) {
	r, err := newRegion(40 << chunkShift) // 40 chunks: a partial second bitmap word
	if err != nil {
		t.Skipf("memfd: %v", err)
	}
	defer func() {
		r.inuse = 0 // the reference's live allocations are abandoned
		r.close()
	}()
	rapid.Check(t, func(t *rapid.T) {
		for i := range r.used {
			r.used[i] = 0
		}
		r.inuse = 0
		ref := make([]bool, 40)
		type a struct{ off, n int }
		var live []a
		for step := 0; step < 60; step++ {
			if len(live) > 0 && rapid.Bool().Draw(t, "free") {
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				x := live[i]
				live = append(live[:i], live[i+1:]...)
				r.free(x.off, x.n)
				for j := x.off >> chunkShift; j < (x.off+x.n+1<<chunkShift-1)>>chunkShift; j++ {
					ref[j] = false
				}
				continue
			}
			n := rapid.IntRange(1, 12<<chunkShift).Draw(t, "n")
			k := (n + 1<<chunkShift - 1) >> chunkShift
			want := -1
			for s := 0; s+k <= len(ref) && want < 0; s++ {
				free := true
				for j := s; j < s+k; j++ {
					free = free && !ref[j]
				}
				if free {
					want = s
				}
			}
			off, ok := r.alloc(n)
			if ok != (want >= 0) || (ok && off != want<<chunkShift) {
				t.Fatalf("alloc(%d) = %d, %v; reference first fit at chunk %d", n, off, ok, want)
			}
			if ok {
				for j := want; j < want+k; j++ {
					ref[j] = true
				}
				live = append(live, a{off, n})
			}
			used := 0
			for _, b := range ref {
				if b {
					used++
				}
			}
			if r.inUse() != used || r.inuse != used {
				t.Fatalf("in use: bitmap %d, counter %d, reference %d", r.inUse(), r.inuse, used)
			}
		}
	})
}
