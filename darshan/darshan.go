// Package darshan reads Darshan I/O characterisation logs in pure Go: log
// format versions 3.00, 3.10, 3.20, 3.21 and 3.41, either byte order,
// regions compressed with zlib (one stream or several back to back),
// bzip2, or not at all. It gives the job record, the executable line and
// mount table, the record names, the records of the POSIX, MPI-IO and
// STDIO modules (counters by name, older module versions up-converted as
// darshan-util does), the Lustre layouts (LUSTRE 1 and 2) and the
// DXT_POSIX and DXT_MPIIO traces.
//
// Records are read through iterators that decompress one region as they
// go, so a log of any size is read in bounded memory (the names of the
// records are kept: one string per file the job touched).
//
// The format is the one of darshan's headers (darshan-log-format.h and the
// module headers) and of darshan-util's darshan-logutils.c.
package darshan

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// ErrFormat is wrapped by every error about a malformed log.
var ErrFormat = errors.New("darshan: malformed log")

// magic is DARSHAN_MAGIC_NR, in the log's byte order.
const magic = 6567223

// Compression of a log's regions.
type Compression uint8

const (
	Zlib Compression = iota
	Bzip2
	None
)

func (c Compression) String() string {
	switch c {
	case Zlib:
		return "ZLIB"
	case Bzip2:
		return "BZIP2"
	case None:
		return "NONE"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// Module identifies a Darshan module (the 3.41 numbering; older logs are
// renumbered as darshan-util does).
type Module int

// The modules, in the order of darshan-log-format.h.
const (
	Null Module = iota
	POSIX
	MPIIO
	H5F
	H5D
	PnetCDFFile
	PnetCDFVar
	BGQ
	Lustre
	STDIO
	DXTPOSIX
	DXTMPIIO
	MDHIM
	APXC
	APMPI
	Heatmap
	DFS
	DAOS
	numKnownModules
)

// MaxModules is the size of a header's module table (3.41; 16 before).
const MaxModules = 64

var moduleNames = [...]string{"NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
	"LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP", "DFS", "DAOS"}

func (m Module) String() string {
	if m >= 0 && int(m) < len(moduleNames) {
		return moduleNames[m]
	}
	return fmt.Sprintf("module(%d)", int(m))
}

// region is where a region lies in the file.
type region struct{ off, len uint64 }

// Job is the job record.
type Job struct {
	UID   int64
	Start time.Time // start_time (with nanoseconds from 3.41)
	End   time.Time
	Procs int64
	JobID int64
	// Metadata holds the job's key=value metadata lines, in log order
	// (a key may repeat; the value is everything after the first '=').
	Metadata []KeyValue
}

// KeyValue is one metadata line of the job record.
type KeyValue struct{ Key, Value string }

// Mount is one mount table entry.
type Mount struct {
	Path, Type string
}

// Log is an open Darshan log.
type Log struct {
	r       io.ReaderAt
	size    int64
	order   binary.ByteOrder
	major   int
	minor   int
	Version string // format version, e.g. "3.41"
	// Swapped is true for a log written on a machine of the other byte
	// order (big-endian here): its values are swapped as they are read.
	Swapped     bool
	Compression Compression
	// Partial has bit m set when module m ran out of memory and its
	// records are incomplete (renumbered to 3.41 modules).
	Partial uint64
	Job     Job
	Exe     string
	// ExeComplete is false when the executable line fills the job record
	// without its closing newline (cut short: darshan-parser prints it
	// empty).
	ExeComplete bool
	Mounts      []Mount // longest path first, as darshan-util sorts them
	// ModuleVersion[m] is module m's record format version in this log
	// (0: the module has no data).
	ModuleVersion [MaxModules]uint32

	job, names region
	mods       [MaxModules]region
	nameOf     map[uint64]string
}

// Open opens the log file path. Close closes it.
func Open(path string) (*Log, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	l, err := NewLog(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, f, nil
}

// NewLog reads a log's header, job record, mount table and names from r
// (size bytes).
func NewLog(r io.ReaderAt, size int64) (*Log, error) {
	l := &Log{r: r, size: size}
	if err := l.readHeader(); err != nil {
		return nil, err
	}
	if err := l.readJob(); err != nil {
		return nil, err
	}
	if err := l.readNames(); err != nil {
		return nil, err
	}
	return l, nil
}

func bad(where string, off int64, format string, a ...any) error {
	return fmt.Errorf("%w: %s at byte %d: %s", ErrFormat, where, off, fmt.Sprintf(format, a...))
}

// readHeader decodes the uncompressed header at the start of the file.
func (l *Log) readHeader() error {
	var ver [8]byte
	if _, err := l.r.ReadAt(ver[:], 0); err != nil {
		return bad("header", 0, "cannot read the version string: %v", err)
	}
	l.Version = string(bytes.TrimRight(ver[:], "\x00"))
	if _, err := fmt.Sscanf(l.Version, "%d.%d", &l.major, &l.minor); err != nil {
		return bad("header", 0, "version string %q is not MAJOR.MINOR", l.Version)
	}
	if l.major != 3 || !slices.Contains([]int{0, 10, 20, 21, 41}, l.minor) {
		return bad("header", 0, "format version %s: this reader knows 3.00, 3.10, 3.20, 3.21 and 3.41", l.Version)
	}
	// Field offsets of struct darshan_header (natural C alignment).
	mods, partialOff, partialSize, nameOff := MaxModules, 24, 8, 32
	if l.minor < 41 {
		mods, partialOff, partialSize, nameOff = 16, 20, 4, 24
	}
	size := nameOff + 16*(1+mods) + 4*mods
	size = (size + 7) &^ 7
	h := make([]byte, size)
	if n, err := l.r.ReadAt(h, 0); n < size {
		return bad("header", 0, "%d of its %d bytes: %v", n, size, err)
	}
	switch {
	case binary.LittleEndian.Uint64(h[8:]) == magic:
		l.order = binary.LittleEndian
	case binary.BigEndian.Uint64(h[8:]) == magic:
		l.order = binary.BigEndian
		l.Swapped = true
	default:
		return bad("header", 8, "bad magic number %#x", binary.LittleEndian.Uint64(h[8:]))
	}
	l.Compression = Compression(h[16])
	if l.Compression > None {
		return bad("header", 16, "unknown compression type %d", h[16])
	}
	if partialSize == 8 {
		l.Partial = l.order.Uint64(h[partialOff:])
	} else {
		l.Partial = uint64(l.order.Uint32(h[partialOff:]))
	}
	rd := func(off int) region { return region{l.order.Uint64(h[off:]), l.order.Uint64(h[off+8:])} }
	l.names = rd(nameOff)
	var maps [MaxModules]region
	var vers [MaxModules]uint32
	for i := range mods {
		maps[i] = rd(nameOff + 16*(1+i))
		vers[i] = l.order.Uint32(h[nameOff+16*(1+mods)+4*i:])
	}
	// Renumber to the 3.41 module ids: H5D came in 3.20, PNETCDF_VAR in 3.41.
	insert := func(at Module) {
		copy(maps[at+1:], maps[at:MaxModules-1])
		copy(vers[at+1:], vers[at:MaxModules-1])
		maps[at], vers[at] = region{}, 0
		low := l.Partial & (1<<at - 1)
		l.Partial = low | (l.Partial>>at)<<(at+1)
	}
	if l.minor < 20 {
		insert(H5D)
	}
	if l.minor < 41 {
		insert(PnetCDFVar)
	}
	l.mods, l.ModuleVersion = maps, vers
	// The job region runs from the end of the header to the next region.
	l.job.off = uint64(size)
	next := uint64(l.size)
	for _, m := range append([]region{l.names}, maps[:]...) {
		if m.off > l.job.off && m.off < next {
			next = m.off
		}
	}
	l.job.len = next - l.job.off
	for i, m := range append([]region{l.names}, maps[:]...) {
		if m.len > 0 && (m.off < l.job.off || m.off > uint64(l.size) || m.len > uint64(l.size)-m.off) {
			what := "name region"
			if i > 0 {
				what = Module(i-1).String() + " region"
			}
			return bad("header", 0, "%s [%d, +%d) lies outside the file (%d bytes)", what, m.off, m.len, l.size)
		}
	}
	return nil
}

// open returns a reader of region reg's decompressed bytes.
func (l *Log) open(reg region) io.Reader {
	sec := io.NewSectionReader(l.r, int64(reg.off), int64(reg.len))
	switch l.Compression {
	case None:
		return sec
	case Bzip2:
		return bzip2.NewReader(bufio.NewReader(sec))
	}
	return &multiZlib{src: bufio.NewReader(sec)}
}

// multiZlib reads zlib streams back to back (Darshan writes one per rank
// into a shared region).
type multiZlib struct {
	src *bufio.Reader
	z   io.ReadCloser
	err error
}

func (m *multiZlib) Read(p []byte) (int, error) {
	for m.err == nil {
		if m.z == nil {
			if _, err := m.src.Peek(1); err != nil {
				m.err = io.EOF // no further stream
				break
			}
			if m.z, m.err = zlib.NewReader(m.src); m.err != nil {
				break
			}
		}
		n, err := m.z.Read(p)
		if err == io.EOF {
			m.z = nil
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, m.err
}

// regionName names a region for errors.
func regionName(reg string, l *Log) string { return reg + " region (log " + l.Version + ")" }

// readJob decodes the job record, the executable line and the mounts.
func (l *Log) readJob() error {
	if l.job.len == 0 {
		return bad("job region", int64(l.job.off), "empty")
	}
	buf, err := io.ReadAll(io.LimitReader(l.open(l.job), 4096))
	if err != nil {
		return bad(regionName("job", l), int64(l.job.off), "%v", err)
	}
	const metaLen = 1024
	fixed := 5 * 8
	if l.minor >= 41 {
		fixed = 7 * 8
	}
	if len(buf) < fixed+metaLen {
		return bad(regionName("job", l), int64(l.job.off), "%d bytes, want at least %d", len(buf), fixed+metaLen)
	}
	i64 := func(k int) int64 { return int64(l.order.Uint64(buf[8*k:])) }
	j := &l.Job
	if l.minor >= 41 {
		j.UID, j.Start, j.End, j.Procs, j.JobID = i64(0), time.Unix(i64(1), i64(2)), time.Unix(i64(3), i64(4)), i64(5), i64(6)
	} else {
		j.UID, j.Start, j.End, j.Procs, j.JobID = i64(0), time.Unix(i64(1), 0), time.Unix(i64(2), 0), i64(3), i64(4)
	}
	meta := cString(buf[fixed : fixed+metaLen])
	for line := range strings.SplitSeq(meta, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			j.Metadata = append(j.Metadata, KeyValue{k, v})
		}
	}
	rest := cString(buf[fixed+metaLen:])
	exe, mounts, ok := strings.Cut(rest, "\n")
	l.Exe, l.ExeComplete = exe, ok
	for line := range strings.SplitSeq(mounts, "\n") {
		if line == "" {
			continue
		}
		typ, path, ok := strings.Cut(line, "\t")
		if !ok {
			return bad(regionName("job", l), int64(l.job.off), "mount table line %q has no tab", line)
		}
		l.Mounts = append(l.Mounts, Mount{Path: path, Type: typ})
	}
	slices.SortStableFunc(l.Mounts, func(a, b Mount) int { return len(b.Path) - len(a.Path) })
	return nil
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readNames decodes the name records: (id, NUL-terminated name), or from
// 3.00 (id, uint32 length, name).
func (l *Log) readNames() error {
	l.nameOf = map[uint64]string{}
	if l.names.len == 0 {
		return nil
	}
	br := bufio.NewReaderSize(l.open(l.names), 64<<10) // a name is a path: at most 64 KiB
	var id [8]byte
	var off int64
	for {
		if _, err := io.ReadFull(br, id[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return bad(regionName("name", l), off, "record id cut short: %v", err)
		}
		rid := l.order.Uint64(id[:])
		var name string
		if l.minor == 0 {
			var n [4]byte
			if _, err := io.ReadFull(br, n[:]); err != nil {
				return bad(regionName("name", l), off, "name length cut short: %v", err)
			}
			size := l.order.Uint32(n[:])
			if size > 1<<16 {
				return bad(regionName("name", l), off, "name of %d bytes", size)
			}
			b := make([]byte, size)
			if _, err := io.ReadFull(br, b); err != nil {
				return bad(regionName("name", l), off, "name cut short: %v", err)
			}
			name = string(b)
			off += 12 + int64(size)
		} else {
			b, err := br.ReadSlice(0)
			if err == bufio.ErrBufferFull {
				return bad(regionName("name", l), off, "name of record %d longer than %d bytes", rid, br.Size())
			}
			if err != nil {
				return bad(regionName("name", l), off, "name without its terminating NUL: %v", err)
			}
			name = string(b[:len(b)-1])
			off += 8 + int64(len(b))
		}
		// A later non-empty name replaces an empty one, as darshan-util keeps it.
		if old, ok := l.nameOf[rid]; !ok || old == "" {
			l.nameOf[rid] = name
		}
	}
}

// Name is the name of record id ("" if the log has none).
func (l *Log) Name(id uint64) string { return l.nameOf[id] }

// Names returns the number of named records.
func (l *Log) Names() int { return len(l.nameOf) }

// RegionSizes are the compressed sizes of the log's regions, in bytes.
type RegionSizes struct {
	Job, Names uint64
	Modules    [MaxModules]uint64
}

// Sizes returns the compressed size of every region.
func (l *Log) Sizes() RegionSizes {
	s := RegionSizes{Job: l.job.len, Names: l.names.len}
	for i, m := range l.mods {
		s.Modules[i] = m.len
	}
	return s
}

// HasModule reports whether module m has data in the log.
func (l *Log) HasModule(m Module) bool {
	return m >= 0 && int(m) < MaxModules && l.mods[m].len > 0
}

// PartialModule reports whether module m's records are incomplete (it
// ran out of memory in the job).
func (l *Log) PartialModule(m Module) bool { return l.Partial&(1<<uint(m)) != 0 }

// Modules lists the modules with data, in id order.
func (l *Log) Modules() []Module {
	var out []Module
	for m := range Module(MaxModules) {
		if l.HasModule(m) {
			out = append(out, m)
		}
	}
	return out
}

// Mount returns the mount point and file system type of path: the
// longest mount path that prefixes it ("UNKNOWN" if none).
func (l *Log) Mount(path string) (point, fsType string) {
	for _, m := range l.Mounts {
		if strings.HasPrefix(path, m.Path) {
			return m.Path, m.Type
		}
	}
	return "UNKNOWN", "UNKNOWN"
}
