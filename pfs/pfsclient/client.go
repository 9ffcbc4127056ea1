// Package pfsclient is the client of the emulated parallel file system's
// data servers (package pfs): a backend.Backend striping files round robin
// over them (package layout) and speaking package pfsproto to each, one
// pipelined connection per server, dialling again after a server
// restarts. The forwarder's pfs: backend links it without the servers.
//
//	b, _ := pfsclient.NewBackend(addrs, 64<<10)
//	pieces, _ := b.Split(nil, "out.dat", off, n) // one scheduler queue per piece's server
//	b.WriteAt(ctx, "out.dat", pieces[0].Server, data[:pieces[0].Length], pieces[0].Offset)
package pfsclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/rootfs"
	"github.com/adaptio/adaptio/layout"
	"github.com/adaptio/adaptio/pfs/pfsproto"
)

// ErrBadOptions is returned by NewClient and NewBackend for invalid
// options.
var ErrBadOptions = errors.New("pfs: invalid options")

// ClientOptions configure a Client.
type ClientOptions struct {
	Addrs       []string      // data server addresses, server i at Addrs[i]
	StripeSize  int64         // bytes per stripe unit; 0: layout.DefaultStripeSize
	DialTimeout time.Duration // per connection attempt; 0: 2 s
	// Node is the index of the I/O node this client serves, announced on
	// every connection (pfsproto.OpHello) so that the data servers' model
	// charges the cost of interleaving I/O nodes.
	Node   int
	Logger *slog.Logger // nil: discard
}

// Client is the emulated PFS seen as a backend.Backend: every file is
// striped over all data servers (StripeSize units, round robin from server
// 0). Server i keeps its stripes back to back in its own file of the same
// path; the namespace's authority is MetadataServer, which answers stat and
// readdir and must take every change, while a data server that is down
// fails only the accesses to its stripes (see MetadataServer). Each server has one pipelined connection,
// dialled on first use and again after it fails, so a restarted server is
// used again without intervention. Safe for concurrent use.
type Client struct {
	layout  layout.Layout
	servers []*serverConn
	log     *slog.Logger
	closed  atomic.Bool
}

var _ backend.Backend = (*Client)(nil)

// NewBackend connects lazily to the data servers at addrs with stripe units
// of stripe bytes (0: 64 KiB).
func NewBackend(addrs []string, stripe int64) (*Client, error) {
	return NewClient(ClientOptions{Addrs: addrs, StripeSize: stripe})
}

