package posix

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MooseFSChunkSize is the size of a MooseFS chunk: a file's bytes
// [i*64 MiB, (i+1)*64 MiB) are chunk i, stored whole by each chunk server
// holding a copy (as 1,024 blocks of 64 KiB).
const MooseFSChunkSize = 64 << 20

// ErrMooseFSInfo reports mfsfileinfo output that cannot be read, or an
// error message mfsfileinfo printed instead of a file's chunks.
var ErrMooseFSInfo = errors.New("posix: mfsfileinfo output")

// MooseFSFile is one file's part of mfsfileinfo's output.
type MooseFSFile struct {
	Name   string         // as mfsfileinfo was given it
	Chunks []MooseFSChunk // in file order; none for an empty file
}

// MooseFSChunk is one 64 MiB chunk of a file.
type MooseFSChunk struct {
	Index   int           // the chunk covers bytes [Index*MooseFSChunkSize, +MooseFSChunkSize)
	Empty   bool          // a hole: the chunk has never been written, no server holds it
	ID      uint64        // the master's chunk id (0 when Empty)
	Version uint32        // the chunk's version (0 when Empty)
	Copies  []MooseFSCopy // the servers holding a copy, as listed; none when Empty or lost
}

// MooseFSCopy is one copy of a chunk.
type MooseFSCopy struct {
	Addr   string // the chunk server, "a.b.c.d:port"
	Status string // "VALID", "MARKED FOR REMOVAL", ...; "" when not shown
}

// Server is the chunk server holding the chunk: the first copy whose
// status is VALID (or not shown), else the first copy; ok is false for an
// empty or lost chunk.
func (c MooseFSChunk) Server() (addr string, ok bool) {
	for _, cp := range c.Copies {
		if cp.Status == "" || cp.Status == "VALID" {
			return cp.Addr, true
		}
	}
	if len(c.Copies) > 0 {
		return c.Copies[0].Addr, true
	}
	return "", false
}

// ParseMooseFSFileInfo reads the output of "mfsfileinfo [-c] FILE...",
// one MooseFSFile per file, as MooseFS 3.0 prints it:
//
//	FILE:
//		chunk 0: 000000000000002A_00000001 / (id:42 ver:1)
//			copy 1: 10.213.0.2:9422 (status:VALID)
//		chunk 1: empty
//		chunk 2: 000000000000002B_00000001 / (id:43 ver:1)
//			no valid copies !!!
//
// or "\tno chunks - empty file" under the name. Notes on a chunk (checksum
// mismatches, signatures) are skipped; a line that is not one of these,
// such as an error mfsfileinfo printed for a file, is an error wrapping
// ErrMooseFSInfo that quotes it.
func ParseMooseFSFileInfo(out []byte) ([]MooseFSFile, error) {
	var files []MooseFSFile
	lines := strings.Split(string(out), "\n")
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		lineNo := i + 1
		bad := func(why string) error {
			return fmt.Errorf("%w: line %d %q: %s", ErrMooseFSInfo, lineNo, clip(line), why)
		}
		switch {
		case line == "":
			continue
		case !strings.HasPrefix(line, "\t"):
			if name, ok := strings.CutSuffix(line, ":"); ok && name != "" {
				files = append(files, MooseFSFile{Name: name})
				continue
			}
			if len(files) > 0 && strings.HasPrefix(line, files[len(files)-1].Name+" signature: ") {
				continue
			}
			return nil, bad("not a file name (an error from mfsfileinfo?)")
		case len(files) == 0:
			return nil, bad("chunk information before any file name")
		case strings.HasPrefix(line, "\t\t"):
			f := &files[len(files)-1]
			if len(f.Chunks) == 0 {
				return nil, bad("copy information before any chunk")
			}
			c := &f.Chunks[len(f.Chunks)-1]
			rest, ok := strings.CutPrefix(line, "\t\tcopy ")
			if !ok {
				continue // a note: "no valid copies !!!", checksums, ...
			}
			if c.Empty {
				return nil, bad("a copy of an empty chunk")
			}
			cp, err := parseMooseFSCopy(rest, len(c.Copies)+1)
			if err != nil {
				return nil, bad(err.Error())
			}
			c.Copies = append(c.Copies, cp)
		default:
			f := &files[len(files)-1]
			rest, ok := strings.CutPrefix(line, "\tchunk ")
			if !ok {
				if line == "\tno chunks - empty file" && len(f.Chunks) == 0 {
					continue
				}
				if strings.HasPrefix(line, "\tall chunks are ok") {
					continue
				}
				return nil, bad("unknown line")
			}
			c, err := parseMooseFSChunk(rest)
			if err != nil {
				return nil, bad(err.Error())
			}
			if n := len(f.Chunks); n > 0 && c.Index <= f.Chunks[n-1].Index {
				return nil, bad(fmt.Sprintf("chunk %d after chunk %d", c.Index, f.Chunks[n-1].Index))
			}
			f.Chunks = append(f.Chunks, c)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no file", ErrMooseFSInfo)
	}
	return files, nil
}

