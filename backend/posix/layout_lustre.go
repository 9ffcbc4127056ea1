package posix

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/backend/lustre"
	"github.com/adaptio/adaptio/layout"
)

// lustreXattrs are the attributes a Lustre client serves a file's layout
// under, tried in order ("trusted.lov" needs CAP_SYS_ADMIN).
var lustreXattrs = []string{"lustre.lov", "trusted.lov"}

// maxCachedLayouts bounds the per-file cache; past it the cache starts
// over (a layout costs one getxattr to read again).
const maxCachedLayouts = 1 << 16

// lustreKind reads each file's striping from its lustre.lov extended
// attribute: server i is OST index i. Layouts are cached per file name and
// read again when the file is opened as another file or after a change
// (inode, ctime: Opened), and when a request falls in a component not yet
// instantiated (a progressive layout gets its next component's objects
// when a write first reaches it).
//
// Bytes no OST holds go to one queue chosen by a hash of the name, as the
// static kind places a file's first stripe: data on the MDT (DoM), a file
// released to HSM, a file with no layout attribute or an undecodable one
// (logged once). Bytes of a component not yet instantiated go to the
// queues a round robin from its requested first OST (or the hash) would
// give, until the file system says where they are. OST indices at or
// beyond Servers() share queue index mod Servers() (logged once): set
// --servers to the file system's OST count.
type lustreKind struct {
	xattr   XattrFunc
	names   []string
	servers int
	log     *slog.Logger

	mu     sync.Mutex
	files  map[string]*lustreFile
	warned map[string]bool // names whose layout could not be used, logged once
	folded bool            // an OST index beyond Servers() was logged
}

// lustreFile is one file's cached layout.
type lustreFile struct {
	raw   []byte         // the attribute as read; nil: none
	l     *lustre.Layout // nil: none usable
	ino   uint64         // identity when last described (Opened); 0: unknown
	ctime time.Time
	stale bool // read again before use
	// prev is the layout this one replaced, if it differed: requests split
	// under it may still be on their way (Check).
	prev *lustreFile
}

var _ Layouts = (*lustreKind)(nil)

func newLustre(env Env) (Layouts, error) {
	servers := env.Servers
	if servers <= 0 {
		n, where, err := lustreOSTCount()
		if err != nil {
			return nil, fmt.Errorf("cannot tell the number of OSTs (%w): set --servers to the file system's OST count (the highest OST index in `lfs df DIR` plus one)", err)
		}
		servers = n
		env.Logger.Info("posix: lustre layout: OST count from the client", "servers", n, "from", where)
	}
	if servers > math.MaxUint16+1 {
		return nil, fmt.Errorf("%w: %d servers (Lustre has at most 65536 OSTs)", backend.ErrBadArgument, servers)
	}
	names := env.XattrNames
	if len(names) == 0 {
		names = lustreXattrs
	}
	return &lustreKind{xattr: env.Xattr, names: names, servers: servers, log: env.Logger,
		files: make(map[string]*lustreFile), warned: make(map[string]bool)}, nil
}

// lustreOSTCount finds the OST count from the Lustre client's LOV devices
// (lctl get_param lov.*.target_obd): the highest OST index listed plus one,
// over every Lustre file system mounted.
func lustreOSTCount() (int, string, error) {
	var files []string
	for _, pat := range []string{"/sys/fs/lustre/lov/*/target_obd", "/proc/fs/lustre/lov/*/target_obd"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) == 0 {
		return 0, "", errors.New("no Lustre client LOV devices in /sys/fs/lustre or /proc/fs/lustre")
	}
	best, where := 0, ""
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n := parseTargetOBD(data); n > best {
			best, where = n, f
		}
	}
	if best == 0 {
		return 0, "", fmt.Errorf("no OSTs listed in %s", strings.Join(files, ", "))
	}
	return best, where, nil
}

// parseTargetOBD reads a LOV target_obd listing, lines "IDX: NAME STATE",
// and returns the highest index plus one (0: none).
func parseTargetOBD(data []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		idx, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(idx); err == nil && i >= 0 && i <= math.MaxUint16 {
			n = max(n, i+1)
		}
	}
	return n
}

