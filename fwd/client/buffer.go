package client

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// ErrBufferFreed is returned by calls given a Buffer already freed.
var ErrBufferFreed = errors.New("fwd: buffer already freed")

// Buffer is memory for copy-free reads and writes (File.ReadBuffer,
// File.WriteBuffer). When the client's connection has a shared region (a
// node-local client over a Unix socket), the Buffer lies inside it: the
// daemon pwrites from and preads into the Buffer's pages, so data moves
// between the caller and the backend with one copy, as with pread and
// pwrite on a local file (the same idea as io_uring's registered buffers or
// MPI's shared windows). Otherwise (TCP, Options.NoShm, a region with
// no room, or a connection since replaced by a reconnect) it is ordinary
// memory and the calls copy as ReadAt and WriteAt do.
//
// A Buffer holds its part of the region until Free. Its bytes must not be
// changed while a WriteBuffer using it runs, nor read while a ReadBuffer
// fills it; several calls may use the same Buffer at once otherwise.
type Buffer struct {
	b     []byte
	r     *region // nil: ordinary memory
	off   int     // offset in r
	freed atomic.Bool
}

// AllocBuffer returns a Buffer of n bytes (n > 0), in the shared region when
// the connection has one with room. Its contents are undefined.
func (c *Client) AllocBuffer(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("fwd: buffer of %d bytes: %w", n, fs.ErrInvalid)
	}
	cc, err := c.current()
	if err != nil {
		c.connMu.Lock()
		closed := c.closed
		c.connMu.Unlock()
		if closed || c.opts.Reconnect <= 0 {
			return nil, err
		}
		// The daemon is away and may come back: ordinary memory, which the
		// read or write then using it waits with (Options.Reconnect).
		return &Buffer{b: make([]byte, n)}, nil
	}
	if r := cc.shm; r != nil {
		if off, ok := r.allocHeld(n); ok {
			return &Buffer{b: r.mem[off : off+n : off+n], r: r, off: off}, nil
		}
	}
	return &Buffer{b: make([]byte, n)}, nil
}

// Bytes returns the Buffer's memory (valid until Free).
func (b *Buffer) Bytes() []byte { return b.b }

// Len is the Buffer's size in bytes.
func (b *Buffer) Len() int { return len(b.b) }

// Shared reports whether the Buffer lies in a shared region.
func (b *Buffer) Shared() bool { return b.r != nil }

// Free releases the Buffer once no call uses it; later calls with it fail
// with ErrBufferFreed. Freeing twice is harmless.
func (b *Buffer) Free() {
	if b.freed.Swap(true) {
		return
	}
	if b.r != nil {
		b.r.freeHeld(b.off, len(b.b))
	}
	b.b = nil
}

// WriteBuffer writes all of buf at off and returns once the backend holds
// the bytes, like WriteAt(buf.Bytes(), off) without copying them when buf
// is shared on the current connection.
func (f *File) WriteBuffer(buf *Buffer, off int64) (int, error) {
	if buf.freed.Load() {
		return 0, ErrBufferFreed
	}
	return f.buffer(buf, off, true)
}

// ReadBuffer reads buf.Len() bytes at off into buf, like
// ReadAt(buf.Bytes(), off) (io.EOF with a short count at the end of the
// file) without copying them when buf is shared on the current connection.
func (f *File) ReadBuffer(buf *Buffer, off int64) (int, error) {
	if buf.freed.Load() {
		return 0, ErrBufferFreed
	}
	n, err := f.buffer(buf, off, false)
	if err == nil && n < len(buf.b) {
		err = io.EOF
	}
	return n, err
}

// oneBuffer moves bytes [lo, hi) of buf in one request: a read-shm or
// write-shm naming their place in the region when the connection is the
// one whose region holds buf, else a plain read or write.
// buffer moves the whole of buf at off, in one request when it fits (the
// common case, without split's closure) or split into several.
func (f *File) buffer(buf *Buffer, off int64, write bool) (int, error) {
	if off >= 0 && len(buf.b) <= f.c.maxIO() {
		return f.oneBuffer(buf, 0, len(buf.b), off, write)
	}
	return f.split(len(buf.b), off, func(lo, hi int) (int, error) { return f.oneBuffer(buf, lo, hi, off+int64(lo), write) })
}

func (f *File) oneBuffer(buf *Buffer, lo, hi int, off int64, write bool) (n int, err error) {
	f.c.begin(hi - lo)
	defer func() { f.c.end(n, write) }()
	p := buf.b[lo:hi]
	m := &fwdproto.Msg{Offset: off, Process: f.Process}
	handle := f.on(m)
	cl, err := f.c.do(m, p, func(cc *clientConn) error {
		if err := handle(cc); err != nil {
			return err
		}
		switch {
		case buf.r != nil && cc.shm == buf.r:
			m.Op, m.Data, m.Length, m.ShmOff = fwdproto.OpReadShm, nil, int64(len(p)), uint64(buf.off+lo)
			if write {
				m.Op = fwdproto.OpWriteShm
			}
		case write:
			m.Op, m.Data, m.Length, m.ShmOff = fwdproto.OpWrite, p, 0, 0
		default:
			m.Op, m.Data, m.Length, m.ShmOff = fwdproto.OpRead, nil, int64(len(p)), 0
		}
		return nil
	})
	what := "read"
	if write {
		what = "write"
	}
	if err != nil {
		return 0, fmt.Errorf("%s %s at %d: %w", what, f.Name(), off, err)
	}
	if m.Op == fwdproto.OpRead {
		return cl.n, nil
	}
	return int(min(max(cl.resp.N, 0), int64(len(p)))), nil
}
