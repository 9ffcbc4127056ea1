package sched

import (
	"cmp"
	"slices"
	"time"

	"github.com/adaptio/adaptio/rw"
)

// skey identifies a stream: the requests of one file, one operation, to one
// data server. Only requests of one stream can be aggregated (a batch goes
// to one server).
type skey struct {
	queue int
	file  uint64
	op    rw.Op
}

// stream holds one stream's queued requests in offset order (ties by
// arrival), as AGIOS's per-file read and write queues do.
type stream struct {
	key   skey
	reqs  []item // sorted by (Offset, seq)
	bytes int64  // total queued bytes
	id    uint64 // creation order, for deterministic tie breaks
	hidx  int    // position in a heap, -1 when not in one
	k1    int64  // heap key (compared first), set by the owner before push/fix
	k2    uint64 // heap key tie break

	// Per-algorithm state.
	inRing  bool          // mlf, hbrr: in the round-robin ring
	quantum time.Duration // aioli: time quantum for the next turn
}

func (s *stream) head() *item { return &s.reqs[0] }

// streamSet indexes streams by key and recycles empty ones. The index is
// open addressing with linear probing and backward-shift deletion, so the
// churn of streams appearing and emptying neither allocates nor degrades.
type streamSet struct {
	tab    []*stream // nil: empty slot
	n      int
	shift  uint8
	free   []*stream
	nextID uint64
}

func (k skey) hash() uint64 {
	h := k.file*0x9e3779b97f4a7c15 ^ uint64(k.queue)*0xc2b2ae3d27d4eb4f ^ uint64(k.op)
	h ^= h >> 29
	return h * 0xbf58476d1ce4e5b9
}

func (ss *streamSet) slot(k skey) int { return int(k.hash() >> ss.shift) }

func (ss *streamSet) lookup(k skey) *stream {
	if ss.n == 0 {
		return nil
	}
	mask := len(ss.tab) - 1
	for i := ss.slot(k); ; i = (i + 1) & mask {
		s := ss.tab[i]
		if s == nil || s.key == k {
			return s
		}
	}
}

func (ss *streamSet) insert(s *stream) {
	if 2*(ss.n+1) > len(ss.tab) {
		old := ss.tab
		size := max(256, 2*len(old))
		ss.tab = make([]*stream, size)
		ss.shift = uint8(64 - bitsLen(size-1))
		ss.n = 0
		for _, o := range old {
			if o != nil {
				ss.insert(o)
			}
		}
	}
	mask := len(ss.tab) - 1
	i := ss.slot(s.key)
	for ss.tab[i] != nil {
		i = (i + 1) & mask
	}
	ss.tab[i] = s
	ss.n++
}