// NewClient validates opts and returns a client; connections are made on
// first use.
func NewClient(opts ClientOptions) (*Client, error) {
	if len(opts.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no data server addresses", ErrBadOptions)
	}
	if opts.StripeSize == 0 {
		opts.StripeSize = layout.DefaultStripeSize
	}
	if opts.StripeSize < 0 {
		return nil, fmt.Errorf("%w: stripe size %d", ErrBadOptions, opts.StripeSize)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 2 * time.Second
	}
	c := &Client{
		layout: layout.Layout{StripeSize: opts.StripeSize, StripeCount: len(opts.Addrs)},
		log:    opts.Logger,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if opts.Node < 0 {
		return nil, fmt.Errorf("%w: I/O node %d", ErrBadOptions, opts.Node)
	}
	for i, a := range opts.Addrs {
		c.servers = append(c.servers, &serverConn{idx: i, addr: a, node: opts.Node, dialTimeout: opts.DialTimeout, log: c.log})
	}
	return c, nil
}

// Servers is the number of data servers.
func (c *Client) Servers() int { return len(c.servers) }

// Layout is the striping layout of every file.
func (c *Client) Layout() layout.Layout { return c.layout }

// Split appends the pieces of file bytes [off, off+n) in file order.
func (c *Client) Split(dst []layout.Piece, path string, off, n int64) ([]layout.Piece, error) {
	if _, err := rootfs.Clean(path); err != nil {
		return dst, err
	}
	if off < 0 || n < 0 {
		return dst, fmt.Errorf("pfs: split %q: %w: range [%d, +%d)", path, backend.ErrBadArgument, off, n)
	}
	return c.layout.Split(dst, len(c.servers), c.first(path), off, n), nil
}

// first is the server holding stripe 0 of path (layout.Layout.FirstServer
// of its clean name; an unclean path was refused before).
func (c *Client) first(path string) int {
	name, err := rootfs.Clean(path)
	if err != nil {
		name = path
	}
	return c.layout.FirstServer(name, len(c.servers))
}

// slot is server's position in the rotation of path's stripes.
func (c *Client) slot(path string, server int) int {
	return c.layout.Slot(server, c.first(path), len(c.servers))
}

func (c *Client) check(path string, server int, off, n int64) error {
	if c.closed.Load() {
		return backend.ErrClosed
	}
	if _, err := rootfs.Clean(path); err != nil {
		return err
	}
	if server < 0 || server >= len(c.servers) {
		return fmt.Errorf("pfs: %w: server %d of %d", backend.ErrBadArgument, server, len(c.servers))
	}
	if n > pfsproto.MaxData {
		return fmt.Errorf("pfs: %w: %d bytes in one access (limit %d)", backend.ErrBadArgument, n, pfsproto.MaxData)
	}
	if err := c.layout.Check(c.slot(path, server), off, n); err != nil {
		return fmt.Errorf("pfs: %q on server %d: %w", path, server, err)
	}
	return nil
}

// ReadAt reads file bytes [off, off+len(p)) from server. Bytes the server
// does not hold but which lie within the file (holes) read as zeros; the
// count is short only at end of file.
func (c *Client) ReadAt(ctx context.Context, path string, server int, p []byte, off int64) (int, error) {
	if err := c.check(path, server, off, int64(len(p))); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	resp, err := c.servers[server].do(ctx, &pfsproto.Request{Op: pfsproto.OpRead, Path: path, A: c.layout.Local(off), B: int64(len(p))}, p)
	if missedObject(server, err) {
		resp, err = pfsproto.Response{}, nil // a hole; the size below says how far the file goes
	}
	if err != nil {
		return 0, err
	}
	n := int(resp.A)
	if n == len(p) {
		return n, nil
	}
	// Short: the server's share ends here; the file may go on elsewhere.
	st, err := c.Stat(ctx, path)
	if err != nil {
		return n, err
	}
	end := int(min(max(st.Size-off, int64(n)), int64(len(p))))
	clear(p[n:end])
	return end, nil
}

// WriteAt writes p at file offset off on server; it returns once the
// server has written the bytes to its file.
func (c *Client) WriteAt(ctx context.Context, path string, server int, p []byte, off int64) (int, error) {
	if err := c.check(path, server, off, int64(len(p))); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	resp, err := c.onObject(ctx, path, server, &pfsproto.Request{Op: pfsproto.OpWrite, Path: path, A: c.layout.Local(off), Data: p}, nil)
	if err != nil {
		return 0, err
	}
	return int(resp.A), nil
}

// MetadataServer is the data server holding the authoritative namespace:
// which names exist, their type, mode and directory listings.
//
// The namespace has one authority, as on a PVFS or Lustre deployment,
// whose metadata servers keep it apart from the data servers' objects, so
// that a data server that was down has no diverging copy of it to
// reconcile when it is back. The other servers keep a copy of the
// directory tree only as the place of their objects (each server stores
// its share of a file under the file's path): listings, stat and
// namespace changes that add names need the metadata server alone, and a
// data server that missed a mkdir or a create while down gets the
// directory and the object when its share is first written. Removing a
// name needs every server (objects first, the name last), so that an
// object a dead server kept cannot come back under a new file of the same
// name. A file's size is the largest its live servers' shares imply, as
// Lustre reports a file with an object on an inactive OST: while a server
// is down, a file whose last stripe is there looks shorter, and reads that
// touch the server fail with backend.ErrServerDown.
const MetadataServer = 0

// all sends one request per server concurrently (req(i) builds server i's)
// and returns the responses.
func (c *Client) all(ctx context.Context, req func(i int) *pfsproto.Request) ([]pfsproto.Response, []error) {
	resps := make([]pfsproto.Response, len(c.servers))
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		wg.Go(func() {
			resps[i], errs[i] = s.do(ctx, req(i), nil)
			if errs[i] != nil {
				resps[i].Status = pfsproto.StatusError
			}
		})
	}
	wg.Wait()
	return resps, errs
}

