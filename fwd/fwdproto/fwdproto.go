package fwdproto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"time"
)

// Frame layout constants. Every frame is
//
//	length  uint32  bytes that follow this field (HeaderSize-4 + payload)
//	magic   uint16  Magic
//	version uint8   Version
//	type    uint8   Op, with RespFlag set on responses
//	id      uint64  request id chosen by the client, echoed in the response
//	payload         op-specific, see docs/protocol.md
//
// All integers are big-endian.
const (
	Magic      uint16 = 0xADF0
	Version    uint8  = 5
	HeaderSize        = 16
	RespFlag   uint8  = 0x80
	// DefaultMaxFrame is the default largest frame (header included) a peer
	// accepts: 16 MiB of data plus room for the header and fields.
	DefaultMaxFrame = 16<<20 + 4096
	// MaxPath is the longest path in bytes, relative to the export root
	// (longer than PATH_MAX: the kernel limits each system call's path,
	// and a process inside a deep directory reaches paths longer than that
	// from the mount's root).
	MaxPath = 32 << 10
	// MaxEntries is the most directory entries one readdir response carries.
	MaxEntries = 1 << 16
)

// MinVersion is the oldest version a peer still accepts. A frame carries
// the version that introduced its operation (OpVersion), so a client or
// daemon of version 3 exchanges its operations unchanged with one of
// version 4; the operations of version 4 need a version 4 daemon.
const MinVersion uint8 = 3

// Op is a protocol operation.
type Op uint8

// Operations. The zero value is invalid.
const (
	OpHello    Op = 1
	OpOpen     Op = 2
	OpClose    Op = 3
	OpRead     Op = 4
	OpWrite    Op = 5
	OpFsync    Op = 6
	OpStat     Op = 7
	OpUnlink   Op = 8
	OpTruncate Op = 9
	OpMkdir    Op = 10
	OpReadDir  Op = 11
	// OpShm offers the daemon a shared-memory region (a sealed memfd passed
	// with SCM_RIGHTS over a Unix socket); OpReadShm and OpWriteShm then
	// carry (offset, length) into it instead of data bytes.
	OpShm      Op = 12
	OpReadShm  Op = 13
	OpWriteShm Op = 14
	// OpRing sets up submission and completion rings inside the shared
	// region (docs/protocol.md, "Rings"): read-shm and write-shm then travel
	// through shared memory and only wake-ups cross the socket.
	OpRing Op = 15
	// OpWake is a wake-up with no payload and no response: a client's
	// doorbell (the daemon's ring poller sleeps and the submission ring has
	// entries) or the daemon's (the completion ring has entries and a
	// client caller sleeps; sent as a response with id 0).
	OpWake Op = 16
	// Namespace and attribute operations (POSIX through the mount).
	OpRename   Op = 17 // Path -> Path2, replacing Path2 if it exists (as rename(2))
	OpLink     Op = 18 // hard link Path2 to the existing Path
	OpSymlink  Op = 19 // symbolic link at Path whose target is Path2
	OpReadlink Op = 20 // response: Path2, the target
	OpSetattr  Op = 21 // Flags (Set*) say which of Mode, UID, GID, Atime, Mtime apply
	OpStatfs   Op = 22 // response: FS
	// OpMknod creates a FIFO, socket, device node or empty regular file at
	// Path (mknod(2)): Mode is a Unix mode with its S_IF* type bits, Rdev
	// the device number of a block or character device.
	OpMknod Op = 23
	// OpAuth proves, before hello, that the client holds the forwarder's
	// token (a challenge and response over HMAC-SHA256; see Auth).
	OpAuth Op = 24
	// Version 4 (locks.go): file locks held by the forwarder for all its
	// clients, and preallocation.
	OpLock      Op = 25 // set or release a lock, or wait for one (Lock)
	OpGetlk     Op = 26 // the first lock that conflicts with Lock (F_GETLK)
	OpFallocate Op = 27 // allocate [Offset, Offset+Length) of Handle (Mode 0)
	// Version 5 (job.go): the job a process's requests belong to.
	OpJob Op = 28 // bind Process (or AllProcesses) of the session to Job
	opMax Op = 29
)