func (ss *streamSet) delete(k skey) {
	if ss.n == 0 {
		return
	}
	mask := len(ss.tab) - 1
	i := ss.slot(k)
	for ss.tab[i] == nil || ss.tab[i].key != k {
		if ss.tab[i] == nil {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; ss.tab[j] != nil; j = (j + 1) & mask {
		h := ss.slot(ss.tab[j].key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			ss.tab[i] = ss.tab[j]
			i = j
		}
	}
	ss.tab[i] = nil
	ss.n--
}

func (ss *streamSet) get(k skey) (s *stream, created bool) {
	if s = ss.lookup(k); s != nil {
		return s, false
	}
	if n := len(ss.free); n > 0 {
		s = ss.free[n-1]
		ss.free = ss.free[:n-1]
	} else {
		s = &stream{}
	}
	ss.nextID++
	*s = stream{key: k, reqs: s.reqs[:0], id: ss.nextID, hidx: -1}
	ss.insert(s)
	return s, true
}

// insert places it in offset order and returns its index.
func (s *stream) insert(it item) int {
	i, _ := slices.BinarySearchFunc(s.reqs, it, func(a, b item) int {
		if c := cmp.Compare(a.r.Offset, b.r.Offset); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	s.reqs = slices.Insert(s.reqs, i, it)
	s.bytes += it.r.Length
	return i
}

// release recycles an empty stream.
func (ss *streamSet) release(s *stream) {
	ss.delete(s.key)
	clear(s.reqs) // take already cleared what it removed
	s.reqs = s.reqs[:0]
	ss.free = append(ss.free, s)
}

// drainAll appends every queued item of every stream and empties the set.
func (ss *streamSet) drainAll(dst []item) []item {
	for i, s := range ss.tab {
		if s == nil {
			continue
		}
		dst = append(dst, s.reqs...)
		clear(s.reqs)
		s.reqs = s.reqs[:0]
		ss.free = append(ss.free, s)
		ss.tab[i] = nil
	}
	ss.n = 0
	return dst
}

// runLimits bound an aggregated batch.
type runLimits struct {
	maxReqs  int
	maxBytes int64
}

// run returns the contiguous run [lo, hi) of s.reqs around index i that
// respects lim: requests with exactly adjacent byte ranges, at most maxReqs
// of them and at most maxBytes in total (a single request is always
// allowed). fits, when not nil, is asked for each extension.
func (s *stream) run(i int, lim runLimits, fits func(reqs []item) bool) (lo, hi int) {
	lo, hi = i, i+1
	total := s.reqs[i].r.Length
	for hi-lo < lim.maxReqs {
		grew := false
		if hi < len(s.reqs) && s.reqs[hi].r.Offset == s.reqs[hi-1].r.End() &&
			total+s.reqs[hi].r.Length <= lim.maxBytes && (fits == nil || fits(s.reqs[lo:hi+1])) {
			total += s.reqs[hi].r.Length
			hi++
			grew = true
		} else if lo > 0 && s.reqs[lo-1].r.End() == s.reqs[lo].r.Offset &&
			total+s.reqs[lo-1].r.Length <= lim.maxBytes && (fits == nil || fits(s.reqs[lo-1:hi])) {
			lo--
			total += s.reqs[lo].r.Length
			grew = true
		}
		if !grew {
			break
		}
	}
	return lo, hi
}

// take removes s.reqs[lo:hi] and appends the requests to buf.
func (s *stream) take(lo, hi int, buf []Request) []Request {
	for j := lo; j < hi; j++ {
		buf = append(buf, s.reqs[j].r)
		s.bytes -= s.reqs[j].r.Length
	}
	n := len(s.reqs)
	s.reqs = slices.Delete(s.reqs, lo, hi)
	clear(s.reqs[len(s.reqs):n])
	return buf
}

// streamHeap is an indexed binary min-heap of streams by (k1, k2).
type streamHeap struct {
	s []*stream
}

func (h *streamHeap) less(a, b *stream) bool {
	return a.k1 < b.k1 || (a.k1 == b.k1 && a.k2 < b.k2)
}

func (h *streamHeap) len() int { return len(h.s) }

func (h *streamHeap) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].hidx = i
	h.s[j].hidx = j
}

func (h *streamHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.s[i], h.s[p]) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *streamHeap) down(i int) {
	n := len(h.s)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(h.s[r], h.s[l]) {
			m = r
		}
		if !h.less(h.s[m], h.s[i]) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *streamHeap) push(s *stream) {
	s.hidx = len(h.s)
	h.s = append(h.s, s)
	h.up(s.hidx)
}

// fix restores the heap after s's key changed.
func (h *streamHeap) fix(s *stream) {
	h.up(s.hidx)
	h.down(s.hidx)
}

func (h *streamHeap) remove(s *stream) {
	i := s.hidx
	last := len(h.s) - 1
	if i != last {
		h.swap(i, last)
	}
	h.s[last] = nil
	h.s = h.s[:last]
	s.hidx = -1
	if i != last {
		h.fix(h.s[i])
	}
}

func (h *streamHeap) clear() {
	for _, s := range h.s {
		s.hidx = -1
	}
	clear(h.s)
	h.s = h.s[:0]
}