// meta validates path and runs one operation on every server. The
// metadata server's error wins; other servers' errors of the kinds in
// ignore are tolerated (a server that missed an earlier create or unlink
// while down, or one down now: backend.ErrServerDown).
func (c *Client) meta(ctx context.Context, path string, req func(i int) *pfsproto.Request, ignore ...error) ([]pfsproto.Response, error) {
	if c.closed.Load() {
		return nil, backend.ErrClosed
	}
	if _, err := rootfs.Clean(path); err != nil {
		return nil, err
	}
	resps, errs := c.all(ctx, req)
	if errs[MetadataServer] != nil {
		return nil, errs[MetadataServer]
	}
	for _, err := range errs {
		if err != nil && !isAny(err, ignore) {
			return nil, err
		}
	}
	return resps, nil
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// Create creates the file if absent: on the metadata server, and its
// objects on the data servers that are up (the others get theirs when
// first written).
func (c *Client) Create(ctx context.Context, path string, mode fs.FileMode) error {
	_, err := c.meta(ctx, path, func(int) *pfsproto.Request {
		return &pfsproto.Request{Op: pfsproto.OpCreate, Path: path, A: int64(mode.Perm())}
	}, backend.ErrServerDown, backend.ErrNotExist)
	return err
}

// Mkdir creates the directory on the metadata server, and on the data
// servers that are up.
func (c *Client) Mkdir(ctx context.Context, path string, mode fs.FileMode) error {
	_, err := c.meta(ctx, path, func(int) *pfsproto.Request {
		return &pfsproto.Request{Op: pfsproto.OpMkdir, Path: path, A: int64(mode.Perm())}
	}, backend.ErrExist, backend.ErrServerDown, backend.ErrNotExist)
	return err
}

// Unlink removes the file or empty directory: from every data server
// first, then from the metadata server, so that the name goes only once no
// server keeps an object of it. With a server down it fails, naming the
// server, and the name stays.
func (c *Client) Unlink(ctx context.Context, path string) error {
	if c.closed.Load() {
		return backend.ErrClosed
	}
	if _, err := rootfs.Clean(path); err != nil {
		return err
	}
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		if i == MetadataServer {
			continue
		}
		wg.Go(func() {
			_, errs[i] = s.do(ctx, &pfsproto.Request{Op: pfsproto.OpUnlink, Path: path}, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, backend.ErrNotExist) {
			return err
		}
	}
	_, err := c.servers[MetadataServer].do(ctx, &pfsproto.Request{Op: pfsproto.OpUnlink, Path: path}, nil)
	return err
}

// Fsync flushes the file on every server.
func (c *Client) Fsync(ctx context.Context, path string) error {
	_, err := c.meta(ctx, path, func(int) *pfsproto.Request { return &pfsproto.Request{Op: pfsproto.OpFsync, Path: path} }, backend.ErrNotExist)
	return err
}

// Truncate sets the file's size: each server keeps its share of the first
// size bytes (a server that missed the file's create gets its object).
func (c *Client) Truncate(ctx context.Context, path string, size int64) error {
	if size < 0 {
		return fmt.Errorf("pfs: truncate %q: %w: size %d", path, backend.ErrBadArgument, size)
	}
	if c.closed.Load() {
		return backend.ErrClosed
	}
	if _, err := rootfs.Clean(path); err != nil {
		return err
	}
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i := range c.servers {
		wg.Go(func() {
			_, errs[i] = c.onObject(ctx, path, i, &pfsproto.Request{Op: pfsproto.OpTruncate, Path: path, A: c.layout.LocalSize(c.slot(path, i), size)}, nil)
		})
	}
	wg.Wait()
	if errs[MetadataServer] != nil {
		return errs[MetadataServer]
	}
	return errors.Join(errs...)
}

// onObject sends req, which changes server's object of path, and returns
// its response. On a data server that missed the file's create or a mkdir
// above it while down (not found there, though the metadata server has
// the file), it makes the object and its directories and sends req again.
func (c *Client) onObject(ctx context.Context, path string, server int, req *pfsproto.Request, dst []byte) (pfsproto.Response, error) {
	s := c.servers[server]
	resp, err := s.do(ctx, req, dst)
	if err == nil || server == MetadataServer || !errors.Is(err, backend.ErrNotExist) {
		return resp, err
	}
	fi, serr := c.servers[MetadataServer].do(ctx, &pfsproto.Request{Op: pfsproto.OpStat, Path: path}, nil)
	if serr != nil {
		return resp, err // gone from the namespace too (or the metadata server is down): as it was
	}
	mode := int64(0o644)
	if info, _, derr := pfsproto.DecodeFileInfo(fi.Data); derr == nil {
		mode = int64(info.Mode.Perm())
	}
	name, _ := rootfs.Clean(path)
	dirs := strings.Split(name, "/")
	for k := 1; k < len(dirs); k++ {
		_, merr := s.do(ctx, &pfsproto.Request{Op: pfsproto.OpMkdir, Path: strings.Join(dirs[:k], "/"), A: 0o755}, nil)
		if merr != nil && !errors.Is(merr, backend.ErrExist) {
			return resp, merr
		}
	}
	if _, cerr := s.do(ctx, &pfsproto.Request{Op: pfsproto.OpCreate, Path: path, A: mode}, nil); cerr != nil {
		return resp, cerr
	}
	c.log.Info("pfs: made the object a data server missed while down", "server", server, "addr", s.addr, "path", path)
	return s.do(ctx, req, dst)
}

// Stat describes path as the metadata server has it; a file's size is the
// largest its live servers' shares imply (MetadataServer).
func (c *Client) Stat(ctx context.Context, path string) (backend.FileInfo, error) {
	resps, err := c.meta(ctx, path, func(int) *pfsproto.Request { return &pfsproto.Request{Op: pfsproto.OpStat, Path: path} }, backend.ErrNotExist, backend.ErrServerDown)
	if err != nil {
		return backend.FileInfo{}, err
	}
	fi, err := decodeStat(resps[MetadataServer], MetadataServer, path)
	if err != nil || fi.IsDir {
		return fi, err
	}
	fi.Size = 0
	for i, r := range resps {
		if r.Status != pfsproto.StatusOK { // tolerated: no share there, or down
			continue
		}
		sfi, err := decodeStat(r, i, path)
		if err != nil {
			return backend.FileInfo{}, err
		}
		fi.Size = max(fi.Size, c.layout.FileEnd(c.slot(path, i), sfi.Size))
		if sfi.ModTime.After(fi.ModTime) {
			fi.ModTime = sfi.ModTime
		}
	}
	return fi, nil
}

func decodeStat(r pfsproto.Response, server int, path string) (backend.FileInfo, error) {
	fi, _, err := pfsproto.DecodeFileInfo(r.Data)
	if err != nil {
		return backend.FileInfo{}, fmt.Errorf("pfs: server %d: stat %q: %w", server, path, err)
	}
	return fi, nil
}

// ReadDir lists a directory as the metadata server holds it, with file
// sizes gathered from the live servers.
func (c *Client) ReadDir(ctx context.Context, path string) ([]backend.FileInfo, error) {
	resps, err := c.meta(ctx, path, func(int) *pfsproto.Request { return &pfsproto.Request{Op: pfsproto.OpReadDir, Path: path} }, backend.ErrNotExist, backend.ErrServerDown)
	if err != nil {
		return nil, err
	}
	lists := make([][]backend.FileInfo, len(resps))
	for i, r := range resps {
		if r.Status != pfsproto.StatusOK { // tolerated error
			continue
		}
		if lists[i], err = pfsproto.DecodeDir(r.Data); err != nil {
			return nil, fmt.Errorf("pfs: server %d: readdir %q: %w", i, path, err)
		}
	}
	out := slices.Clone(lists[MetadataServer])
	index := make(map[string]int, len(out))
	for j := range out {
		index[out[j].Name] = j
		if !out[j].IsDir {
			out[j].Size = 0
		}
	}
	for i, ents := range lists {
		for _, e := range ents {
			if j, ok := index[e.Name]; ok && !out[j].IsDir && !e.IsDir {
				out[j].Size = max(out[j].Size, c.layout.FileEnd(c.slot(pathpkg.Join(path, e.Name), i), e.Size))
				if e.ModTime.After(out[j].ModTime) {
					out[j].ModTime = e.ModTime
				}
			}
		}
	}
	return out, nil
}

// Ping checks every data server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, errs := c.all(ctx, func(int) *pfsproto.Request { return &pfsproto.Request{Op: pfsproto.OpPing} })
	return errors.Join(errs...)
}

// Close closes the connections; requests in flight fail.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	for _, s := range c.servers {
		s.close()
	}
	return nil
}

