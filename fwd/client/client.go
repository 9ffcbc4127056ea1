package client

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/fwd/internal/shm"
)

// ErrClosed is returned by calls on a closed (or broken) connection.
var ErrClosed = errors.New("fwd: client connection closed")

// ErrUnavailable is returned, with ErrClosed, by calls made after a
// client with Options.Reconnect waited that long for its lost forwarder in
// vain: they fail at once while the client redials in the background, and
// succeed again as soon as it reconnects.
var ErrUnavailable = errors.New("fwd: forwarder unavailable")

// DefaultReconnect is how long the mount waits for a lost forwarder
// before its calls fail (adaptio mount --reconnect).
const DefaultReconnect = 30 * time.Second

// ReconnectRetry is how often a client that gave up on its forwarder
// (ErrUnavailable) tries to reach it again in the background.
const ReconnectRetry = 500 * time.Millisecond

// Options configure Dial.
type Options struct {
	// ClientID identifies the client node in the daemon's statistics
	// (default: derived from the host name and process id).
	ClientID uint32
	// Token is the forwarder's token (fwdproto.ReadTokenFile): the client
	// proves it holds it before the hello, and checks that the forwarder
	// holds it too. Nil: no authentication (a forwarder with a token then
	// refuses the session).
	Token []byte
	// TLS, if set, speaks TLS to a TCP address (not to a Unix socket):
	// RootCAs verify the forwarder, Certificates hold the client's
	// certificate for a forwarder that requires one. An empty ServerName
	// is the address's host.
	TLS *tls.Config
	// Name is a free-form label sent in the hello.
	Name string
	// Job is the batch job the client's requests belong to (a scheduler's
	// job id: SLURM_JOB_ID, PBS_JOBID), for the forwarder's QoS rules and
	// per-job metrics; "" sends none. SetJob binds single processes.
	Job string
	// MaxIO is the largest read or write sent in one request; longer ones
	// are split and pipelined (default 4 MiB; SetMaxIO changes it).
	MaxIO int
	// MaxInFlight is the most reads and writes the client has outstanding
	// at once; more wait, and are sent in their order of arrival (default
	// 0: no limit; SetMaxInFlight changes it).
	MaxInFlight int
	// DialTimeout bounds connecting (default 10 s).
	DialTimeout time.Duration
	// NoShm turns off the shared-memory transport. By default a client of a
	// "unix:" address hands the daemon a shared region (a sealed memfd) and
	// reads and writes carry only its (offset, length) over the socket: the
	// daemon moves the data straight between the region and the backend.
	// TCP clients, and daemons that refuse the region, use the socket.
	NoShm bool
	// ShmSize is the shared region's size in bytes (default DefaultShmSize);
	// a request that finds no room in it goes over the socket.
	ShmSize int
	// NoRing keeps reads and writes through the shared region on the
	// socket (a frame each way per request) instead of the submission and
	// completion rings in the region (docs/protocol.md, "Rings").
	NoRing bool
	// RingSpin is how long the process's completion reaper keeps polling
	// the rings, once DefaultRingPolls empty sweeps have run out, before it
	// sleeps and asks the daemon for wake-up frames (default DefaultRingSpin;
	// negative: after DefaultRingPolls empty sweeps). The clients of a
	// process share one reaper: the longest RingSpin of those dialled
	// applies.
	RingSpin time.Duration
	// Reconnect, if positive, makes the client survive a lost connection
	// (a daemon restart): a call redials for up to this long, open files
	// are reopened by path on the new connection, and calls that can be
	// repeated safely (read, write, fsync, stat, readdir, truncate, open
	// without exclusive create) are sent again if the connection broke
	// while they were outstanding. Unlink, mkdir and exclusive create are
	// not repeated (a second attempt could report a wrong error); they fail
	// with ErrClosed. The wait counts from the moment the connection was
	// found lost, for all calls together: once it is over, every call
	// fails at once with ErrUnavailable (and ErrClosed) while the client
	// redials every ReconnectRetry in the background, until it is back.
	// Zero: a lost connection fails every later call.
	Reconnect time.Duration
	// Logger receives one line when the connection is lost, when the
	// client gives up waiting for it and when it reconnects (nil: discard).
	Logger *slog.Logger
}