// Setattr flags: which attributes an OpSetattr changes.
const (
	SetMode  uint32 = 1 << 0
	SetUID   uint32 = 1 << 1
	SetGID   uint32 = 1 << 2
	SetAtime uint32 = 1 << 3
	SetMtime uint32 = 1 << 4
)

// UnixMode returns the permission, setuid, setgid and sticky bits of m as
// a Unix mode (no type bits).
func UnixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// Unix file types (S_IF* of a mode's S_IFMT bits), as mknod's Mode
// carries them.
const (
	ModeTypeMask uint32 = 0o170000
	TypeFIFO     uint32 = 0o010000
	TypeChar     uint32 = 0o020000
	TypeDir      uint32 = 0o040000
	TypeBlock    uint32 = 0o060000
	TypeRegular  uint32 = 0o100000
	TypeSymlink  uint32 = 0o120000
	TypeSocket   uint32 = 0o140000
)

// UnixType is the S_IF* type of m (TypeRegular for a plain file).
func UnixType(m fs.FileMode) uint32 {
	switch {
	case m&fs.ModeDir != 0:
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	case m&fs.ModeNamedPipe != 0:
		return TypeFIFO
	case m&fs.ModeSocket != 0:
		return TypeSocket
	case m&fs.ModeCharDevice != 0:
		return TypeChar
	case m&fs.ModeDevice != 0:
		return TypeBlock
	}
	return TypeRegular
}

// FileType is UnixType's inverse: the fs.FileMode type bits of a Unix
// mode's S_IF* type (none for a regular file or an unknown type).
func FileType(u uint32) fs.FileMode {
	switch u & ModeTypeMask {
	case TypeDir:
		return fs.ModeDir
	case TypeSymlink:
		return fs.ModeSymlink
	case TypeFIFO:
		return fs.ModeNamedPipe
	case TypeSocket:
		return fs.ModeSocket
	case TypeChar:
		return fs.ModeDevice | fs.ModeCharDevice
	case TypeBlock:
		return fs.ModeDevice
	}
	return 0
}

// FileMode is UnixMode's inverse: the permission, setuid, setgid and
// sticky bits of a Unix mode as an fs.FileMode.
func FileMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// FS is file-system usage, as statfs(2) reports it.
type FS struct {
	BlockSize uint32 // bytes per block of Blocks, Free, Avail
	Blocks    uint64 // total
	Free      uint64 // free
	Avail     uint64 // free to unprivileged users
	Files     uint64 // inodes
	FreeFiles uint64
	NameLen   uint32 // longest name
}

// MaxShm is the largest shared region a daemon maps for one connection.
const MaxShm = 1 << 30

var opNames = [...]string{"", "hello", "open", "close", "read", "write", "fsync", "stat", "unlink", "truncate", "mkdir", "readdir",
	"shm", "read-shm", "write-shm", "ring", "wake", "rename", "link", "symlink", "readlink", "setattr", "statfs", "mknod", "auth",
	"lock", "getlk", "fallocate", "job"}