// ServerError is an error a data server reported.
type ServerError struct {
	Server int
	Status pfsproto.Status
	Msg    string
}

func (e *ServerError) Error() string { return "pfs: " + e.Msg }

// Unwrap returns the backend sentinel of the status (nil for a plain I/O
// error).
func (e *ServerError) Unwrap() error { return e.Status.Sentinel() }

// serverConn is the client side of one data server: the current
// connection, replaced after a failure.
type serverConn struct {
	idx         int
	addr        string
	node        int // announced with pfsproto.OpHello on each connection
	dialTimeout time.Duration
	log         *slog.Logger

	mu     sync.Mutex
	cur    *conn
	closed bool

	stateMu sync.Mutex
	isDown  bool // last seen down: logged once, until it answers again
}

func (s *serverConn) down(err error) error {
	return fmt.Errorf("pfs: server %d (%s): %w: %v", s.idx, s.addr, backend.ErrServerDown, err)
}

// markDown logs, once per outage, that the server stopped answering.
func (s *serverConn) markDown(err error) {
	s.stateMu.Lock()
	was := s.isDown
	s.isDown = true
	s.stateMu.Unlock()
	if !was {
		s.log.Warn("pfs data server down: accesses to its stripes fail until it is back", "server", s.idx, "addr", s.addr, "err", err)
	}
}

