package fusemount

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/adaptio/adaptio/fwd/client"
)

// The mount's prefetcher: reads of files open read-only are served from
// blocks of the file fetched from the forwarder ahead of them, several
// outstanding at once, so that a read is answered from memory with one
// FUSE round trip instead of waiting for the forwarder's.
//
// The mount sees the reads of one file by all its processes; readPlan
// (readplan.go) finds the sequential streams among them (one process's
// contiguous reads, or many processes reading one file in turn, as
// 1D-strided MPI-IO ranks do) and says how far ahead of each to fetch.
// Blocks are Options.PrefetchBlock bytes, aligned, in the client's shared
// region when it has room: the daemon preads into them, and the reply to
// the kernel is written from them (no copy in the mount). A block is freed
// once every byte of it has been read, or when the file's last read-only
// open on this mount closes. Reads that continue no stream, and reads of
// files open for writing, go to the forwarder as issued.
//
// Memory: at most Options.PrefetchFile bytes of blocks per file and
// Options.Prefetch bytes for the mount; a fetch that would exceed either
// first frees the file's least recently read blocks that no read holds,
// and is skipped if that is not enough.
//
// Consistency is the page cache's (cache.go), close to open: a file's
// blocks are dropped when an open finds the file changed (size, times or
// inode, or written through this mount since), when this mount writes,
// truncates or allocates the file (the range written, and the block
// holding the end of the file), when a lock is taken on it, and while the
// file is open for writing on this mount nothing is prefetched. A fetch
// first waits for this mount's pending writes to its block, and one
// overlapped by a write begun meanwhile is discarded.

// DefaultPrefetch is Options.Prefetch's default: the mount's prefetch
// memory in bytes.
const DefaultPrefetch = 256 << 20

// DefaultPrefetchFile is Options.PrefetchFile's default: one file's
// prefetch memory in bytes.
const DefaultPrefetchFile = 64 << 20

// DefaultPrefetchAhead is how far ahead of a sequential stream's furthest
// read the prefetcher keeps blocks loaded or loading.
const DefaultPrefetchAhead = 8 << 20

// prefetchStale is how many reads of a file a block fetched ahead may wait
// unread before it may be evicted for another.
const prefetchStale = 4096

// PrefetchStats counts the prefetcher's work since the mount (Server.PrefetchStats).
type PrefetchStats struct {
	Fetched int64 // bytes fetched into blocks from the forwarder
	Served  int64 // bytes of reads answered from blocks
	Direct  int64 // bytes of reads of read-only opens sent to the forwarder as issued
	Held    int64 // bytes of blocks held now
	Peak    int64 // most bytes of blocks held at once
	Dropped int64 // blocks dropped unread or partly read (invalidated, evicted, last close)
}

// prefetchPool is the mount's prefetch memory and counters.
type prefetchPool struct {
	block, ahead, perFile, limit int64

	used                    atomic.Int64
	peak                    atomic.Int64
	fetched, served, direct atomic.Int64
	dropped                 atomic.Int64
}

func newPrefetchPool(o *Options) *prefetchPool {
	if o.Prefetch <= 0 {
		return nil
	}
	return &prefetchPool{block: int64(o.PrefetchBlock), ahead: max(int64(o.PrefetchBlock), DefaultPrefetchAhead),
		perFile: min(o.PrefetchFile, o.Prefetch), limit: o.Prefetch}
}

// reserve takes n bytes of the mount's budget, if it has them.
func (p *prefetchPool) reserve(n int64) bool {
	for {
		u := p.used.Load()
		if u+n > p.limit {
			return false
		}
		if p.used.CompareAndSwap(u, u+n) {
			for {
				pk := p.peak.Load()
				if u+n <= pk || p.peak.CompareAndSwap(pk, u+n) {
					return true
				}
			}
		}
	}
}

func (p *prefetchPool) stats() PrefetchStats {
	if p == nil {
		return PrefetchStats{}
	}
	return PrefetchStats{Fetched: p.fetched.Load(), Served: p.served.Load(), Direct: p.direct.Load(),
		Held: p.used.Load(), Peak: p.peak.Load(), Dropped: p.dropped.Load()}
}