// String returns the operation's lower-case name.
func (o Op) String() string {
	if o > 0 && o < opMax {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Valid reports whether o is a known operation.
func (o Op) Valid() bool { return o > 0 && o < opMax }

// Open flags.
const (
	OpenCreate   uint32 = 1 << 0 // create the file if absent
	OpenTruncate uint32 = 1 << 1 // truncate to zero length
	OpenExcl     uint32 = 1 << 2 // with OpenCreate: fail with CodeExist if it exists
	OpenMode     uint32 = 1 << 3 // with OpenCreate: Mode is the mode as given, 0 included (else 0 means 0644)
)

// Code is a response status.
type Code uint16

// Status codes.
const (
	CodeOK           Code = 0
	CodeNotExist     Code = 1  // no such file or directory
	CodeExist        Code = 2  // file exists
	CodePath         Code = 3  // path outside the export root or malformed
	CodeServerDown   Code = 4  // a data server is unavailable
	CodeBadFrame     Code = 5  // malformed frame; the connection is closed
	CodeTooLarge     Code = 6  // frame larger than the maximum; the connection is closed
	CodeBadHandle    Code = 7  // unknown or closed file handle
	CodeBadArgument  Code = 8  // invalid argument (negative offset, ...)
	CodeShutdown     Code = 9  // the daemon is shutting down
	CodeIO           Code = 10 // other I/O error
	CodeIsDir        Code = 11 // is a directory
	CodeNotDir       Code = 12 // not a directory
	CodeNotEmpty     Code = 13 // directory not empty
	CodeNoHello      Code = 14 // request before hello
	CodeNotSupported Code = 15 // the backend does not support the operation
	CodeCrossDevice  Code = 16 // rename or link across file systems
	CodePermission   Code = 17 // permission denied by the backend
	CodeNoSpace      Code = 18 // no space left on the backend (or quota exceeded)
	CodeNameTooLong  Code = 19 // a name longer than the backend's file system allows
	CodeAuth         Code = 20 // the forwarder requires authentication, or it failed; the connection is closed
	CodeLocked       Code = 21 // a conflicting lock is held (EAGAIN); version 4
	CodeInterrupted  Code = 22 // a lock wait was cancelled (EINTR); version 4
)

var codeNames = map[Code]string{
	CodeOK: "ok", CodeNotExist: "not exist", CodeExist: "exists", CodePath: "bad path",
	CodeServerDown: "data server down", CodeBadFrame: "bad frame", CodeTooLarge: "frame too large",
	CodeBadHandle: "bad handle", CodeBadArgument: "bad argument", CodeShutdown: "shutting down",
	CodeIO: "i/o error", CodeIsDir: "is a directory", CodeNotDir: "not a directory",
	CodeNotEmpty: "directory not empty", CodeNoHello: "no hello", CodeNotSupported: "not supported",
	CodeCrossDevice: "cross-device link", CodePermission: "permission denied", CodeNoSpace: "no space left",
	CodeNameTooLong: "file name too long", CodeAuth: "authentication required",
	CodeLocked: "locked", CodeInterrupted: "interrupted",
}

// String names the code.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code(%d)", uint16(c))
}

// Errors of the decoder.
var (
	ErrBadMagic   = errors.New("fwdproto: bad magic")
	ErrBadVersion = errors.New("fwdproto: unsupported version")
	ErrTooLarge   = errors.New("fwdproto: frame too large")
	ErrShort      = errors.New("fwdproto: frame too short")
	ErrMalformed  = errors.New("fwdproto: malformed payload")
	ErrBadOp      = errors.New("fwdproto: unknown operation")
)

// Error is a non-OK response status carried as a Go error.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "fwd: " + e.Code.String()
	}
	return "fwd: " + e.Code.String() + ": " + e.Msg
}

// Is makes errors.Is(err, fs.ErrNotExist) and fs.ErrExist work on remote errors.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == CodeNotExist
	case fs.ErrExist:
		return e.Code == CodeExist
	case fs.ErrPermission:
		return e.Code == CodePath
	}
	return false
}

// Header is a decoded frame header.
type Header struct {
	Type uint8 // Op, | RespFlag on responses
	ID   uint64
}

// Op returns the header's operation without the response flag.
func (h Header) Op() Op { return Op(h.Type &^ RespFlag) }

// IsResponse reports whether the frame is a response.
func (h Header) IsResponse() bool { return h.Type&RespFlag != 0 }

// PutHeader writes a frame header for a payload of n bytes into b[:HeaderSize].
func PutHeader(b []byte, typ uint8, id uint64, n int) {
	binary.BigEndian.PutUint32(b[0:], uint32(HeaderSize-4+n))
	binary.BigEndian.PutUint16(b[4:], Magic)
	b[6] = OpVersion(Op(typ &^ RespFlag))
	b[7] = typ
	binary.BigEndian.PutUint64(b[8:], id)
}