// markUp logs that a server seen down answers again.
func (s *serverConn) markUp() {
	s.stateMu.Lock()
	was := s.isDown
	s.isDown = false
	s.stateMu.Unlock()
	if was {
		s.log.Info("pfs data server back", "server", s.idx, "addr", s.addr)
	}
}

// get returns a live connection, dialling if needed; fresh reports a new
// one.
func (s *serverConn) get(ctx context.Context) (c *conn, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, backend.ErrClosed
	}
	if s.cur != nil && !s.cur.dead() {
		return s.cur, false, nil
	}
	d := net.Dialer{Timeout: s.dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		s.markDown(err)
		return nil, false, s.down(err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c = newConn(s, nc)
	if _, err := c.do(ctx, &pfsproto.Request{Op: pfsproto.OpHello, A: int64(s.node), B: pfsproto.Version}, nil); err != nil {
		c.fail(err)
		return nil, false, fmt.Errorf("pfs: server %d (%s): hello: %w", s.idx, s.addr, err)
	}
	s.markUp()
	s.cur = c
	return s.cur, true, nil
}

func (s *serverConn) close() {
	s.mu.Lock()
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	if cur != nil {
		cur.fail(backend.ErrClosed)
	}
}

// do sends req and waits for its response. For a read, dst receives the
// data directly. A request that fails on a connection made before it was
// sent (the server may have restarted since) is sent once more on a fresh
// connection if repeating it is harmless.
func (s *serverConn) do(ctx context.Context, req *pfsproto.Request, dst []byte) (pfsproto.Response, error) {
	c, fresh, err := s.get(ctx)
	if err != nil {
		return pfsproto.Response{}, err
	}
	resp, err := c.do(ctx, req, dst)
	if err != nil && !fresh && idempotent(req.Op) && errors.Is(err, backend.ErrServerDown) && ctx.Err() == nil {
		if c, _, err2 := s.get(ctx); err2 == nil {
			return c.do(ctx, req, dst)
		}
	}
	return resp, err
}

// missedObject reports whether err says a data server other than the
// metadata server has no object of a file: it missed the create while
// down, and its share is a hole until written (Client.onObject).
func missedObject(server int, err error) bool {
	var se *ServerError
	return server != MetadataServer && errors.As(err, &se) && se.Status == pfsproto.StatusNotExist
}

// idempotent reports whether repeating op leaves the same state and answer.
func idempotent(op pfsproto.Op) bool {
	switch op {
	case pfsproto.OpMkdir, pfsproto.OpUnlink: // a repeat reports exists / not exists
		return false
	}
	return true
}

// conn is one TCP connection with its pipelined requests.
type conn struct {
	s  *serverConn
	nc net.Conn

	wmu sync.Mutex // serialises frames on the socket

	mu      sync.Mutex
	pending map[uint64]*call
	nextID  uint64
	err     error // set once the connection failed
}

type call struct {
	dst  []byte
	done chan struct{}
	resp pfsproto.Response
	err  error
}

func newConn(s *serverConn, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, pending: make(map[uint64]*call)}
	go c.readLoop()
	return c
}

