package fwd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"github.com/adaptio/adaptio/fwd/wire"
)

// ErrClientClosed is returned by calls on a closed (or broken) connection.
var ErrClientClosed = errors.New("fwd: client connection closed")

// ClientOptions configure Dial.
type ClientOptions struct {
	// ClientID identifies the client node in the daemon's statistics
	// (default: derived from the host name and process id).
	ClientID uint32
	// Name is a free-form label sent in the hello.
	Name string
	// MaxIO is the largest read or write sent in one request; longer ones
	// are split and pipelined (default 4 MiB).
	MaxIO int
	// DialTimeout bounds connecting (default 10 s).
	DialTimeout time.Duration
}

// Client is a connection to a forwarding daemon. Calls are pipelined: any
// number of goroutines may call concurrently and their requests are
// outstanding at the same time on the one connection. Safe for concurrent use.
type Client struct {
	nc    net.Conn
	maxIO int

	wmu  sync.Mutex
	hdr  []byte
	bufs net.Buffers
	next uint64

	mu      sync.Mutex
	pending map[uint64]*call
	err     error
	done    chan struct{}
}

type call struct {
	dst  []byte // read destination
	resp wire.Msg
	n    int
	err  error
	done chan struct{}
}

// Dial connects to a daemon at addr ("host:port", "tcp:host:port" or
// "unix:/path") with default options.
func Dial(addr string) (*Client, error) { return DialOptions(addr, ClientOptions{}) }

// DialOptions connects to a daemon and sends the hello.
func DialOptions(addr string, o ClientOptions) (*Client, error) {
	network, a, err := splitListen(addr)
	if err != nil {
		return nil, err
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxIO <= 0 {
		o.MaxIO = 4 << 20
	}
	if o.MaxIO > wire.DefaultMaxFrame-4096 {
		o.MaxIO = wire.DefaultMaxFrame - 4096
	}
	if o.ClientID == 0 {
		h, _ := os.Hostname()
		var x uint32 = 2166136261
		for _, c := range []byte(h) {
			x = (x ^ uint32(c)) * 16777619
		}
		o.ClientID = x ^ uint32(os.Getpid())
	}
	nc, err := net.DialTimeout(network, a, o.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("fwd: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Client{nc: nc, maxIO: o.MaxIO, pending: map[uint64]*call{}, done: make(chan struct{})}
	go c.readLoop()
	if _, err := c.do(&wire.Msg{Op: wire.OpHello, ClientID: o.ClientID, Name: o.Name}, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("fwd: hello to %s: %w", addr, err)
	}
	return c, nil
}

// Close closes the connection; outstanding calls fail with ErrClientClosed.
func (c *Client) Close() error {
	c.fail(ErrClientClosed)
	err := c.nc.Close()
	<-c.done
	return err
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	for id, cl := range c.pending {
		cl.err = c.err
		close(cl.done)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// do sends m and waits for its response. For reads, dst receives the data.
func (c *Client) do(m *wire.Msg, dst []byte) (*call, error) {
	cl := &call{dst: dst, done: make(chan struct{})}
	c.wmu.Lock()
	c.next++
	m.ID = c.next
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		c.wmu.Unlock()
		return nil, err
	}
	c.pending[m.ID] = cl
	c.mu.Unlock()
	c.hdr = wire.AppendFixed(c.hdr[:0], m)
	var err error
	if m.Op == wire.OpWrite && len(m.Data) > 0 {
		// One writev: the data goes from the caller's buffer to the socket.
		c.bufs = append(c.bufs[:0], c.hdr, m.Data)
		_, err = c.bufs.WriteTo(c.nc)
	} else {
		_, err = c.nc.Write(c.hdr)
	}
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("%w: %v", ErrClientClosed, err))
		_ = c.nc.Close()
	}
	<-cl.done
	if cl.err != nil {
		return nil, cl.err
	}
	if cl.resp.Code != wire.CodeOK {
		return nil, &wire.Error{Code: cl.resp.Code, Msg: cl.resp.Err}
	}
	return cl, nil
}

func (c *Client) readLoop() {
	defer close(c.done)
	br := bufio.NewReaderSize(c.nc, 4<<10) // large read data bypasses it
	var hdr [wire.HeaderSize]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			c.fail(fmt.Errorf("%w: %v", ErrClientClosed, err))
			return
		}
		h, n, err := wire.ParseHeader(hdr[:], wire.DefaultMaxFrame)
		if err != nil || !h.IsResponse() {
			c.fail(fmt.Errorf("%w: bad frame from daemon: %v", ErrClientClosed, err))
			_ = c.nc.Close()
			return
		}
		c.mu.Lock()
		cl := c.pending[h.ID]
		delete(c.pending, h.ID)
		c.mu.Unlock()
		if cl != nil && h.Op() == wire.OpRead && n >= 2 && n-2 <= len(cl.dst) {
			// Read data straight into the caller's buffer.
			var st [2]byte
			if _, err := io.ReadFull(br, st[:]); err != nil {
				c.failCall(cl, err)
				return
			}
			if code := wire.Code(binary.BigEndian.Uint16(st[:])); code == wire.CodeOK {
				if _, err := io.ReadFull(br, cl.dst[:n-2]); err != nil {
					c.failCall(cl, err)
					return
				}
				cl.resp = wire.Msg{Op: wire.OpRead, ID: h.ID, Response: true}
				cl.n = n - 2
				close(cl.done)
				continue
			}
			rest := make([]byte, n)
			copy(rest, st[:])
			if _, err := io.ReadFull(br, rest[2:]); err != nil {
				c.failCall(cl, err)
				return
			}
			c.finish(cl, h, rest)
			continue
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			if cl != nil {
				c.failCall(cl, err)
			}
			c.fail(fmt.Errorf("%w: %v", ErrClientClosed, err))
			return
		}
		if cl == nil {
			// A response to no request: a connection-level error (bad frame).
			var m wire.Msg
			if wire.Decode(h, p, &m) == nil && m.Code != wire.CodeOK {
				c.fail(fmt.Errorf("%w: %v", ErrClientClosed, &wire.Error{Code: m.Code, Msg: m.Err}))
			}
			continue
		}
		c.finish(cl, h, p)
	}
}