// ParseHeader checks and decodes a frame header and returns the payload length.
// maxFrame bounds the whole frame (header included).
func ParseHeader(b []byte, maxFrame int) (Header, int, error) {
	if len(b) < HeaderSize {
		return Header{}, 0, ErrShort
	}
	n := int(binary.BigEndian.Uint32(b[0:]))
	if n < HeaderSize-4 {
		return Header{}, 0, fmt.Errorf("%w: length %d", ErrShort, n)
	}
	if n+4 > maxFrame {
		return Header{}, 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n+4, maxFrame)
	}
	if m := binary.BigEndian.Uint16(b[4:]); m != Magic {
		return Header{}, 0, fmt.Errorf("%w: %#04x", ErrBadMagic, m)
	}
	if b[6] < MinVersion || b[6] > Version {
		return Header{}, 0, fmt.Errorf("%w: %d (this peer speaks %d to %d)", ErrBadVersion, b[6], MinVersion, Version)
	}
	h := Header{Type: b[7], ID: binary.BigEndian.Uint64(b[8:])}
	if !h.Op().Valid() || OpVersion(h.Op()) > b[6] {
		return h, 0, fmt.Errorf("%w: %d in a version %d frame", ErrBadOp, b[7], b[6])
	}
	return h, n - (HeaderSize - 4), nil
}

// Reader reads frames from a byte stream. It keeps no state across frames
// other than the buffered reader, so a frame may arrive in any number of
// pieces. Not safe for concurrent use.
type Reader struct {
	r        *bufio.Reader
	maxFrame int
	hdr      [HeaderSize]byte
	// Alloc returns a buffer of n bytes for a payload; nil uses make. The
	// payload is owned by the caller of ReadFrame.
	Alloc func(n int) []byte
}

// NewReader returns a Reader accepting frames up to maxFrame bytes (<= 0:
// DefaultMaxFrame).
func NewReader(r io.Reader, maxFrame int) *Reader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	// A small buffer: payloads larger than it are read straight into their
	// own buffer by the kernel, without a copy through this one.
	return &Reader{r: bufio.NewReaderSize(r, 4<<10), maxFrame: maxFrame}
}

// ReadFrame reads one frame and returns its header and payload. A header
// error (ErrBadMagic, ErrTooLarge, ...) leaves the stream unusable: the
// caller replies with an error and closes the connection. io.EOF means the
// peer closed cleanly between frames; io.ErrUnexpectedEOF a frame was cut.
func (r *Reader) ReadFrame() (Header, []byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return Header{}, nil, err
	}
	h, n, err := ParseHeader(r.hdr[:], r.maxFrame)
	if err != nil {
		return h, nil, err
	}
	var p []byte
	if r.Alloc != nil {
		p = r.Alloc(n)[:n]
	} else {
		p = make([]byte, n)
	}
	if _, err := io.ReadFull(r.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, err
	}
	return h, p, nil
}

// FileInfo is file metadata on the wire.
type FileInfo struct {
	Name    string
	Size    int64
	Mode    fs.FileMode // permission and type bits (fs.ModeDir, fs.ModeSymlink)
	ModTime time.Time
	IsDir   bool
	// As stat(2) has them; zero where the backend does not know.
	Atime, Ctime time.Time
	Blocks       int64 // 512-byte blocks allocated
	Ino          uint64
	Nlink        uint32
	UID, GID     uint32
	Rdev         uint64 // device number of a block or character device
}

// Msg is any request or response, with the fields its operation uses (see
// docs/protocol.md for which). Data aliases the frame buffer after Decode.
type Msg struct {
	Op       Op
	ID       uint64
	Response bool

	// Responses.
	Code Code
	Err  string // message of a non-OK response

	// Requests.
	ClientID uint32 // hello
	Name     string // hello: client name
	Path     string // open, stat, unlink, truncate, mkdir, readdir, rename, link, symlink, readlink, setattr, mknod
	Path2    string // rename, link: the new name; symlink: the target; readlink response: the target
	Flags    uint32 // open; setattr: Set* bits
	UID, GID uint32 // setattr
	Atime    int64  // setattr: Unix ns
	Mtime    int64  // setattr: Unix ns
	Mode     uint32 // open, mkdir: permission bits; mknod: Unix mode, type included
	Rdev     uint64 // mknod: device number
	Handle   uint64 // close, read, write, fsync; open response
	Offset   int64  // read, write
	Length   int64  // read: bytes wanted; truncate: new size; shm: region size; read-shm, write-shm: bytes; ring: entries
	Process  uint32 // read, write: the calling process (for pattern detection); job: the process bound
	ShmOff   uint64 // read-shm, write-shm: where the data is in the shared region; ring: where the rings are

	Auth Auth     // auth request and response
	Lock LockArgs // lock, getlk: the lock asked for; getlk response: the conflicting lock
	Job  string   // job: the job id bound to Process ("": none)

	MaxFrame uint32 // hello response: largest frame the daemon accepts, header included
	Servers  uint32 // hello response: data servers behind the daemon

	Data    []byte     // write request, read response
	N       int64      // write, write-shm response: bytes written; read-shm response: bytes read
	Info    FileInfo   // stat and open responses
	Entries []FileInfo // readdir response
	FS      FS         // statfs response
}