// Client is a connection to a forwarding daemon. Calls are pipelined: any
// number of goroutines may call concurrently and their requests are
// outstanding at the same time on the one connection. Safe for concurrent use.
type Client struct {
	network, addr string
	opts          Options

	connMu sync.Mutex // guards conn, gen, closed; held while dialling
	conn   *clientConn
	gen    uint64 // generation of conn: files opened under an older one reopen
	closed bool
	noShm  bool // the daemon refused a region: do not offer it again
	noRing bool // the daemon did not take rings: do not offer them again

	log         *slog.Logger
	lostGen     uint64        // generation whose loss was logged
	lostAt      time.Time     // when the current connection was found lost (zero: it is not)
	unavailable atomic.Bool   // gave up waiting: calls fail at once, a goroutine redials
	stop        chan struct{} // closed by Close: ends the redialling goroutine

	filesMu sync.Mutex
	files   map[*File]struct{} // open files: their names follow Rename

	wantIO     atomic.Int64 // the largest request asked for (Options.MaxIO, SetMaxIO)
	gate       gate         // reads and writes in flight (Options.MaxInFlight)
	readBytes  atomic.Int64
	writeBytes atomic.Int64
	sent       atomic.Int64 // reads and writes sent
	jobs       jobs         // job bindings, sent after every hello (job.go)
}

// clientConn is one connection with its requests in flight.
type clientConn struct {
	nc  net.Conn
	shm *region // shared region the daemon has mapped (nil: none)
	// ring: the rings in the region the daemon polls (nil: none); set once
	// the daemon has taken them, read by callers and the reader.
	ring    atomic.Pointer[clientRing]
	gen     uint64
	maxIO   int // largest read or write the daemon's frames carry on this connection
	servers int // data servers behind the daemon

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
	op   fwdproto.Op
	dst  []byte // read destination
	resp fwdproto.Msg
	n    int
	err  error
	done chan struct{}
}

// Dial connects to a daemon at addr ("host:port", "tcp:host:port" or
// "unix:/path") with default options.
func Dial(addr string) (*Client, error) { return DialOptions(addr, Options{}) }