func (c *Client) failCall(cl *call, err error) {
	cl.err = fmt.Errorf("%w: %v", ErrClientClosed, err)
	close(cl.done)
	c.fail(cl.err)
}

func (c *Client) finish(cl *call, h wire.Header, p []byte) {
	if err := wire.Decode(h, p, &cl.resp); err != nil {
		cl.err = err
	} else if cl.resp.Op == wire.OpRead && cl.resp.Code == wire.CodeOK {
		if len(cl.resp.Data) > len(cl.dst) {
			cl.err = fmt.Errorf("%w: read returned %d bytes, asked %d", wire.ErrMalformed, len(cl.resp.Data), len(cl.dst))
		} else {
			cl.n = copy(cl.dst, cl.resp.Data)
		}
	}
	close(cl.done)
}

// FileInfo is file metadata as the daemon reports it.
type FileInfo = wire.FileInfo

// OpenFile opens path with wire.Open* flags; mode applies on creation.
func (c *Client) OpenFile(path string, flags uint32, mode fs.FileMode) (*File, error) {
	cl, err := c.do(&wire.Msg{Op: wire.OpOpen, Path: path, Flags: flags, Mode: uint32(mode.Perm())}, nil)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &File{c: c, h: cl.resp.Handle, path: path, info: cl.resp.Info}, nil
}

// Open opens an existing file.
func (c *Client) Open(path string) (*File, error) { return c.OpenFile(path, 0, 0) }

// Create creates or truncates path (mode 0644).
func (c *Client) Create(path string) (*File, error) {
	return c.OpenFile(path, wire.OpenCreate|wire.OpenTruncate, 0o644)
}

// Stat returns path's metadata.
func (c *Client) Stat(path string) (FileInfo, error) {
	cl, err := c.do(&wire.Msg{Op: wire.OpStat, Path: path}, nil)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return cl.resp.Info, nil
}