// Type returns the frame type byte of m.
func (m *Msg) Type() uint8 {
	if m.Response {
		return uint8(m.Op) | RespFlag
	}
	return uint8(m.Op)
}

// encoder appends big-endian values.
type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *enc) str(s string) {
	e.u16(uint16(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) info(fi FileInfo) {
	e.str(fi.Name)
	e.u64(uint64(fi.Size))
	e.u32(uint32(fi.Mode))
	e.time(fi.ModTime)
	if fi.IsDir {
		e.u8(1)
	} else {
		e.u8(0)
	}
	e.time(fi.Atime)
	e.time(fi.Ctime)
	e.u64(uint64(fi.Blocks))
	e.u64(fi.Ino)
	e.u32(fi.Nlink)
	e.u32(fi.UID)
	e.u32(fi.GID)
	e.u64(fi.Rdev)
}

// time encodes t as Unix ns, 0 for the zero time.
func (e *enc) time(t time.Time) {
	ns := int64(0)
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	e.u64(uint64(ns))
}

// AppendFixed appends the encoded frame of m to b, header included, except
// for m.Data of a write request or a read response, which the caller sends
// right after (so large payloads are not copied). The header's length counts
// len(m.Data). Strings longer than 65535 bytes are truncated by the caller's
// validation (paths are limited to MaxPath).
func AppendFixed(b []byte, m *Msg) []byte {
	start := len(b)
	b = append(b, make([]byte, HeaderSize)...)
	e := enc{b}
	if m.Response {
		e.u16(uint16(m.Code))
		if m.Code != CodeOK {
			e.str(m.Err)
			PutHeader(e.b[start:], m.Type(), m.ID, len(e.b)-start-HeaderSize)
			return e.b
		}
		switch m.Op {
		case OpClose, OpFsync, OpUnlink, OpTruncate, OpMkdir, OpShm, OpRing, OpWake,
			OpRename, OpLink, OpSymlink, OpSetattr, OpMknod:
		case OpReadlink:
			e.str(m.Path2)
		case OpStatfs:
			e.u32(m.FS.BlockSize)
			e.u64(m.FS.Blocks)
			e.u64(m.FS.Free)
			e.u64(m.FS.Avail)
			e.u64(m.FS.Files)
			e.u64(m.FS.FreeFiles)
			e.u32(m.FS.NameLen)
		case OpHello:
			e.u32(m.MaxFrame)
			e.u32(m.Servers)
		case OpAuth:
			e.u8(m.Auth.Version)
			e.u8(m.Auth.Step)
			if m.Auth.Step == AuthChallenge {
				e.b = append(e.b, m.Auth.Nonce[:]...)
				e.b = append(e.b, m.Auth.Proof[:]...)
			}
		case OpOpen:
			e.u64(m.Handle)
			e.info(m.Info)
		case OpStat:
			e.info(m.Info)
		case OpWrite, OpReadShm, OpWriteShm:
			e.u64(uint64(m.N))
		case OpReadDir:
			e.u32(uint32(len(m.Entries)))
			for _, fi := range m.Entries {
				e.info(fi)
			}
		case OpRead:
			// data follows
		default:
			appendV4(&e, m)
		}
	} else {
		switch m.Op {
		case OpHello:
			e.u32(m.ClientID)
			e.str(m.Name)
		case OpAuth:
			e.u8(m.Auth.Version)
			e.u8(m.Auth.Step)
			if m.Auth.Step == AuthChallenge {
				e.b = append(e.b, m.Auth.Nonce[:]...)
			} else {
				e.b = append(e.b, m.Auth.Proof[:]...)
			}
		case OpOpen:
			e.u32(m.Flags)
			e.u32(m.Mode)
			e.str(m.Path)
		case OpClose, OpFsync:
			e.u64(m.Handle)
		case OpRead:
			e.u64(m.Handle)
			e.u64(uint64(m.Offset))
			e.u64(uint64(m.Length))
			e.u32(m.Process)
		case OpWrite:
			e.u64(m.Handle)
			e.u64(uint64(m.Offset))
			e.u32(m.Process)
		case OpShm:
			e.u64(uint64(m.Length))
		case OpRing:
			e.u64(m.ShmOff)
			e.u64(uint64(m.Length))
		case OpReadShm, OpWriteShm:
			e.u64(m.Handle)
			e.u64(uint64(m.Offset))
			e.u64(uint64(m.Length))
			e.u32(m.Process)
			e.u64(m.ShmOff)
		case OpStat, OpUnlink, OpReadDir, OpReadlink, OpStatfs:
			e.str(m.Path)
		case OpRename, OpLink, OpSymlink:
			e.str(m.Path)
			e.str(m.Path2)
		case OpSetattr:
			e.u32(m.Flags)
			e.u32(m.Mode)
			e.u32(m.UID)
			e.u32(m.GID)
			e.u64(uint64(m.Atime))
			e.u64(uint64(m.Mtime))
			e.str(m.Path)
		case OpTruncate:
			e.u64(uint64(m.Length))
			e.str(m.Path)
		case OpMkdir:
			e.u32(m.Mode)
			e.str(m.Path)
		case OpMknod:
			e.u32(m.Mode)
			e.u64(m.Rdev)
			e.str(m.Path)
		default:
			appendV4(&e, m)
		}
	}
	n := len(e.b) - start - HeaderSize
	if carriesData(m) {
		n += len(m.Data)
	}
	PutHeader(e.b[start:], m.Type(), m.ID, n)
	return e.b
}

func carriesData(m *Msg) bool {
	return (m.Op == OpWrite && !m.Response) || (m.Op == OpRead && m.Response && m.Code == CodeOK)
}

// Append appends the complete frame of m (data included) to b.
func Append(b []byte, m *Msg) []byte {
	b = AppendFixed(b, m)
	if carriesData(m) {
		b = append(b, m.Data...)
	}
	return b
}

type dec struct {
	b   []byte
	err bool
}

func (d *dec) need(n int) bool {
	if d.err || len(d.b) < n {
		d.err = true
		return false
	}
	return true
}

// bytes fills dst from the payload.
func (d *dec) bytes(dst []byte) {
	if d.need(len(dst)) {
		copy(dst, d.b)
		d.b = d.b[len(dst):]
	}
}
func (d *dec) u8() uint8 {
	if !d.need(1) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}
func (d *dec) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}
func (d *dec) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}
func (d *dec) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}
func (d *dec) i64() int64 {
	v := d.u64()
	if v > math.MaxInt64 {
		d.err = true
		return 0
	}
	return int64(v)
}
func (d *dec) str(max int) string {
	n := int(d.u16())
	if n > max || !d.need(n) {
		d.err = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
func (d *dec) info() FileInfo {
	var fi FileInfo
	fi.Name = d.str(MaxPath)
	fi.Size = d.i64()
	fi.Mode = fs.FileMode(d.u32())
	fi.ModTime = d.time()
	switch d.u8() {
	case 0:
	case 1:
		fi.IsDir = true
	default:
		d.err = true
	}
	fi.Atime = d.time()
	fi.Ctime = d.time()
	fi.Blocks = d.i64()
	fi.Ino = d.u64()
	fi.Nlink = d.u32()
	fi.UID = d.u32()
	fi.GID = d.u32()
	fi.Rdev = d.u64()
	return fi
}

// time decodes Unix ns, 0 being the zero time.
func (d *dec) time() time.Time {
	if ns := int64(d.u64()); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Decode decodes the payload p of a frame with header h into m. m.Data
// aliases p. Trailing bytes after the fields (other than data) are an error.
func Decode(h Header, p []byte, m *Msg) error {
	*m = Msg{Op: h.Op(), ID: h.ID, Response: h.IsResponse()}
	if !m.Op.Valid() {
		return fmt.Errorf("%w: %d", ErrBadOp, h.Type)
	}
	d := dec{b: p}
	if m.Response {
		m.Code = Code(d.u16())
		if m.Code != CodeOK {
			m.Err = d.str(math.MaxUint16)
			return d.done()
		}
		switch m.Op {
		case OpHello:
			m.MaxFrame = d.u32()
			m.Servers = d.u32()
		case OpAuth:
			m.Auth.Version = d.u8()
			m.Auth.Step = d.u8()
			if m.Auth.Step == AuthChallenge {
				d.bytes(m.Auth.Nonce[:])
				d.bytes(m.Auth.Proof[:])
			}
		case OpOpen:
			m.Handle = d.u64()
			m.Info = d.info()
		case OpStat:
			m.Info = d.info()
		case OpReadlink:
			m.Path2 = d.str(MaxPath)
		case OpStatfs:
			m.FS = FS{BlockSize: d.u32(), Blocks: d.u64(), Free: d.u64(), Avail: d.u64(),
				Files: d.u64(), FreeFiles: d.u64(), NameLen: d.u32()}
		case OpWrite, OpReadShm, OpWriteShm:
			m.N = d.i64()
		case OpReadDir:
			n := d.u32()
			if n > MaxEntries {
				return fmt.Errorf("%w: %d directory entries", ErrMalformed, n)
			}
			for i := uint32(0); i < n && !d.err; i++ {
				m.Entries = append(m.Entries, d.info())
			}
		case OpRead:
			m.Data = d.b
			d.b = nil
		default:
			decodeV4(&d, m)
		}
		return d.done()
	}
	switch m.Op {
	case OpHello:
		m.ClientID = d.u32()
		m.Name = d.str(255)
	case OpAuth:
		m.Auth.Version = d.u8()
		m.Auth.Step = d.u8()
		if m.Auth.Step == AuthChallenge {
			d.bytes(m.Auth.Nonce[:])
		} else {
			d.bytes(m.Auth.Proof[:])
		}
	case OpOpen:
		m.Flags = d.u32()
		m.Mode = d.u32()
		m.Path = d.str(MaxPath)
	case OpClose, OpFsync:
		m.Handle = d.u64()
	case OpRead:
		m.Handle = d.u64()
		m.Offset = d.i64()
		m.Length = d.i64()
		m.Process = d.u32()
	case OpWrite:
		m.Handle = d.u64()
		m.Offset = d.i64()
		m.Process = d.u32()
		if !d.err {
			m.Data = d.b
			d.b = nil
		}
	case OpShm:
		m.Length = d.i64()
	case OpRing:
		m.ShmOff = d.u64()
		m.Length = d.i64()
	case OpReadShm, OpWriteShm:
		m.Handle = d.u64()
		m.Offset = d.i64()
		m.Length = d.i64()
		m.Process = d.u32()
		m.ShmOff = d.u64()
	case OpStat, OpUnlink, OpReadDir, OpReadlink, OpStatfs:
		m.Path = d.str(MaxPath)
	case OpRename, OpLink, OpSymlink:
		m.Path = d.str(MaxPath)
		m.Path2 = d.str(MaxPath)
	case OpSetattr:
		m.Flags = d.u32()
		m.Mode = d.u32()
		m.UID = d.u32()
		m.GID = d.u32()
		m.Atime = int64(d.u64())
		m.Mtime = int64(d.u64())
		m.Path = d.str(MaxPath)
	case OpTruncate:
		m.Length = d.i64()
		m.Path = d.str(MaxPath)
	case OpMkdir:
		m.Mode = d.u32()
		m.Path = d.str(MaxPath)
	case OpMknod:
		m.Mode = d.u32()
		m.Rdev = d.u64()
		m.Path = d.str(MaxPath)
	default:
		decodeV4(&d, m)
	}
	return d.done()
}

func (d *dec) done() error {
	if d.err {
		return fmt.Errorf("%w: truncated or out-of-range field", ErrMalformed)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return nil
}