// DialOptions connects to a daemon and sends the hello.
func DialOptions(addr string, o Options) (*Client, error) {
	network, a, ok := fwdproto.SplitAddr(addr)
	if !ok {
		return nil, fmt.Errorf("fwd: bad address %q", addr)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxIO <= 0 {
		o.MaxIO = 4 << 20
	}
	if o.ShmSize <= 0 {
		o.ShmSize = DefaultShmSize
	}
	if o.RingSpin == 0 {
		o.RingSpin = DefaultRingSpin
	}
	procReaper.spinAtLeast(o.RingSpin)
	if o.ShmSize > fwdproto.MaxShm {
		o.ShmSize = fwdproto.MaxShm
	}
	if o.MaxIO > MaxMaxIO {
		o.MaxIO = MaxMaxIO
	}
	if o.MaxInFlight < 0 {
		return nil, fmt.Errorf("fwd: MaxInFlight %d: %w", o.MaxInFlight, fs.ErrInvalid)
	}
	if o.ClientID == 0 {
		h, _ := os.Hostname()
		var x uint32 = 2166136261
		for _, c := range []byte(h) {
			x = (x ^ uint32(c)) * 16777619
		}
		o.ClientID = x ^ uint32(os.Getpid())
	}
	c := &Client{network: network, addr: a, opts: o, files: make(map[*File]struct{}), log: o.Logger, stop: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.wantIO.Store(int64(o.MaxIO))
	c.gate.limit = o.MaxInFlight
	cc, err := c.dial()
	if err != nil {
		return nil, fmt.Errorf("fwd: %s: %w", addr, err)
	}
	c.conn, c.gen = cc, cc.gen
	return c, nil
}

// dial opens a new connection and says hello; connMu is held or c is not
// yet shared.
func (c *Client) dial() (*clientConn, error) {
	nc, err := net.DialTimeout(c.network, c.addr, c.opts.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if nc, err = c.secure(nc); err != nil {
		return nil, err
	}
	cc := &clientConn{nc: nc, gen: c.gen + 1, pending: map[uint64]*call{}, done: make(chan struct{})}
	go cc.readLoop()
	if err := c.authenticate(cc); err != nil {
		cc.close()
		return nil, err
	}
	cl, err := cc.do(&fwdproto.Msg{Op: fwdproto.OpHello, ClientID: c.opts.ClientID, Name: c.opts.Name}, nil)
	if err != nil {
		cc.close()
		return nil, fmt.Errorf("hello: %w", authHint(err))
	}
	// Requests must fit the daemon's frames: header, fields and data.
	cc.maxIO = MaxMaxIO
	if lim := int(cl.resp.MaxFrame) - 4096; cl.resp.MaxFrame > 0 && lim < cc.maxIO {
		cc.maxIO = max(lim, 4096)
	}
	cc.servers = int(cl.resp.Servers)
	if err := c.sendJobs(cc); err != nil {
		cc.close()
		return nil, err
	}
	if c.network == "unix" && !c.opts.NoShm && !c.noShm {
		rings := !c.opts.NoRing && !c.noRing
		size := c.opts.ShmSize
		if rings {
			size = min(size+shm.RingBytes(DefaultRingEntries), fwdproto.MaxShm) // the rings' place is not taken from the data's
		}
		if err := cc.offerShm(size); err != nil {
			if cc.broken() == nil {
				return cc, nil // refused: the socket carries the data
			}
			// A daemon that does not know OpShm closes the connection.
			cc.close()
			c.noShm = true
			return c.dial()
		}
		if rings {
			if err := cc.offerRing(DefaultRingEntries); err != nil && cc.broken() != nil {
				// A daemon that does not know OpRing closes the connection.
				cc.close()
				c.noRing = true
				return c.dial()
			}
		}
	}
	return cc, nil
}

// offerRing places submission and completion rings of n entries in the
// region and asks the daemon to poll them; on refusal the connection goes
// on without them.
func (cc *clientConn) offerRing(n int) error {
	size := shm.RingBytes(n)
	off, ok := cc.shm.allocHeld(size)
	if !ok {
		return fmt.Errorf("%w: no room for rings", shm.Err)
	}
	mem := cc.shm.mem[off : off+size]
	clear(mem)
	if _, err := cc.send(&fwdproto.Msg{Op: fwdproto.OpRing, ShmOff: uint64(off), Length: int64(n)}, nil, nil); err != nil {
		cc.shm.freeHeld(off, size)
		return err
	}
	cc.ring.Store(&clientRing{r: shm.NewRings(mem, n), off: off, slots: make(chan struct{}, n)})
	return nil
}

// offerShm creates a shared region and hands it to the daemon.
func (cc *clientConn) offerShm(size int) error {
	uc, ok := cc.nc.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("%w: not a Unix socket", shm.Err)
	}
	r, err := newRegion(size)
	if err != nil {
		return err
	}
	m := &fwdproto.Msg{Op: fwdproto.OpShm, Length: int64(len(r.mem))}
	if _, err := cc.send(m, nil, func(hdr []byte) error {
		_, _, err := uc.WriteMsgUnix(hdr, unix.UnixRights(r.fd), nil)
		return err
	}); err != nil {
		r.close()
		return err
	}
	cc.shm = r
	return nil
}

// current returns a working connection, redialling a broken one when
// Reconnect allows it. After the client gave up (ErrUnavailable) it fails
// at once, without waiting for connMu, which the redialling goroutine may
// hold.
func (c *Client) current() (*clientConn, error) {
	if c.unavailable.Load() {
		return nil, c.unavailableErr()
	}
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	err := c.conn.broken()
	if err == nil {
		return c.conn, nil
	}
	c.noteLost(err)
	if c.opts.Reconnect <= 0 {
		return c.conn, err
	}
	if c.unavailable.Load() {
		return nil, c.unavailableErr()
	}
	cc, err := c.dial()
	if err != nil {
		return nil, fmt.Errorf("%w: reconnecting: %v", ErrClosed, err)
	}
	c.install(cc)
	return cc, nil
}

// noteLost records and logs, once per connection, that it was lost
// (connMu held).
func (c *Client) noteLost(err error) {
	if c.lostGen == c.gen {
		return
	}
	c.lostGen, c.lostAt = c.gen, time.Now()
	if c.opts.Reconnect > 0 {
		c.log.Warn("lost the connection to the forwarder; reconnecting", "addr", c.addr, "wait", c.opts.Reconnect, "err", err)
	} else {
		c.log.Warn("lost the connection to the forwarder; calls fail from now on (no reconnect)", "addr", c.addr, "err", err)
	}
}

// install makes cc the connection (connMu held).
func (c *Client) install(cc *clientConn) {
	c.conn.close()
	c.conn, c.gen = cc, cc.gen
	c.log.Info("reconnected to the forwarder", "addr", c.addr, "after", time.Since(c.lostAt).Round(time.Millisecond))
	c.lostAt = time.Time{}
	c.unavailable.Store(false)
}

func (c *Client) unavailableErr() error {
	return fmt.Errorf("%w: %w: %s did not answer within %v; reconnecting in the background", ErrClosed, ErrUnavailable, c.addr, c.opts.Reconnect)
}

// giveUp makes calls fail at once and starts redialling in the background
// (connMu held).
func (c *Client) giveUp() {
	if c.unavailable.Swap(true) {
		return
	}
	c.log.Warn("gave up waiting for the forwarder: calls fail at once until it is back; retrying in the background",
		"addr", c.addr, "waited", c.opts.Reconnect, "retry", ReconnectRetry)
	go c.redial()
}

// redial tries the forwarder every ReconnectRetry until it answers (then
// calls work again) or the client is closed. A probe connection comes
// first, so that connMu is held only to dial a forwarder that is there.
func (c *Client) redial() {
	t := time.NewTicker(ReconnectRetry)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		probe, err := net.DialTimeout(c.network, c.addr, c.opts.DialTimeout)
		if err != nil {
			continue
		}
		probe.Close()
		c.connMu.Lock()
		if c.closed {
			c.connMu.Unlock()
			return
		}
		cc, err := c.dial()
		if err == nil {
			c.install(cc)
		}
		c.connMu.Unlock()
		if err == nil {
			return
		}
	}
}

// maxIO is the largest read or write sent in one request.
func (c *Client) maxIO() int {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return min(int(c.wantIO.Load()), c.conn.maxIO)
}

// SharedMemory reports whether the current connection moves data through
// a shared region (see Options.NoShm).
func (c *Client) SharedMemory() bool {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return c.conn.shm != nil
}

// Servers is the number of data servers behind the daemon, as its hello said.
func (c *Client) Servers() int {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return c.conn.servers
}

// Close closes the connection; outstanding calls fail with ErrClosed.
func (c *Client) Close() error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	close(c.stop)
	return c.conn.close()
}