func (k *lustreKind) Servers() int { return k.servers }

// file returns name's layout, reading it if it is not cached, stale, or
// reread is set.
func (k *lustreKind) file(name string, reread bool) *lustreFile {
	k.mu.Lock()
	f := k.files[name]
	k.mu.Unlock()
	if f != nil && !f.stale && !reread {
		return f
	}
	nf := k.read(name)
	k.mu.Lock()
	defer k.mu.Unlock()
	if cur := k.files[name]; cur != nil {
		nf.ino, nf.ctime = cur.ino, cur.ctime
		nf.prev = cur.prev
		if cur.raw != nil && !bytes.Equal(cur.raw, nf.raw) {
			nf.prev = &lustreFile{raw: cur.raw, l: cur.l}
		}
	}
	if len(k.files) >= maxCachedLayouts {
		clear(k.files)
	}
	k.files[name] = nf
	return nf
}

// read reads and decodes name's layout attribute.
func (k *lustreKind) read(name string) *lustreFile {
	var raw []byte
	var lastErr error
	for _, attr := range k.names {
		b, err := k.xattr(name, attr)
		if err == nil {
			raw = b
			break
		}
		if !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) && !errors.Is(err, unix.EPERM) {
			lastErr = err
		}
	}
	f := &lustreFile{raw: raw}
	if raw == nil {
		if lastErr != nil && !errors.Is(lastErr, fs.ErrNotExist) {
			k.warn(name, "posix: lustre layout unreadable: one queue for the file", "err", lastErr)
		}
		f.stale = true // a file created since gets its layout: read again next time
		return f
	}
	l, err := lustre.Decode(raw)
	if err != nil {
		k.warn(name, "posix: lustre layout not decodable: one queue for the file", "err", err)
		return f
	}
	f.l = &l
	return f
}

func (k *lustreKind) warn(name, msg string, args ...any) {
	k.mu.Lock()
	first := !k.warned[name]
	if first && len(k.warned) < maxCachedLayouts {
		k.warned[name] = true
	}
	k.mu.Unlock()
	if first {
		k.log.Warn(msg, append([]any{"file", name}, args...)...)
	}
}

// server maps file offset off of name to a queue: the server and the end
// of the bytes from off on it (math.MaxInt64: the end of the file), and
// whether off lies in a component not yet instantiated.
func (k *lustreKind) server(name string, f *lustreFile, off int64) (srv int, end int64, uninit bool) {
	hashed := layout.Layout{}.FirstServer(name, k.servers)
	if f.l == nil {
		return hashed, math.MaxInt64, false
	}
	c := f.l.Find(uint64(off))
	if c == nil { // past every extent: a composite layout not reaching EOF
		return hashed, nextStart(f.l, uint64(off)), true
	}
	ost, e, err := c.Stripe(uint64(off))
	switch {
	case err == nil && ost == lustre.MDT:
		return hashed, clipEOF(e), false
	case err == nil:
		return k.fold(ost), clipEOF(e), false
	case errors.Is(err, lustre.ErrNotInstantiated):
		return k.guess(hashed, c, off)
	}
	return hashed, clipEOF(c.End), false // released, or otherwise without stripes
}

// guess is where an uninstantiated component's bytes at off would go by a
// round robin from its requested first OST (or the hashed one) over its
// stripe count.
func (k *lustreKind) guess(hashed int, c *lustre.Component, off int64) (int, int64, bool) {
	count := c.StripeCount
	if count < 0 || count > k.servers {
		count = k.servers
	}
	count = max(count, 1)
	first := hashed
	if c.StripeOffset >= 0 {
		first = c.StripeOffset
	}
	ss := int64(max(c.StripeSize, 1))
	stripe := off / ss
	end := min((stripe+1)*ss, clipEOF(c.End))
	return k.fold(first + int(stripe%int64(count))), end, true
}