// prefetch is one file's blocks on this mount, shared by its read-only
// opens (node.pf).
type prefetch struct {
	mu      sync.Mutex
	plan    *readPlan
	blocks  map[int64]*pblock // by index (offset / block size)
	held    int64             // bytes of this file's blocks not yet freed
	size    int64             // the file's size at its last open: nothing is fetched past it
	writers int               // opens for writing on this mount: no prefetching meanwhile
	clock   uint64
}

// pblock is one block of a file: loading until done is closed, then
// holding n bytes (fewer than the block size at the end of the file).
type pblock struct {
	idx    int64
	buf    *client.Buffer
	done   chan struct{}
	n      int   // set before done is closed
	err    error // the fetch's failure (set before done is closed)
	refs   int   // the map's (while listed), the fetch's (until done) and each read's
	served int64 // bytes of reads answered from it
	used   uint64
}

// unref drops one reference to b (pf.mu held); the last frees its memory.
func (pf *prefetch) unref(pool *prefetchPool, b *pblock) {
	b.refs--
	if b.refs > 0 {
		return
	}
	size := int64(b.buf.Len())
	b.buf.Free()
	pf.held -= size
	pool.used.Add(-size)
}

// unlist removes b from the map (pf.mu held).
func (pf *prefetch) unlist(pool *prefetchPool, b *pblock) {
	delete(pf.blocks, b.idx)
	if !isDone(b) || b.served < int64(b.n) {
		pool.dropped.Add(1)
	}
	pf.unref(pool, b)
}

// dropPrefetched forgets the file's blocks overlapping [lo, hi) (hi < 0:
// to the end of the file) and the block holding the end of the file as of
// its last open, whose short length says where the file ended; lo < 0
// forgets them all, and the streams.
func (n *node) dropPrefetched(lo, hi int64) {
	pool := n.pool
	if pool == nil {
		return
	}
	pf := &n.pf
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if lo < 0 && pf.plan != nil {
		pf.plan.reset()
	}
	for idx, b := range pf.blocks {
		start := idx * pool.block
		tail := start+pool.block >= pf.size
		if lo < 0 || tail || start+pool.block > lo && (hi < 0 || start < hi) {
			pf.unlist(pool, b)
		}
	}
}

func isDone(b *pblock) bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// prefetchOpened records an open for writing (w: the file's blocks are
// dropped, and none fetched until it closes) or a cached open that found
// the file at size.
func (n *node) prefetchOpened(w bool, size int64) {
	if n.pool == nil {
		return
	}
	if w {
		n.dropPrefetched(-1, -1)
	}
	n.pf.mu.Lock()
	if w {
		n.pf.writers++
	} else {
		n.pf.size = size
	}
	n.pf.mu.Unlock()
}

// prefetchWriterClosed ends an open for writing.
func (n *node) prefetchWriterClosed() {
	if n.pool == nil {
		return
	}
	n.pf.mu.Lock()
	n.pf.writers--
	n.pf.mu.Unlock()
}

// readPrefetched answers a read of a cached open from the file's blocks,
// fetching the blocks it and the plan ask for; ok is false when the read
// is to go to the forwarder as issued (random, or no memory for it).
func (h *handle) readPrefetched(size int, off int64) (_ fuse.ReadResult, ok bool) {
	n, pool := h.n, h.n.pool
	pf := &n.pf
	bs := pool.block
	end := off + int64(size)
	pf.mu.Lock()
	if pf.writers > 0 {
		pf.mu.Unlock()
		return nil, false
	}
	if pf.plan == nil {
		pf.plan = newReadPlan(pool.ahead)
		pf.blocks = map[int64]*pblock{}
	}
	pf.clock++
	until := pf.plan.read(off, int64(size))
	if until > end {
		// Sequential: the blocks of the read, then those ahead, in order,
		// while memory allows.
		lim := min(until, pf.size)
		for idx := off / bs; idx*bs < lim; idx++ {
			if _, ok := pf.blocks[idx]; ok {
				continue
			}
			if !h.fetch(idx, off/bs, (end-1)/bs) {
				break
			}
		}
	}
	// Served from blocks only if they cover the whole read.
	first, lastIdx := off/bs, (end-1)/bs
	var bl [4]*pblock
	blocks := bl[:0]
	for idx := first; idx <= lastIdx; idx++ {
		b, ok := pf.blocks[idx]
		if !ok {
			pf.mu.Unlock()
			return nil, false
		}
		blocks = append(blocks, b)
	}
	for _, b := range blocks {
		b.refs++
		b.used = pf.clock
	}
	pf.mu.Unlock()

	r := &blockRead{pf: pf, pool: pool, blocks: blocks}
	for _, b := range blocks {
		<-b.done
		if b.err != nil {
			r.Done()
			return nil, false // the read as issued reports the error, if it persists
		}
	}
	// The slices: up to the end of the read or of the file as fetched.
	pos := off
	for _, b := range blocks {
		start := b.idx * bs
		lo, hi := pos-start, min(end-start, int64(b.n))
		if lo >= hi {
			break
		}
		r.slices = append(r.slices, b.buf.Bytes()[lo:hi])
		r.size += int(hi - lo)
		pos = start + hi
		if hi < bs {
			break // the end of the file
		}
	}
	pool.served.Add(int64(r.size))
	pf.mu.Lock()
	for i, b := range blocks {
		if i < len(r.slices) {
			b.served += int64(len(r.slices[i]))
		}
		if b.served >= int64(b.n) && pf.blocks[b.idx] == b {
			pf.unlist(pool, b) // read whole: freed once this read is answered
		}
	}
	pf.mu.Unlock()
	if r.size == 0 { // go-fuse writes an empty reply without calling Done
		r.Done()
		return fuse.ReadResultData(nil), true
	}
	return r, true
}