func (cc *clientConn) close() error {
	cc.fail(ErrClosed)
	err := cc.nc.Close()
	<-cc.done
	if r := cc.ring.Load(); r != nil {
		procReaper.forget(r)
		// Calls still returning pin the region through their own ranges
		// (a request's allocation or a Buffer), so the rings stay mapped
		// until the last of them is done with them.
		cc.shm.freeHeld(r.off, shm.RingBytes(int(r.r.Entries())))
	}
	cc.shm.close()
	return err
}

func (cc *clientConn) broken() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err
}

func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
	}
	for id, cl := range cc.pending {
		cl.err = cc.err
		close(cl.done)
		delete(cc.pending, id)
	}
	cc.mu.Unlock()
}

// repeatable reports whether m may be sent again after a lost connection.
func repeatable(m *fwdproto.Msg) bool {
	switch m.Op {
	case fwdproto.OpUnlink, fwdproto.OpMkdir, fwdproto.OpHello, fwdproto.OpRename, fwdproto.OpLink, fwdproto.OpSymlink,
		fwdproto.OpMknod, fwdproto.OpLock: // locks die with their connection
		return false
	case fwdproto.OpOpen:
		return m.Flags&fwdproto.OpenExcl == 0
	}
	return true
}

// do sends m and waits for its response, on the current connection; with
// Reconnect, a call lost with its connection is repeated when that is safe.
// For reads, dst receives the data. prepare, if set, is called with the
// connection before each attempt (files reopen there).
func (c *Client) do(m *fwdproto.Msg, dst []byte, prepare func(cc *clientConn) error) (*call, error) {
	if len(m.Path) > fwdproto.MaxPath || len(m.Path2) > fwdproto.MaxPath {
		return nil, &fwdproto.Error{Code: fwdproto.CodeNameTooLong, Msg: fmt.Sprintf("a path of %d bytes (at most %d)", max(len(m.Path), len(m.Path2)), fwdproto.MaxPath)}
	}
	for {
		cc, err := c.current()
		if err == nil && prepare != nil {
			err = prepare(cc)
		}
		var cl *call
		if err == nil {
			cl, err = cc.do(m, dst)
			if err == nil {
				return cl, nil
			}
		}
		if c.opts.Reconnect <= 0 || !errors.Is(err, ErrClosed) || !repeatable(m) || errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		c.connMu.Lock()
		if c.closed {
			c.connMu.Unlock()
			return nil, err
		}
		if c.conn.broken() != nil {
			c.noteLost(err)
		}
		if c.lostGen == c.gen && !c.lostAt.IsZero() && time.Since(c.lostAt) >= c.opts.Reconnect {
			c.giveUp()
			c.connMu.Unlock()
			return nil, c.unavailableErr()
		}
		c.connMu.Unlock()
		time.Sleep(50 * time.Millisecond) // the daemon is restarting
	}
}

