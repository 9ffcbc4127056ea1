// Package layout is PVFS-style round-robin striping, shared by every part
// that places file bytes on data servers: the POSIX backend, the emulated
// PFS's client, the simulator and sched's streams. A leaf: it imports no
// other adaptio package.
//
//	l := layout.Default(4)                        // 64 KiB stripes over 4 servers
//	first := l.FirstServer("file", 4)              // the server the file starts on
//	ps := l.Split(nil, 4, first, off, n)            // per-server pieces
//	local := l.Local(ps[0].Offset)                  // the offset in that server's object
package layout

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// ErrBadArgument is returned for an invalid layout, a range a layout
// cannot place, and a layout file that does not parse; it is also
// backend.ErrBadArgument, so either matches with errors.Is.
var ErrBadArgument = errors.New("backend: bad argument")

// Piece is the part of a file access that lands on one data server: file
// bytes [Offset, Offset+Length) are stored on Server.
type Piece struct {
	Server int
	Offset int64
	Length int64
}

// DefaultStripeSize is the stripe unit of PVFS's default layout (64 KiB),
// the setting of the experiments the project reproduces.
const DefaultStripeSize = 64 << 10

// File is the name of the per-directory layout file a POSIX backend
// reads (see Parse); the nearest one up the tree applies.
const File = ".adaptio-layout"

// Layout is a round-robin striping layout: a file's bytes are cut into
// StripeSize units dealt in turn to StripeCount data servers, like PVFS's
// "simple stripe" distribution. The zero value is not valid; see
// Default.
type Layout struct {
	StripeSize  int64 // bytes per stripe unit, > 0
	StripeCount int   // servers a file is striped over, 1 <= count <= Servers
}

// Default is the PVFS default: 64 KiB stripes over all servers.
func Default(servers int) Layout {
	return Layout{StripeSize: DefaultStripeSize, StripeCount: servers}
}

// Validate checks the layout against a backend of servers data servers.
func (l Layout) Validate(servers int) error {
	switch {
	case servers < 1:
		return fmt.Errorf("%w: %d data servers", ErrBadArgument, servers)
	case l.StripeSize <= 0:
		return fmt.Errorf("%w: stripe size %d bytes", ErrBadArgument, l.StripeSize)
	case l.StripeCount < 1 || l.StripeCount > servers:
		return fmt.Errorf("%w: stripe count %d with %d data servers", ErrBadArgument, l.StripeCount, servers)
	}
	return nil
}

// FirstServer is the server holding stripe 0 of the file named path (its
// clean name relative to the export, see rootfs.Clean), by a hash of the
// name: files start on different servers, as a PFS's metadata server
// spreads new files (PVFS and Lustre start each file's stripes at a
// varying server), so that small files and the first stripes of many files
// do not all land on one server. It is the one rule of the project: the
// POSIX backend, the emulated PFS's client and the simulator (which names
// its files as the benchmark does, see workload.Pattern.FileName) use it.
func (l Layout) FirstServer(path string, servers int) int {
	if servers <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(path))
	return int(h.Sum32() % uint32(servers))
}

// Slot is the position, 0..StripeCount-1, of server in the rotation of a
// file whose stripe 0 is on first, or -1 if the file has no stripe there.
func (l Layout) Slot(server, first, servers int) int {
	slot := (server - first + servers) % servers
	if slot >= l.StripeCount {
		return -1
	}
	return slot
}

// Split appends to dst the pieces of file bytes [off, off+n) in file order.
// Adjacent stripes on the same server (StripeCount 1) merge into one piece.
func (l Layout) Split(dst []Piece, servers, first int, off, n int64) []Piece {
	for n > 0 {
		k := off / l.StripeSize
		end := (k + 1) * l.StripeSize
		if l.StripeCount == 1 {
			end = off + n
		}
		length := min(end-off, n)
		srv := (first + int(k%int64(l.StripeCount))) % servers
		if m := len(dst); m > 0 && dst[m-1].Server == srv && dst[m-1].Offset+dst[m-1].Length == off {
			dst[m-1].Length += length
		} else {
			dst = append(dst, Piece{Server: srv, Offset: off, Length: length})
		}
		off += length
		n -= length
	}
	return dst
}

// Check reports whether file bytes [off, off+n) lie on one server, the one
// at slot, so that they form one contiguous range of that server's share.
func (l Layout) Check(slot int, off, n int64) error {
	if off < 0 || n < 0 {
		return fmt.Errorf("%w: range [%d, +%d)", ErrBadArgument, off, n)
	}
	if n == 0 {
		return nil
	}
	k0, k1 := off/l.StripeSize, (off+n-1)/l.StripeSize
	if slot < 0 || int(k0%int64(l.StripeCount)) != slot || (l.StripeCount > 1 && k0 != k1) {
		return fmt.Errorf("%w: file bytes [%d, %d) are not all on that data server (stripe %d bytes over %d servers)",
			ErrBadArgument, off, off+n, l.StripeSize, l.StripeCount)
	}
	return nil
}

// Local maps file offset off, which lies on the server at slot, to its offset
// in that server's share of the file (stripes stored back to back).
func (l Layout) Local(off int64) int64 {
	k := off / l.StripeSize
	return (k/int64(l.StripeCount))*l.StripeSize + off%l.StripeSize
}

// LocalSize is how many of a file's first size bytes the server at slot
// holds.
func (l Layout) LocalSize(slot int, size int64) int64 {
	row := l.StripeSize * int64(l.StripeCount)
	full, rem := size/row, size%row
	return full*l.StripeSize + min(max(rem-int64(slot)*l.StripeSize, 0), l.StripeSize)
}

// FileEnd is the file offset just past the last byte of a share of local
// bytes held at slot (0 for an empty share): the file size that share
// implies.
func (l Layout) FileEnd(slot int, local int64) int64 {
	if local <= 0 {
		return 0
	}
	last := local - 1
	row, within := last/l.StripeSize, last%l.StripeSize
	return (row*int64(l.StripeCount)+int64(slot))*l.StripeSize + within + 1
}

// Parse reads a layout file: "key = value" lines, '#' comments, keys
// stripe_size (bytes, with an optional K, KiB, M or MiB suffix) and
// stripe_count. Missing keys keep the values of def.
func Parse(data []byte, def Layout) (Layout, error) {
	l := def
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		key, val, ok := strings.Cut(text, "=")
		if !ok {
			return def, fmt.Errorf("%w: layout line %d: want key = value, got %q", ErrBadArgument, line, text)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "stripe_size":
			n, err := parseSize(val)
			if err != nil || n <= 0 {
				return def, fmt.Errorf("%w: layout line %d: stripe_size %q: want a positive size in bytes", ErrBadArgument, line, val)
			}
			l.StripeSize = n
		case "stripe_count":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return def, fmt.Errorf("%w: layout line %d: stripe_count %q: want a positive integer", ErrBadArgument, line, val)
			}
			l.StripeCount = n
		default:
			return def, fmt.Errorf("%w: layout line %d: unknown key %q (want stripe_size or stripe_count)", ErrBadArgument, line, key)
		}
	}
	return l, sc.Err()
}

// MarshalText writes the layout in the format Parse reads.
func (l Layout) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "stripe_size = %d\nstripe_count = %d\n", l.StripeSize, l.StripeCount), nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if t, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(t), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
