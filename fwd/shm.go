package fwd

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/fwd/wire"
)

// Shared-memory transport for clients on the daemon's host. Over a Unix
// socket the client creates a memfd, sizes it, seals it against shrinking
// (F_SEAL_SHRINK|F_SEAL_SEAL: the daemon's mapping can never lose its
// pages, so touching it never raises SIGBUS), maps it and passes the
// descriptor with SCM_RIGHTS in an OpShm frame. Reads and writes then carry
// (offset, length) into the region: the daemon preads into and pwrites
// from the shared pages, and only a few dozen bytes per request cross the
// socket.

// Errors of the shared-memory transport.
var (
	ErrShm = errors.New("fwd: shared memory")
)

// DefaultShmSize is the size of a client's shared region.
const DefaultShmSize = 64 << 20

// maxQueuedFDs bounds the descriptors a connection holds before OpShm
// takes one; more are closed on arrival.
const maxQueuedFDs = 2

// fdReader reads a Unix stream connection with recvmsg and keeps the
// descriptors that arrive with the bytes (at most maxQueuedFDs). Only the
// connection's reader goroutine uses it.
type fdReader struct {
	uc  *net.UnixConn
	oob []byte
	fds []int
}

func newFDReader(uc *net.UnixConn) *fdReader {
	return &fdReader{uc: uc, oob: make([]byte, unix.CmsgSpace(4*4))}
}

func (r *fdReader) Read(p []byte) (int, error) {
	n, oobn, _, _, err := r.uc.ReadMsgUnix(p, r.oob)
	if n < 0 { // recvmsg failed: the counts may be -1
		n, oobn = 0, 0
	}
	if oobn > 0 {
		r.collect(r.oob[:oobn])
	}
	if n == 0 && err == nil && len(p) > 0 {
		return 0, io.EOF
	}
	return n, err
}

func (r *fdReader) collect(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if len(r.fds) < maxQueuedFDs {
				r.fds = append(r.fds, fd)
			} else {
				_ = unix.Close(fd)
			}
		}
	}
}

// take returns the oldest descriptor received, or -1.
func (r *fdReader) take() int {
	if len(r.fds) == 0 {
		return -1
	}
	fd := r.fds[0]
	r.fds = r.fds[1:]
	return fd
}

// closeAll closes the descriptors not taken.
func (r *fdReader) closeAll() {
	for _, fd := range r.fds {
		_ = unix.Close(fd)
	}
	r.fds = nil
}

// mapShared maps a client's region: fd must be a memfd sealed against
// shrinking, at least size bytes long. It closes fd.
func mapShared(fd int, size int64) ([]byte, error) {
	defer unix.Close(fd)
	if size <= 0 || size > wire.MaxShm {
		return nil, fmt.Errorf("%w: region of %d bytes (1 to %d)", ErrShm, size, wire.MaxShm)
	}
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: not a sealable memfd: %v", ErrShm, err)
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("%w: memfd not sealed against shrinking", ErrShm)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrShm, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < size {
		return nil, fmt.Errorf("%w: memfd of %d bytes, region of %d", ErrShm, st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap: %v", ErrShm, err)
	}
	return mem, nil
}

// shmSlice returns region[off:off+n] if that range lies inside the region.
func shmSlice(region []byte, off uint64, n int64) ([]byte, bool) {
	size := uint64(len(region))
	if n < 0 || off > size || uint64(n) > size-off {
		return nil, false
	}
	return region[off : off+uint64(n) : off+uint64(n)], true
}

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
		return nil, fmt.Errorf("%w: memfd_create: %v", ErrShm, err)
	}
	fail := func(what string, err error) (*region, error) {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%w: %s: %v", ErrShm, what, err)
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