// do sends m on this connection and waits for the response. Reads and
// writes go through the shared region when there is one and it has room.
func (cc *clientConn) do(m *fwdproto.Msg, dst []byte) (*call, error) {
	if r := cc.ring.Load(); r != nil && (m.Op == fwdproto.OpReadShm || m.Op == fwdproto.OpWriteShm) {
		return cc.ringDo(r, m)
	}
	if cc.shm != nil && (m.Op == fwdproto.OpWrite && len(m.Data) > 0 || m.Op == fwdproto.OpRead && m.Length > 0) {
		if cl, err, ok := cc.doShm(m, dst); ok {
			return cl, err
		}
	}
	return cc.send(m, dst, nil)
}

// doShm sends a read or write through the shared region; ok is false when
// the region has no room (nothing was sent).
func (cc *clientConn) doShm(m *fwdproto.Msg, dst []byte) (cl *call, err error, ok bool) {
	n := len(m.Data)
	sm := fwdproto.Msg{Op: fwdproto.OpWriteShm, Handle: m.Handle, Offset: m.Offset, Process: m.Process}
	if m.Op == fwdproto.OpRead {
		n, sm.Op = int(m.Length), fwdproto.OpReadShm
	}
	off, ok := cc.shm.alloc(n)
	if !ok {
		return nil, nil, false
	}
	defer cc.shm.free(off, n)
	buf := cc.shm.mem[off : off+n]
	if m.Op == fwdproto.OpWrite {
		copy(buf, m.Data)
	}
	sm.Length, sm.ShmOff = int64(n), uint64(off)
	if r := cc.ring.Load(); r != nil {
		cl, err = cc.ringDo(r, &sm)
	} else {
		cl, err = cc.send(&sm, nil, nil)
	}
	if err != nil {
		return nil, err, true
	}
	if m.Op == fwdproto.OpRead {
		k := int(min(max(cl.resp.N, 0), int64(n)))
		cl.n = copy(dst, buf[:k])
	}
	return cl, nil, true
}

// send sends m on this connection (with sendFixed, if set, writing its
// encoded frame) and waits for the response.
func (cc *clientConn) send(m *fwdproto.Msg, dst []byte, sendFixed func(hdr []byte) error) (*call, error) {
	cl := &call{dst: dst, done: make(chan struct{})}
	cc.wmu.Lock()
	if err := cc.register(m, cl); err != nil {
		cc.wmu.Unlock()
		return nil, err
	}
	cc.hdr = fwdproto.AppendFixed(cc.hdr[:0], m)
	var err error
	if sendFixed != nil {
		err = sendFixed(cc.hdr)
	} else if m.Op == fwdproto.OpWrite && len(m.Data) > 0 {
		// One writev: the data goes from the caller's buffer to the socket.
		cc.bufs = append(cc.bufs[:0], cc.hdr, m.Data)
		_, err = cc.bufs.WriteTo(cc.nc)
	} else {
		_, err = cc.nc.Write(cc.hdr)
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(fmt.Errorf("%w: %v", ErrClosed, err))
		_ = cc.nc.Close()
	}
	<-cl.done
	return cl.result()
}