// Unlink removes a file or an empty directory.
func (c *Client) Unlink(path string) error {
	_, err := c.do(&wire.Msg{Op: wire.OpUnlink, Path: path}, nil)
	if err != nil {
		return fmt.Errorf("unlink %s: %w", path, err)
	}
	return nil
}

// Truncate sets path's size.
func (c *Client) Truncate(path string, size int64) error {
	_, err := c.do(&wire.Msg{Op: wire.OpTruncate, Path: path, Length: size}, nil)
	if err != nil {
		return fmt.Errorf("truncate %s: %w", path, err)
	}
	return nil
}

// Mkdir creates a directory; an existing name fails with an error matching fs.ErrExist.
func (c *Client) Mkdir(path string, mode fs.FileMode) error {
	_, err := c.do(&wire.Msg{Op: wire.OpMkdir, Path: path, Mode: uint32(mode.Perm())}, nil)
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	return nil
}

// ReadDir lists a directory ("" or "." is the export root).
func (c *Client) ReadDir(path string) ([]FileInfo, error) {
	cl, err := c.do(&wire.Msg{Op: wire.OpReadDir, Path: path}, nil)
	if err != nil {
		return nil, fmt.Errorf("readdir %s: %w", path, err)
	}
	return cl.resp.Entries, nil
}

// File is an open file on the daemon. ReadAt and WriteAt may be called
// concurrently; each call is pipelined in MaxIO chunks.
type File struct {
	c    *Client
	h    uint64
	path string
	info FileInfo
	// Process identifies the calling process to the daemon's pattern
	// detection (set it per rank in multi-process clients).
	Process uint32
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.path }

// Handle returns the daemon's handle of the file.
func (f *File) Handle() uint64 { return f.h }

// ReadAt reads len(p) bytes at off; it returns io.EOF with n < len(p) at the
// end of the file, like os.File.ReadAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.chunks(p, off, false)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// WriteAt writes p at off and returns once the backend holds the bytes.
func (f *File) WriteAt(p []byte, off int64) (int, error) { return f.chunks(p, off, true) }

func (f *File) chunks(p []byte, off int64, write bool) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset: %w", f.path, fs.ErrInvalid)
	}
	max := f.c.maxIO
	if len(p) <= max {
		return f.one(p, off, write)
	}
	type res struct {
		n   int
		err error
	}
	k := (len(p) + max - 1) / max
	out := make([]res, k)
	var wg sync.WaitGroup
	for i := 0; i < k; i++ {
		lo, hi := i*max, min((i+1)*max, len(p))
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := f.one(p[lo:hi], off+int64(lo), write)
			out[i] = res{n, err}
		}()
	}
	wg.Wait()
	n := 0
	for i, r := range out {
		if r.err != nil {
			return n, r.err
		}
		n += r.n
		if r.n < min((i+1)*max, len(p))-i*max {
			break
		}
	}
	return n, nil
}

func (f *File) one(p []byte, off int64, write bool) (int, error) {
	if write {
		cl, err := f.c.do(&wire.Msg{Op: wire.OpWrite, Handle: f.h, Offset: off, Process: f.Process, Data: p}, nil)
		if err != nil {
			return 0, fmt.Errorf("write %s at %d: %w", f.path, off, err)
		}
		return int(cl.resp.N), nil
	}
	cl, err := f.c.do(&wire.Msg{Op: wire.OpRead, Handle: f.h, Offset: off, Length: int64(len(p)), Process: f.Process}, p)
	if err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", f.path, off, err)
	}
	return cl.n, nil
}

// Sync asks the backend to make the file durable.
func (f *File) Sync() error {
	if _, err := f.c.do(&wire.Msg{Op: wire.OpFsync, Handle: f.h}, nil); err != nil {
		return fmt.Errorf("fsync %s: %w", f.path, err)
	}
	return nil
}

// Stat returns the file's current metadata.
func (f *File) Stat() (FileInfo, error) { return f.c.Stat(f.path) }

// Close releases the handle.
func (f *File) Close() error {
	if _, err := f.c.do(&wire.Msg{Op: wire.OpClose, Handle: f.h}, nil); err != nil {
		return fmt.Errorf("close %s: %w", f.path, err)
	}
	return nil
}

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)
