package pfsproto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"

	"github.com/adaptio/adaptio/backend"
)

// Limits.
const (
	MaxData  = 16 << 20 // largest read or write payload, bytes
	MaxPath  = 4096     // longest path, bytes
	MaxBody  = MaxData + RequestFixed + MaxPath
	LenBytes = 4 // frame length prefix

	RequestFixed  = 8 + 1 + 8 + 8 + 2 // request body bytes before the path
	ResponseFixed = 8 + 1 + 8         // response body bytes before the data
)

// Errors.
var (
	ErrFrameTooLarge = errors.New("pfsproto: frame too large")
	ErrMalformed     = errors.New("pfsproto: malformed message")
)

// Op is a request operation.
type Op uint8

// Operations.
const (
	OpPing Op = iota + 1
	OpRead
	OpWrite
	OpCreate
	OpStat
	OpTruncate
	OpUnlink
	OpMkdir
	OpReadDir
	OpFsync
	// OpHello names the I/O node behind a connection (a = its index), for
	// the data-server model's cost of interleaving I/O nodes, and the
	// client's protocol version (b = Version). Sent first on a connection;
	// a connection without one is node -1, version 0.
	OpHello
	opEnd
)

var opNames = [...]string{"", "ping", "read", "write", "create", "stat", "truncate", "unlink", "mkdir", "readdir", "fsync", "hello"}

func (o Op) String() string {
	if o > 0 && o < opEnd {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Status is a response status.
type Status uint8

// Statuses; each but StatusOK and StatusError maps to a backend sentinel or
// an errno.
const (
	StatusOK Status = iota
	StatusNotExist
	StatusExist
	StatusPath
	StatusBadArgument
	StatusError
	// Version 1: sent only on connections whose hello announced version
	// 1 or later (StatusFor); older peers get StatusError instead.
	StatusNoSpace // the server's file system is full (ENOSPC)
	StatusQuota   // the server's disk quota is exhausted (EDQUOT)
	statusEnd
)

// Version is the protocol version this package speaks, announced in a
// hello's b. Version 0 (a hello with b = 0, or none) knows the statuses up
// to StatusError; version 1 adds StatusNoSpace and StatusQuota.
const Version = 1

// StatusFor is s as a peer of protocol version v may receive it: a status
// v does not know becomes StatusError (its message still says what
// happened), so older clients keep working.
func StatusFor(s Status, v int64) Status {
	if v < 1 && s > StatusError {
		return StatusError
	}
	return s
}

// StatusOf classifies an error for the wire.
func StatusOf(err error) Status {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, backend.ErrPath):
		return StatusPath
	case errors.Is(err, fs.ErrNotExist):
		return StatusNotExist
	case errors.Is(err, fs.ErrExist):
		return StatusExist
	case errors.Is(err, backend.ErrBadArgument):
		return StatusBadArgument
	case errors.Is(err, syscall.ENOSPC):
		return StatusNoSpace
	case errors.Is(err, syscall.EDQUOT):
		return StatusQuota
	}
	return StatusError
}

// Sentinel is the backend error or errno a status stands for (nil for
// StatusOK and StatusError).
func (s Status) Sentinel() error {
	switch s {
	case StatusNotExist:
		return backend.ErrNotExist
	case StatusExist:
		return backend.ErrExist
	case StatusPath:
		return backend.ErrPath
	case StatusBadArgument:
		return backend.ErrBadArgument
	case StatusNoSpace:
		return syscall.ENOSPC
	case StatusQuota:
		return syscall.EDQUOT
	}
	return nil
}

// Request is a decoded request. Data aliases the frame it came from.
type Request struct {
	ID   uint64
	Op   Op
	Path string
	A, B int64
	Data []byte
}

// Response is a decoded response. Data aliases the frame it came from.
type Response struct {
	ID     uint64
	Status Status
	A      int64
	Data   []byte
}

// AppendRequest appends the frame of r to dst up to and excluding r.Data,
// whose bytes must follow on the connection (so large writes need no copy).
func AppendRequest(dst []byte, r *Request) ([]byte, error) {
	if len(r.Path) > MaxPath || len(r.Data) > MaxData {
		return dst, fmt.Errorf("%w: path %d bytes, data %d bytes", ErrFrameTooLarge, len(r.Path), len(r.Data))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(RequestFixed+len(r.Path)+len(r.Data)))
	dst = binary.BigEndian.AppendUint64(dst, r.ID)
	dst = append(dst, byte(r.Op))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.A))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.B))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.Path)))
	return append(dst, r.Path...), nil
}

// DecodeRequest decodes a request body.
func DecodeRequest(body []byte) (Request, error) {
	if len(body) < RequestFixed {
		return Request{}, fmt.Errorf("%w: request body of %d bytes", ErrMalformed, len(body))
	}
	r := Request{
		ID: binary.BigEndian.Uint64(body),
		Op: Op(body[8]),
		A:  int64(binary.BigEndian.Uint64(body[9:])),
		B:  int64(binary.BigEndian.Uint64(body[17:])),
	}
	pl := int(binary.BigEndian.Uint16(body[25:]))
	rest := body[RequestFixed:]
	if pl > len(rest) || pl > MaxPath {
		return Request{}, fmt.Errorf("%w: path of %d bytes in %d", ErrMalformed, pl, len(rest))
	}
	if r.Op == 0 || r.Op >= opEnd {
		return Request{}, fmt.Errorf("%w: unknown operation %d", ErrMalformed, body[8])
	}
	r.Path = string(rest[:pl])
	if len(rest) > pl {
		r.Data = rest[pl:]
	}
	if r.Op != OpWrite && len(r.Data) > 0 {
		return Request{}, fmt.Errorf("%w: %v request with %d data bytes", ErrMalformed, r.Op, len(r.Data))
	}
	return r, nil
}