// register gives m the next request id and makes cl its pending call
// (wmu held, so ids go out in order).
func (cc *clientConn) register(m *fwdproto.Msg, cl *call) error {
	cc.next++
	m.ID = cc.next
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return cc.err
	}
	cc.pending[m.ID] = cl
	return nil
}

// result is a finished call's outcome.
func (cl *call) result() (*call, error) {
	if cl.err != nil {
		return nil, cl.err
	}
	if cl.resp.Code != fwdproto.CodeOK {
		return nil, &fwdproto.Error{Code: cl.resp.Code, Msg: cl.resp.Err}
	}
	return cl, nil
}

// ringDo submits a read-shm or write-shm through the submission ring and
// waits for its completion (or its error frame on the socket).
func (cc *clientConn) ringDo(r *clientRing, m *fwdproto.Msg) (*call, error) {
	select {
	case r.slots <- struct{}{}:
	case <-cc.done:
		return nil, cc.broken()
	}
	defer func() { <-r.slots }()
	cl := &call{op: m.Op, done: make(chan struct{})}
	cc.wmu.Lock()
	if err := cc.register(m, cl); err != nil {
		cc.wmu.Unlock()
		return nil, err
	}
	var err error
	if r.outstanding.Add(1) == 1 {
		procReaper.watch(r, cc)
	}
	if r.submit(m) {
		_, err = cc.nc.Write(shm.WakeFrame)
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(fmt.Errorf("%w: %v", ErrClosed, err))
		_ = cc.nc.Close()
	}
	<-cl.done
	r.outstanding.Add(-1)
	return cl.result()
}

func (cc *clientConn) readLoop() {
	defer close(cc.done)
	br := bufio.NewReaderSize(cc.nc, 4<<10) // large read data bypasses it
	var hdr [fwdproto.HeaderSize]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			cc.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		h, n, err := fwdproto.ParseHeader(hdr[:], fwdproto.DefaultMaxFrame)
		if err != nil || !h.IsResponse() {
			cc.fail(fmt.Errorf("%w: bad frame from daemon: %v", ErrClosed, err))
			_ = cc.nc.Close()
			return
		}
		if h.Op() == fwdproto.OpWake {
			// The daemon posted completions and a caller sleeps.
			if _, err := br.Discard(n); err != nil {
				cc.fail(fmt.Errorf("%w: %v", ErrClosed, err))
				return
			}
			if r := cc.ring.Load(); r != nil {
				r.reap(cc, true)
				procReaper.wake()
			}
			continue
		}
		cc.mu.Lock()
		cl := cc.pending[h.ID]
		delete(cc.pending, h.ID)
		cc.mu.Unlock()
		if cl != nil && h.Op() == fwdproto.OpRead && n >= 2 && n-2 <= len(cl.dst) {
			// Read data straight into the caller's buffer.
			var st [2]byte
			if _, err := io.ReadFull(br, st[:]); err != nil {
				cc.failCall(cl, err)
				return
			}
			if code := fwdproto.Code(binary.BigEndian.Uint16(st[:])); code == fwdproto.CodeOK {
				if _, err := io.ReadFull(br, cl.dst[:n-2]); err != nil {
					cc.failCall(cl, err)
					return
				}
				cl.resp = fwdproto.Msg{Op: fwdproto.OpRead, ID: h.ID, Response: true}
				cl.n = n - 2
				close(cl.done)
				continue
			}
			rest := make([]byte, n)
			copy(rest, st[:])
			if _, err := io.ReadFull(br, rest[2:]); err != nil {
				cc.failCall(cl, err)
				return
			}
			finish(cl, h, rest)
			continue
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			if cl != nil {
				cc.failCall(cl, err)
			}
			cc.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		if cl == nil {
			// A response to no request: a connection-level error (bad frame).
			var m fwdproto.Msg
			if fwdproto.Decode(h, p, &m) == nil && m.Code != fwdproto.CodeOK {
				cc.fail(fmt.Errorf("%w: %v", ErrClosed, &fwdproto.Error{Code: m.Code, Msg: m.Err}))
			}
			continue
		}
		finish(cl, h, p)
	}
}

