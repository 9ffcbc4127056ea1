package fwd

import (
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
)

// The daemon's side of the shared-memory transport for clients on its
// host (the client's side: fwd/client). Over a Unix socket the client
// creates a memfd, sizes it, seals it against shrinking
// (F_SEAL_SHRINK|F_SEAL_SEAL: the daemon's mapping can never lose its
// pages, so touching it never raises SIGBUS), maps it and passes the
// descriptor with SCM_RIGHTS in an OpShm frame. Reads and writes then carry
// (offset, length) into the region: the daemon preads into and pwrites
// from the shared pages, and only a few dozen bytes per request cross the
// socket.

// ErrShm is the error of the shared-memory transport: the daemon's
// refusals of a region or of rings wrap it.
var ErrShm = shm.Err

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
	if size <= 0 || size > fwdproto.MaxShm {
		return nil, fmt.Errorf("%w: region of %d bytes (1 to %d)", ErrShm, size, fwdproto.MaxShm)
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