// maxMooseFSChunks bounds a chunk index: MooseFS files end at 128 PiB,
// 2^31 chunks of 64 MiB.
const maxMooseFSChunks = 1 << 31

// parseMooseFSChunk reads "N: empty" or "N: HEX_HEX / (id:ID ver:V)".
func parseMooseFSChunk(s string) (MooseFSChunk, error) {
	idx, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return MooseFSChunk{}, errors.New("want \"chunk N: ...\"")
	}
	n, err := strconv.ParseUint(idx, 10, 64)
	if err != nil || n >= maxMooseFSChunks {
		return MooseFSChunk{}, fmt.Errorf("chunk index %q", idx)
	}
	c := MooseFSChunk{Index: int(n)}
	if rest == "empty" {
		c.Empty = true
		return c, nil
	}
	hexes, paren, ok := strings.Cut(rest, " / (")
	if !ok || !strings.HasSuffix(paren, ")") {
		return c, errors.New("want \"HEX_HEX / (id:ID ver:V)\"")
	}
	hexID, hexVer, ok := strings.Cut(hexes, "_")
	if !ok {
		return c, errors.New("want a chunk id and version as HEX_HEX")
	}
	var id, ver uint64
	if id, err = strconv.ParseUint(hexID, 16, 64); err != nil {
		return c, fmt.Errorf("chunk id %q", hexID)
	}
	if ver, err = strconv.ParseUint(hexVer, 16, 32); err != nil {
		return c, fmt.Errorf("chunk version %q", hexVer)
	}
	fields := strings.Fields(strings.TrimSuffix(paren, ")"))
	if len(fields) != 2 || fields[0] != "id:"+strconv.FormatUint(id, 10) || fields[1] != "ver:"+strconv.FormatUint(ver, 10) {
		return c, fmt.Errorf("(%s) does not repeat id %d and version %d", strings.TrimSuffix(paren, ")"), id, ver)
	}
	c.ID, c.Version = id, uint32(ver)
	return c, nil
}

// parseMooseFSCopy reads "K: ADDR:PORT", then optionally " (status:S ...)"
// or " - can't get checksum"; want is the copy number K expected.
func parseMooseFSCopy(s string, want int) (MooseFSCopy, error) {
	k, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return MooseFSCopy{}, errors.New("want \"copy K: ADDR:PORT\"")
	}
	if n, err := strconv.Atoi(k); err != nil || n != want {
		return MooseFSCopy{}, fmt.Errorf("copy number %q, want %d", k, want)
	}
	addr, tail, _ := strings.Cut(rest, " ")
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Port() == 0 {
		return MooseFSCopy{}, fmt.Errorf("chunk server address %q: want ADDR:PORT", addr)
	}
	cp := MooseFSCopy{Addr: ap.String()}
	if st, ok := strings.CutPrefix(tail, "(status:"); ok {
		st, _, _ = strings.Cut(st, " ;")
		cp.Status = strings.TrimSuffix(st, ")")
	}
	return cp, nil
}

// clip shortens a line quoted in an error.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