func (cc *clientConn) failCall(cl *call, err error) {
	cl.err = fmt.Errorf("%w: %v", ErrClosed, err)
	close(cl.done)
	cc.fail(cl.err)
}

func finish(cl *call, h fwdproto.Header, p []byte) {
	if err := fwdproto.Decode(h, p, &cl.resp); err != nil {
		cl.err = err
	} else if cl.resp.Op == fwdproto.OpRead && cl.resp.Code == fwdproto.CodeOK {
		if len(cl.resp.Data) > len(cl.dst) {
			cl.err = fmt.Errorf("%w: read returned %d bytes, asked %d", fwdproto.ErrMalformed, len(cl.resp.Data), len(cl.dst))
		} else {
			cl.n = copy(cl.dst, cl.resp.Data)
		}
	}
	close(cl.done)
}

// FileInfo is file metadata as the daemon reports it.
type FileInfo = fwdproto.FileInfo

// OpenFile opens path with fwdproto.Open* flags; mode applies on creation.
func (c *Client) OpenFile(path string, flags uint32, mode fs.FileMode) (*File, error) {
	f := &File{c: c, path: path}
	m := &fwdproto.Msg{Op: fwdproto.OpOpen, Path: path, Flags: flags, Mode: uint32(mode.Perm())}
	var gen uint64
	cl, err := c.do(m, nil, func(cc *clientConn) error { gen = cc.gen; return nil })
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f.h, f.gen, f.info = cl.resp.Handle, gen, cl.resp.Info
	c.filesMu.Lock()
	c.files[f] = struct{}{}
	c.filesMu.Unlock()
	return f, nil
}

// Open opens an existing file.
func (c *Client) Open(path string) (*File, error) { return c.OpenFile(path, 0, 0) }

// Create creates or truncates path (mode 0644).
func (c *Client) Create(path string) (*File, error) {
	return c.OpenFile(path, fwdproto.OpenCreate|fwdproto.OpenTruncate, 0o644)
}

// Stat returns path's metadata.
func (c *Client) Stat(path string) (FileInfo, error) {
	cl, err := c.do(&fwdproto.Msg{Op: fwdproto.OpStat, Path: path}, nil, nil)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return cl.resp.Info, nil
}

// Unlink removes a file or an empty directory.
func (c *Client) Unlink(path string) error {
	_, err := c.do(&fwdproto.Msg{Op: fwdproto.OpUnlink, Path: path}, nil, nil)
	if err != nil {
		return fmt.Errorf("unlink %s: %w", path, err)
	}
	return nil
}

// Truncate sets path's size.
func (c *Client) Truncate(path string, size int64) error {
	_, err := c.do(&fwdproto.Msg{Op: fwdproto.OpTruncate, Path: path, Length: size}, nil, nil)
	if err != nil {
		return fmt.Errorf("truncate %s: %w", path, err)
	}
	return nil
}

// Mkdir creates a directory; an existing name fails with an error matching fs.ErrExist.
func (c *Client) Mkdir(path string, mode fs.FileMode) error {
	_, err := c.do(&fwdproto.Msg{Op: fwdproto.OpMkdir, Path: path, Mode: uint32(mode.Perm())}, nil, nil)
	if err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	return nil
}

// ReadDir lists a directory ("" or "." is the export root).
func (c *Client) ReadDir(path string) ([]FileInfo, error) {
	cl, err := c.do(&fwdproto.Msg{Op: fwdproto.OpReadDir, Path: path}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("readdir %s: %w", path, err)
	}
	return cl.resp.Entries, nil
}

