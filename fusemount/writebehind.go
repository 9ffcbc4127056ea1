package fusemount

import (
	"io"
	"math"
	"sync"
)

// writeBehind holds the writes the mount has acknowledged to the kernel but
// the forwarder has not yet confirmed, up to a byte budget for the whole
// mount (Options.WriteBehind).
//
// Why: the kernel serialises direct writes to one file that extend it
// (and, without FOPEN_PARALLEL_DIRECT_WRITES, every write to one file): the
// next rank's write enters the mount only once the previous one has been
// answered. Answering after a copy, not after the backend has the bytes,
// lets N ranks' writes to one shared file reach the forwarder together, so
// its scheduler has the concurrency it exists to order. It is a client
// write-back cache in the manner of Lustre's dirty pages (max_dirty_mb)
// or NFS's unstable writes, with the same guarantees:
//
//   - a read, a stat or a truncate of a file first waits for the file's
//     pending writes it could observe (reads: those overlapping its range);
//   - a write overlapping a pending write waits for it, so the later
//     write's bytes win, as they must;
//   - close(2) (FUSE flush) and fsync(2) wait for every pending write of the
//     file and return the first error any of them met; a write after such a
//     failure fails at once with it.
type writeBehind struct {
	limit int64 // budget in bytes; 0: write-through

	mu    sync.Mutex
	cond  sync.Cond
	used  int64
	files map[*node]*pendingFile
}

// pendingFile is one file's writes in flight.
type pendingFile struct {
	spans map[uint64]span
	next  uint64
	err   error // first failure not yet reported by flush or fsync
}

type span struct{ lo, hi int64 }

func newWriteBehind(limit int64) *writeBehind {
	w := &writeBehind{limit: limit, files: map[*node]*pendingFile{}}
	w.cond.L = &w.mu
	return w
}

// overlaps reports whether a pending write of p intersects [lo, hi).
func (p *pendingFile) overlaps(lo, hi int64) bool {
	for _, s := range p.spans {
		if s.lo < hi && lo < s.hi {
			return true
		}
	}
	return false
}

// fits reports whether a write of n bytes can be taken into the budget now.
// A write larger than the whole budget is never taken (it goes through).
func (w *writeBehind) fits(n int64) bool { return w.used+n <= w.limit }

// begin registers a write of [off, off+n) to f once the budget has room and
// no pending write of f overlaps it. It returns the write's id, or ok false
// when the write must go through synchronously (write-behind off, or larger
// than the budget), or the file's recorded failure.
func (w *writeBehind) begin(f *node, off, n int64) (id uint64, ok bool, err error) {
	if w == nil || n > w.limit || n == 0 {
		return 0, false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		p := w.files[f]
		if p != nil && p.err != nil {
			return 0, false, p.err
		}
		if w.fits(n) && (p == nil || !p.overlaps(off, off+n)) {
			if p == nil {
				p = &pendingFile{spans: map[uint64]span{}}
				w.files[f] = p
			}
			p.next++
			p.spans[p.next] = span{off, off + n}
			w.used += n
			return p.next, true, nil
		}
		w.cond.Wait()
	}
}

// end records the completion of write id of f (err: its failure, or a
// short count) and frees its budget.
func (w *writeBehind) end(f *node, id uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.files[f]
	s := p.spans[id]
	delete(p.spans, id)
	w.used -= s.hi - s.lo
	if err != nil && p.err == nil {
		p.err = err
	}
	if len(p.spans) == 0 && p.err == nil {
		delete(w.files, f)
	}
	w.cond.Broadcast()
}

// waitRange blocks until no pending write of f overlaps [lo, hi).
func (w *writeBehind) waitRange(f *node, lo, hi int64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		p := w.files[f]
		if p == nil || !p.overlaps(lo, hi) {
			return
		}
		w.cond.Wait()
	}
}

// drain blocks until f has no pending write and returns, and forgets, the
// first failure since the last drain.
func (w *writeBehind) drain(f *node) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		p := w.files[f]
		if p == nil {
			return nil
		}
		if len(p.spans) == 0 {
			delete(w.files, f)
			return p.err
		}
		w.cond.Wait()
	}
}

// wait blocks until f has no pending write, keeping any failure for the
// next drain (a stat or truncate does not report a write's error).
func (w *writeBehind) wait(f *node) { w.waitRange(f, math.MinInt64, math.MaxInt64) }

// errShortWrite is a write-behind that the backend took only in part.
var errShortWrite = io.ErrShortWrite