// fold maps an OST index to a queue, sharing queues for indices beyond
// Servers().
func (k *lustreKind) fold(ost int) int {
	if ost < k.servers {
		return ost
	}
	k.mu.Lock()
	first := !k.folded
	k.folded = true
	k.mu.Unlock()
	if first {
		k.log.Warn("posix: lustre layout: OST index beyond the configured servers shares a queue; set --servers to the OST count", "ost", ost, "servers", k.servers)
	}
	return ost % k.servers
}

func nextStart(l *lustre.Layout, off uint64) int64 {
	next := lustre.EOF
	for _, c := range l.Components {
		if c.Start > off {
			next = min(next, c.Start)
		}
	}
	return clipEOF(next)
}

func clipEOF(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

func (k *lustreKind) Split(dst []layout.Piece, name string, off, n int64) ([]layout.Piece, error) {
	dst, _ = k.split(dst, name, off, n)
	return dst, nil
}

// split is Split, also returning the layout it used.
func (k *lustreKind) split(dst []layout.Piece, name string, off, n int64) ([]layout.Piece, *lustreFile) {
	f := k.file(name, false)
	pieces, uninit := k.splitWith(dst, name, f, off, n)
	if uninit {
		// The write that instantiates the component may have run: look
		// again, once per request, and split the whole request under
		// what is found.
		f = k.file(name, true)
		pieces, _ = k.splitWith(dst, name, f, off, n)
	}
	return pieces, f
}

func (k *lustreKind) Check(name string, server int, off, n int64) error {
	var buf [8]layout.Piece
	pieces, f := k.split(buf[:0], name, off, n)
	if onServer(pieces, server) {
		return nil
	}
	// The request may have been split under the layout this one replaced
	// (a component instantiated, the file re-striped) and the bytes go
	// through whichever queue they were given: accept the previous layout,
	// or a change found now.
	if f.prev != nil {
		if prev, _ := k.splitWith(buf[:0], name, f.prev, off, n); onServer(prev, server) {
			return nil
		}
	}
	if again := k.file(name, true); !bytes.Equal(again.raw, f.raw) {
		return nil
	}
	return fmt.Errorf("%w: file bytes [%d, %d) are not all on OST %d (its Lustre layout puts them on %v)",
		backend.ErrBadArgument, off, off+n, server, servers(pieces))
}

// splitWith splits under layout f, never reading it again; uninit says
// whether a piece fell in a component Lustre has not instantiated.
func (k *lustreKind) splitWith(dst []layout.Piece, name string, f *lustreFile, off, n int64) (_ []layout.Piece, uninit bool) {
	for n > 0 {
		srv, end, u := k.server(name, f, off)
		uninit = uninit || u
		length := min(end-off, n)
		if m := len(dst); m > 0 && dst[m-1].Server == srv && dst[m-1].Offset+dst[m-1].Length == off {
			dst[m-1].Length += length
		} else {
			dst = append(dst, layout.Piece{Server: srv, Offset: off, Length: length})
		}
		off += length
		n -= length
	}
	return dst, uninit
}

func onServer(pieces []layout.Piece, server int) bool {
	for _, p := range pieces {
		if p.Server != server {
			return false
		}
	}
	return true
}

func servers(pieces []layout.Piece) []int {
	var s []int
	for _, p := range pieces {
		s = append(s, p.Server)
	}
	return s
}

func (k *lustreKind) Opened(name string, fi backend.FileInfo) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.files[name]
	if f != nil && f.ino == fi.Ino && f.ctime.Equal(fi.Ctime) {
		return
	}
	// Another file, or changed since: read its layout at the next request.
	nf := &lustreFile{ino: fi.Ino, ctime: fi.Ctime, stale: true}
	if f != nil && f.raw != nil && f.ino == fi.Ino {
		nf.raw, nf.l = f.raw, f.l // the same file changed: kept to compare with, and as prev once read again
	}
	k.files[name] = nf
	if len(k.files) > maxCachedLayouts {
		clear(k.files)
	}
}

func (k *lustreKind) Forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if name == "" || name == "." {
		clear(k.files)
		return
	}
	for n := range k.files {
		if n == name || strings.HasPrefix(n, name+"/") {
			delete(k.files, n)
		}
	}
}