// File is an open file on the daemon. ReadAt and WriteAt may be called
// concurrently; each call is pipelined in MaxIO chunks. With
// Options.Reconnect the file is reopened by path (without creating or
// truncating) on a new connection: its name as the Client last renamed it.
type File struct {
	c    *Client
	info FileInfo
	// Process identifies the calling process to the daemon's pattern
	// detection (set it per rank in multi-process clients, before use).
	Process uint32

	mu   sync.Mutex
	path string // as opened, or as the Client renamed it since
	h    uint64 // handle on the connection of generation gen
	gen  uint64
}

// Name returns the file's path: the one it was opened with, or its new
// name once the Client renamed it (or a directory above it).
func (f *File) Name() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.path
}

// Handle returns the daemon's handle of the file.
func (f *File) Handle() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.h
}

// on returns the prepare function that points m at the file's handle on
// connection cc, reopening the file there if it was opened on another.
func (f *File) on(m *fwdproto.Msg) func(cc *clientConn) error {
	return func(cc *clientConn) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.gen != cc.gen {
			cl, err := cc.do(&fwdproto.Msg{Op: fwdproto.OpOpen, Path: f.path}, nil)
			if err != nil {
				return fmt.Errorf("reopen: %w", err)
			}
			f.h, f.gen = cl.resp.Handle, cc.gen
		}
		m.Handle = f.h
		return nil
	}
}

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
	return f.split(len(p), off, func(lo, hi int) (int, error) { return f.one(p[lo:hi], off+int64(lo), write) })
}

// split moves n bytes at off in requests of at most maxIO bytes, sent
// concurrently: one(lo, hi) moves bytes [lo, hi) of the n. It returns the
// bytes moved up to the first short request or error.
func (f *File) split(n int, off int64, one func(lo, hi int) (int, error)) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset: %w", f.Name(), fs.ErrInvalid)
	}
	max := f.c.maxIO()
	if n <= max {
		return one(0, n)
	}
	type res struct {
		n   int
		err error
	}
	k := (n + max - 1) / max
	out := make([]res, k)
	var wg sync.WaitGroup
	for i := 0; i < k; i++ {
		lo, hi := i*max, min((i+1)*max, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := one(lo, hi)
			out[i] = res{m, err}
		}()
	}
	wg.Wait()
	moved := 0
	for i, r := range out {
		if r.err != nil {
			return moved, r.err
		}
		moved += r.n
		if r.n < min((i+1)*max, n)-i*max {
			break
		}
	}
	return moved, nil
}

func (f *File) one(p []byte, off int64, write bool) (n int, err error) {
	f.c.begin(len(p))
	defer func() { f.c.end(n, write) }()
	if write {
		m := &fwdproto.Msg{Op: fwdproto.OpWrite, Offset: off, Process: f.Process, Data: p}
		cl, err := f.c.do(m, nil, f.on(m))
		if err != nil {
			return 0, fmt.Errorf("write %s at %d: %w", f.Name(), off, err)
		}
		return int(cl.resp.N), nil
	}
	m := &fwdproto.Msg{Op: fwdproto.OpRead, Offset: off, Length: int64(len(p)), Process: f.Process}
	cl, err := f.c.do(m, p, f.on(m))
	if err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
	}
	return cl.n, nil
}

// Sync asks the backend to make the file durable.
func (f *File) Sync() error {
	m := &fwdproto.Msg{Op: fwdproto.OpFsync}
	if _, err := f.c.do(m, nil, f.on(m)); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

// Stat returns the file's current metadata.
func (f *File) Stat() (FileInfo, error) { return f.c.Stat(f.Name()) }

// errGone: the file's handle died with an earlier connection.
var errGone = errors.New("fwd: handle of an earlier connection")

// Close releases the handle. A handle of a connection since lost is
// already released.
func (f *File) Close() error {
	f.c.filesMu.Lock()
	delete(f.c.files, f)
	f.c.filesMu.Unlock()
	m := &fwdproto.Msg{Op: fwdproto.OpClose}
	_, err := f.c.do(m, nil, func(cc *clientConn) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.gen != cc.gen {
			return errGone
		}
		m.Handle = f.h
		return nil
	})
	if err != nil && !errors.Is(err, errGone) {
		return fmt.Errorf("close %s: %w", f.Name(), err)
	}
	return nil
}

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)