func (c *conn) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// fail marks the connection failed, closes it and fails every pending call.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.nc.Close()
	if errors.Is(err, backend.ErrServerDown) {
		c.s.markDown(err)
	}
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}

func (c *conn) do(ctx context.Context, req *pfsproto.Request, dst []byte) (pfsproto.Response, error) {
	cl := &call{dst: dst, done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return pfsproto.Response{}, err
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = cl
	c.mu.Unlock()

	hdr, err := pfsproto.AppendRequest(make([]byte, 0, pfsproto.LenBytes+pfsproto.RequestFixed+len(req.Path)), req)
	if err != nil {
		c.forget(req.ID)
		return pfsproto.Response{}, fmt.Errorf("pfs: %w", err)
	}
	bufs := net.Buffers{hdr}
	if len(req.Data) > 0 {
		bufs = append(bufs, req.Data)
	}
	c.wmu.Lock()
	_, err = bufs.WriteTo(c.nc)
	c.wmu.Unlock()
	if err != nil {
		c.fail(c.s.down(err))
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if c.forget(req.ID) {
			return pfsproto.Response{}, ctx.Err()
		}
		<-cl.done // the reader owns dst now; wait for it to finish
	}
	if cl.err != nil {
		return pfsproto.Response{}, cl.err
	}
	if cl.resp.Status != pfsproto.StatusOK {
		return cl.resp, &ServerError{Server: c.s.idx, Status: cl.resp.Status, Msg: string(cl.resp.Data)}
	}
	return cl.resp, nil
}

// forget removes a pending call; false if the reader already took it.
func (c *conn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return false
	}
	delete(c.pending, id)
	return true
}