// AppendResponseHeader appends a response frame up to its data, which has
// dataLen bytes and must follow.
func AppendResponseHeader(dst []byte, id uint64, st Status, a int64, dataLen int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(ResponseFixed+dataLen))
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = append(dst, byte(st))
	return binary.BigEndian.AppendUint64(dst, uint64(a))
}

// DecodeResponseHeader decodes the first ResponseFixed bytes of a response
// body.
func DecodeResponseHeader(b []byte) (Response, error) {
	if len(b) < ResponseFixed {
		return Response{}, fmt.Errorf("%w: response body of %d bytes", ErrMalformed, len(b))
	}
	r := Response{ID: binary.BigEndian.Uint64(b), Status: Status(b[8]), A: int64(binary.BigEndian.Uint64(b[9:]))}
	if r.Status >= statusEnd {
		return Response{}, fmt.Errorf("%w: unknown status %d", ErrMalformed, b[8])
	}
	return r, nil
}

// DecodeResponse decodes a whole response body.
func DecodeResponse(body []byte) (Response, error) {
	r, err := DecodeResponseHeader(body)
	if err != nil {
		return r, err
	}
	if len(body) > ResponseFixed {
		r.Data = body[ResponseFixed:]
	}
	return r, nil
}

// AppendFileInfo appends the encoding of fi.
func AppendFileInfo(dst []byte, fi backend.FileInfo) []byte {
	name := fi.Name
	if len(name) > MaxPath {
		name = name[:MaxPath]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(name)))
	dst = append(dst, name...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(fi.Size))
	dst = binary.BigEndian.AppendUint32(dst, uint32(fi.Mode))
	dst = binary.BigEndian.AppendUint64(dst, uint64(fi.ModTime.UnixNano()))
	if fi.IsDir {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// DecodeFileInfo decodes one FileInfo and returns the bytes after it.
func DecodeFileInfo(b []byte) (backend.FileInfo, []byte, error) {
	if len(b) < 2 {
		return backend.FileInfo{}, nil, fmt.Errorf("%w: file info", ErrMalformed)
	}
	nl := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < nl+8+4+8+1 {
		return backend.FileInfo{}, nil, fmt.Errorf("%w: file info", ErrMalformed)
	}
	fi := backend.FileInfo{Name: string(b[:nl])}
	b = b[nl:]
	fi.Size = int64(binary.BigEndian.Uint64(b))
	fi.Mode = fs.FileMode(binary.BigEndian.Uint32(b[8:]))
	fi.ModTime = time.Unix(0, int64(binary.BigEndian.Uint64(b[12:])))
	fi.IsDir = b[20] != 0
	return fi, b[21:], nil
}

// AppendDir appends a directory listing.
func AppendDir(dst []byte, ents []backend.FileInfo) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(ents)))
	for _, e := range ents {
		dst = AppendFileInfo(dst, e)
	}
	return dst
}

// DecodeDir decodes a directory listing.
func DecodeDir(b []byte) ([]backend.FileInfo, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: directory listing", ErrMalformed)
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b))/23 { // each entry takes at least 23 bytes
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrMalformed, n, len(b))
	}
	out := make([]backend.FileInfo, 0, n)
	for range n {
		fi, rest, err := DecodeFileInfo(b)
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
		b = rest
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after directory listing", ErrMalformed, len(b))
	}
	return out, nil
}

// Reader reads frames from a stream.
type Reader struct {
	R   *bufio.Reader
	max int
	hdr [LenBytes]byte
}

// NewReader reads frames of at most maxBody body bytes (0: MaxBody) from r.
func NewReader(r io.Reader, maxBody int) *Reader {
	if maxBody <= 0 {
		maxBody = MaxBody
	}
	return &Reader{R: bufio.NewReaderSize(r, 64<<10), max: maxBody}
}

// Len reads the next frame's length prefix; the body's bytes follow on R.
// io.EOF means the stream ended cleanly between frames.
func (r *Reader) Len() (int, error) {
	if _, err := io.ReadFull(r.R, r.hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: truncated length prefix", ErrMalformed)
		}
		return 0, err
	}
	n := binary.BigEndian.Uint32(r.hdr[:])
	if uint64(n) > uint64(r.max) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, r.max)
	}
	return int(n), nil
}

// Next reads a whole frame body into buf (grown as needed) and returns it.
func (r *Reader) Next(buf []byte) ([]byte, error) {
	n, err := r.Len()
	if err != nil {
		return nil, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r.R, buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: truncated frame", ErrMalformed)
		}
		return nil, err
	}
	return buf, nil
}