// fetch starts loading block idx (pf.mu held) and reports whether it did:
// false when the file's or the mount's budget has no room even after
// freeing idle blocks of the file other than the read's own, blocks
// [first, last].
func (h *handle) fetch(idx, first, last int64) bool {
	n, pool := h.n, h.n.pool
	pf := &n.pf
	bs := pool.block
	for pf.held+bs > pool.perFile || !pool.reserve(bs) {
		if !pf.evict(pool, first, last) {
			return false
		}
	}
	buf, err := h.c.AllocBuffer(int(bs))
	if err != nil {
		pool.used.Add(-bs)
		return false
	}
	b := &pblock{idx: idx, buf: buf, done: make(chan struct{}), refs: 2, used: pf.clock}
	pf.blocks[idx] = b
	pf.held += bs
	h.loads.Add(1)
	go func() {
		defer h.loads.Done()
		start := idx * bs
		n.wb.waitRange(n, start, start+bs) // this mount's pending writes land first
		k, err := h.f.ReadBuffer(buf, start)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		pool.fetched.Add(int64(k))
		pf.mu.Lock()
		b.n, b.err = k, err
		close(b.done)
		if err != nil && pf.blocks[idx] == b {
			pf.unlist(pool, b)
		}
		pf.unref(pool, b)
		pf.mu.Unlock()
	}()
	return true
}

// evict frees one loaded block of the file that no read holds, outside
// [first, last] (pf.mu held): the least recently read of those partly
// read (behind their readers), else one unread for prefetchStale reads
// (fetched for a stream that went away). Blocks fetched ahead and not yet
// read are kept: evicting them for others ahead would fetch twice.
// It reports false if there is none.
func (pf *prefetch) evict(pool *prefetchPool, first, last int64) bool {
	var victim *pblock
	for idx, b := range pf.blocks {
		if idx >= first && idx <= last || b.refs > 1 || !isDone(b) {
			continue
		}
		if b.served == 0 && b.used+prefetchStale > pf.clock {
			continue
		}
		if victim == nil || b.used < victim.used {
			victim = b
		}
	}
	if victim == nil {
		return false
	}
	pf.unlist(pool, victim)
	return true
}

// blockRead is a read's reply lying in prefetched blocks: go-fuse writes
// it from them (writev) and calls Done, which lets them go.
type blockRead struct {
	pf     *prefetch
	pool   *prefetchPool
	blocks []*pblock
	slices [][]byte
	size   int
	once   sync.Once
}

func (r *blockRead) Size() int { return r.size }

func (r *blockRead) Slices() ([][]byte, fuse.Status) { return r.slices, fuse.OK }

func (r *blockRead) Bytes(buf []byte) ([]byte, fuse.Status) {
	buf = buf[:0]
	for _, s := range r.slices {
		buf = append(buf, s...)
	}
	return buf, fuse.OK
}

func (r *blockRead) Done() {
	r.once.Do(func() {
		r.pf.mu.Lock()
		for _, b := range r.blocks {
			r.pf.unref(r.pool, b)
		}
		r.pf.mu.Unlock()
	})
}