func (c *conn) readLoop() {
	r := pfsproto.NewReader(c.nc, 0)
	var hdr [pfsproto.ResponseFixed]byte
	for {
		n, err := r.Len()
		if err == nil && n < pfsproto.ResponseFixed {
			err = fmt.Errorf("%w: response of %d bytes", pfsproto.ErrMalformed, n)
		}
		if err == nil {
			_, err = io.ReadFull(r.R, hdr[:])
		}
		var resp pfsproto.Response
		if err == nil {
			resp, err = pfsproto.DecodeResponseHeader(hdr[:])
		}
		if err != nil {
			c.fail(c.s.down(err))
			return
		}
		dataLen := n - pfsproto.ResponseFixed
		c.mu.Lock()
		cl := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if err := c.readData(r.R, cl, &resp, dataLen); err != nil {
			if cl != nil {
				cl.err = c.s.down(err)
				close(cl.done)
			}
			c.fail(c.s.down(err))
			return
		}
		if cl != nil {
			cl.resp = resp
			close(cl.done)
		}
	}
}

// readData consumes a response's data: into cl.dst for a successful read,
// into a new slice otherwise, or discarded when nobody waits.
func (c *conn) readData(r *bufio.Reader, cl *call, resp *pfsproto.Response, n int) error {
	switch {
	case cl == nil:
		_, err := r.Discard(n)
		return err
	case resp.Status == pfsproto.StatusOK && cl.dst != nil:
		if n > len(cl.dst) {
			return fmt.Errorf("%w: %d data bytes for a %d-byte read", pfsproto.ErrMalformed, n, len(cl.dst))
		}
		_, err := io.ReadFull(r, cl.dst[:n])
		resp.A = int64(n)
		return err
	default:
		resp.Data = make([]byte, n)
		_, err := io.ReadFull(r, resp.Data)
		return err
	}
}

var _ backend.ObjectStore = (*Client)(nil)

// Local maps file offset off, which must lie on server, to its offset in
// server's object of the file. The path is not checked again: the caller
// has it from Split, which did.
func (c *Client) Local(path string, server int, off int64) (int64, error) {
	if err := c.layout.Check(c.slot(path, server), off, 1); err != nil {
		return 0, fmt.Errorf("pfs: server %d: %w", server, err)
	}
	return c.layout.Local(off), nil
}

func (c *Client) checkLocal(path string, server int, local, n int64) error {
	if c.closed.Load() {
		return backend.ErrClosed
	}
	if _, err := rootfs.Clean(path); err != nil {
		return err
	}
	switch {
	case server < 0 || server >= len(c.servers):
		return fmt.Errorf("pfs: %w: server %d of %d", backend.ErrBadArgument, server, len(c.servers))
	case local < 0 || n < 0:
		return fmt.Errorf("pfs: %w: local range [%d, +%d)", backend.ErrBadArgument, local, n)
	case n > pfsproto.MaxData:
		return fmt.Errorf("pfs: %w: %d bytes in one access (limit %d)", backend.ErrBadArgument, n, pfsproto.MaxData)
	}
	return nil
}

// ReadLocal reads len(p) bytes of server's object of path at local offset.
// The count is short where the object ends (holes and the end of file are
// the caller's: see ReadAt).
func (c *Client) ReadLocal(ctx context.Context, path string, server int, p []byte, local int64) (int, error) {
	if err := c.checkLocal(path, server, local, int64(len(p))); err != nil || len(p) == 0 {
		return 0, err
	}
	resp, err := c.servers[server].do(ctx, &pfsproto.Request{Op: pfsproto.OpRead, Path: path, A: local, B: int64(len(p))}, p)
	if missedObject(server, err) {
		return 0, nil // no object yet: a hole, as the caller treats a short one
	}
	if err != nil {
		return 0, err
	}
	return int(resp.A), nil
}

// WriteLocal writes p to server's object of path at local offset; it
// returns once the server has written the bytes to its file.
func (c *Client) WriteLocal(ctx context.Context, path string, server int, p []byte, local int64) (int, error) {
	if err := c.checkLocal(path, server, local, int64(len(p))); err != nil || len(p) == 0 {
		return 0, err
	}
	resp, err := c.onObject(ctx, path, server, &pfsproto.Request{Op: pfsproto.OpWrite, Path: path, A: local, Data: p}, nil)
	if err != nil {
		return 0, err
	}
	return int(resp.A), nil
}
