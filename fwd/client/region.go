package client

import (
	"fmt"
	"math/bits"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/fwd/internal/shm"
)

// The client's side of the shared-memory transport (docs/protocol.md,
// "Shared-memory data path"): over a Unix socket the client creates a
// memfd, sizes it, seals it against shrinking and growing, maps it and
// passes the descriptor to the daemon (clientConn.offerShm). Reads and
// writes then carry (offset, length) into the region, allocated here.

// DefaultShmSize is Options.ShmSize's default: the size of a client's
// shared region in bytes.
const DefaultShmSize = 64 << 20

// region is a client's shared memory and its allocator: 64 KiB chunks
// handed out first-fit (so the same warm pages are reused), one bit per
// chunk. Safe for concurrent use.
type region struct {
	fd  int
	mem []byte

	mu       sync.Mutex
	used     []uint64 // bit i: chunk i allocated
	inuse    int      // chunks allocated (requests' and Buffers')
	held     int      // of which held by Buffers (released by Buffer.Free)
	closing  bool     // close waits for the requests' chunks; alloc fails
	unmapped bool
	idle     sync.Cond
}

const chunkShift = 16 // 64 KiB chunks

// newRegion creates a sealed memfd of size bytes (rounded up to a chunk)
// and maps it.
func newRegion(size int) (*region, error) {
	size = (size + 1<<chunkShift - 1) &^ (1<<chunkShift - 1)
	fd, err := unix.MemfdCreate("adaptio-fwd", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("%w: memfd_create: %v", shm.Err, err)
	}
	fail := func(what string, err error) (*region, error) {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%w: %s: %v", shm.Err, what, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("ftruncate", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail("seal", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	chunks := size >> chunkShift
	r := &region{fd: fd, mem: mem, used: make([]uint64, (chunks+63)/64)}
	r.idle.L = &r.mu
	return r, nil
}

// close waits until every request's allocation is freed (the connection
// has failed its calls by then), then unmaps the region and closes its
// descriptor; if Buffers still hold parts of it, the last Buffer.Free does
// that instead. The daemon's mapping keeps the pages alive until it lets go.
func (r *region) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closing = true
	for r.inuse > r.held {
		r.idle.Wait()
	}
	r.unmapLocked()
	r.mu.Unlock()
}

// unmapLocked releases the mapping once the region is closing and nothing
// uses it.
func (r *region) unmapLocked() {
	if !r.closing || r.inuse > 0 || r.unmapped {
		return
	}
	r.unmapped = true
	_ = unix.Munmap(r.mem)
	_ = unix.Close(r.fd)
}

// alloc reserves n bytes (n > 0) and returns their offset; ok is false
// when no run of free chunks is long enough (the caller sends the data
// over the socket instead).
func (r *region) alloc(n int) (off int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.allocLocked(n)
}

// allocHeld is alloc for a Buffer: close does not wait for it (see freeHeld).
func (r *region) allocHeld(n int) (off int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	off, ok = r.allocLocked(n)
	if ok {
		r.held += (n + 1<<chunkShift - 1) >> chunkShift
	}
	return off, ok
}

func (r *region) allocLocked(n int) (off int, ok bool) {
	k := (n + 1<<chunkShift - 1) >> chunkShift
	total := len(r.mem) >> chunkShift
	if r.closing {
		return 0, false
	}
	run := 0
	for i := 0; i < total; i++ {
		w := r.used[i>>6]
		if run == 0 && i&63 == 0 && w == ^uint64(0) {
			i += 63 // a full word: skip it
			continue
		}
		if w&(1<<(i&63)) != 0 {
			run = 0
			continue
		}
		run++
		if run == k {
			first := i - k + 1
			for j := first; j <= i; j++ {
				r.used[j>>6] |= 1 << (j & 63)
			}
			r.inuse += k
			return first << chunkShift, true
		}
	}
	return 0, false
}

// free releases what alloc(n) returned at off.
func (r *region) free(off, n int) {
	k := (n + 1<<chunkShift - 1) >> chunkShift
	first := off >> chunkShift
	r.mu.Lock()
	for j := first; j < first+k; j++ {
		r.used[j>>6] &^= 1 << (j & 63)
	}
	r.inuse -= k
	if r.inuse == r.held && r.closing {
		r.idle.Broadcast()
	}
	r.mu.Unlock()
}

// freeHeld releases a Buffer's chunks; on a closed region the last one
// unmaps it.
func (r *region) freeHeld(off, n int) {
	k := (n + 1<<chunkShift - 1) >> chunkShift
	first := off >> chunkShift
	r.mu.Lock()
	defer r.mu.Unlock()
	for j := first; j < first+k; j++ {
		r.used[j>>6] &^= 1 << (j & 63)
	}
	r.inuse -= k
	r.held -= k
	r.unmapLocked()
}

// inUse is the number of chunks allocated, counted from the bitmap (for tests).
func (r *region) inUse() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, w := range r.used {
		n += bits.OnesCount64(w)
	}
	return n
}
