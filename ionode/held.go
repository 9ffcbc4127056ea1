package ionode

import (
	"slices"
	"sort"

	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// heldSet is the batches released by the scheduler and not yet
// dispatched, in release order. Behind a per-server limit it can hold
// thousands (every piece of large requests to busy servers): it is indexed
// by data server and by where each batch starts and ends, so that finding
// the oldest batch of a server, or the oldest that continues an access, and
// taking it from the middle, cost no scan and no move of the others.
type heldSet struct {
	places []sched.Batch // in release order; a taken batch leaves its place empty (no requests)
	seqs   []uint64      // the release number of each place, ascending
	live   int           // batches in places
	next   uint64        // release number of the next batch held
	perQ   [][]uint64    // data server -> release numbers of its batches, ascending
	// Release numbers by the range a batch covers on its data server, for
	// the default rule of continuing an access (nil: not indexed).
	starts, ends map[rangeKey][]uint64
}

// rangeKey is one end of a batch: data server, file, operation and offset.
type rangeKey struct {
	queue int
	file  uint64
	op    rw.Op
	off   int64
}

func newHeldSet(indexRanges bool) heldSet {
	var h heldSet
	if indexRanges {
		h.starts, h.ends = map[rangeKey][]uint64{}, map[rangeKey][]uint64{}
	}
	return h
}

// gone reports whether a place is empty (its batch was taken): a batch the
// scheduler releases carries at least one request.
func gone(b sched.Batch) bool { return len(b.Requests) == 0 }

// len is the number of batches held.
func (h *heldSet) len() int { return h.live }

// onServer is the number of batches of data server q held.
func (h *heldSet) onServer(q int) int {
	if q < len(h.perQ) {
		return len(h.perQ[q])
	}
	return 0
}

// add holds b, the newest.
func (h *heldSet) add(b sched.Batch) {
	s := h.next
	h.next++
	h.places = append(h.places, b)
	h.seqs = append(h.seqs, s)
	h.live++
	for len(h.perQ) <= b.Queue {
		h.perQ = append(h.perQ, nil)
	}
	h.perQ[b.Queue] = append(h.perQ[b.Queue], s)
	if h.starts != nil {
		k := rangeKey{b.Queue, b.File, b.Op, b.Offset}
		h.starts[k] = append(h.starts[k], s)
		k.off = b.Offset + b.Length
		h.ends[k] = append(h.ends[k], s)
	}
}

// place is the index in places of release number s.
func (h *heldSet) place(s uint64) int {
	return sort.Search(len(h.seqs), func(i int) bool { return h.seqs[i] >= s })
}

// batch is the held batch of release number s.
func (h *heldSet) batch(s uint64) *sched.Batch { return &h.places[h.place(s)] }

// take removes and returns the batch of release number s.
func (h *heldSet) take(s uint64) sched.Batch {
	i := h.place(s)
	b := h.places[i]
	h.places[i] = sched.Batch{} // drop the reference to its requests
	h.live--
	h.perQ[b.Queue] = remove(h.perQ[b.Queue], s)
	if h.starts != nil {
		k := rangeKey{b.Queue, b.File, b.Op, b.Offset}
		removeKey(h.starts, k, s)
		k.off = b.Offset + b.Length
		removeKey(h.ends, k, s)
	}
	switch {
	case h.live == 0:
		clear(h.places)
		h.places, h.seqs = h.places[:0], h.seqs[:0]
	case len(h.places) >= 64 && h.live < len(h.places)/2:
		k := 0 // compact, keeping the order
		for j, p := range h.places {
			if !gone(p) {
				h.places[k], h.seqs[k] = p, h.seqs[j]
				k++
			}
		}
		clear(h.places[k:])
		h.places, h.seqs = h.places[:k], h.seqs[:k]
	}
	return b
}

// remove deletes s from the ascending list l (the oldest, most often: no
// move).
func remove(l []uint64, s uint64) []uint64 {
	if len(l) > 0 && l[0] == s {
		return l[1:]
	}
	if i, ok := slices.BinarySearch(l, s); ok {
		return slices.Delete(l, i, i+1)
	}
	return l
}

func removeKey(m map[rangeKey][]uint64, k rangeKey, s uint64) {
	if l := remove(m[k], s); len(l) > 0 {
		m[k] = l
	} else {
		delete(m, k)
	}
}

// oldestOpen returns the release number of the oldest held batch whose
// data server is not full and, with idleOnly, whose file has no access in
// flight: for each open server, its batches in order until one qualifies.
func (n *Node) oldestOpen(idleOnly bool) (uint64, bool) {
	h := &n.held
	var best uint64
	found := false
	for q, l := range h.perQ {
		if len(l) == 0 || (found && l[0] > best) || n.full(q) {
			continue
		}
		for _, s := range l {
			if found && s > best {
				break
			}
			if !idleOnly || n.busy[h.batch(s).File] == 0 {
				best, found = s, true
				break
			}
		}
	}
	return best, found
}

// takeIf removes and returns the oldest held batch that continues a.
func (n *Node) takeIf(a Access) (sched.Batch, bool) {
	h := &n.held
	if h.starts == nil { // a rule of the caller's: ask it of every batch
		for i := range h.places {
			if !gone(h.places[i]) && n.continues(a, h.places[i]) {
				return h.take(h.seqs[i]), true
			}
		}
		return sched.Batch{}, false
	}
	// The default rule: a batch that starts where a ends or ends where a
	// starts, on its data server, in its file, for its operation.
	var best uint64
	found := false
	for _, c := range [2][]uint64{
		h.starts[rangeKey{a.Queue, a.File, a.Op, a.Offset + a.Length}],
		h.ends[rangeKey{a.Queue, a.File, a.Op, a.Offset}],
	} {
		for _, s := range c {
			if found && s > best {
				break
			}
			if a.Requests+len(h.batch(s).Requests) <= n.cfg.Aggregate {
				best, found = s, true
				break
			}
		}
	}
	if !found {
		return sched.Batch{}, false
	}
	return h.take(best), true
}
