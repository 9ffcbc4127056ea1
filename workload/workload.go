// Package workload defines MPI-IO Test / IOR-style access patterns and the
// exact request stream each process issues. The simulator and the real
// benchmark client (adaptio bench) both generate requests from here, so a
// pattern means the same thing in virtual time and on real bytes.
//
//	p := workload.Pattern{Processes: 128, Layout: workload.Shared, Spatiality: workload.Strided,
//		Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 4 << 30}
//	for i := 0; i < p.RequestsPerProcess(); i++ {
//		file, off := p.Request(proc, i)
//		...
//	}
package workload

import (
	"errors"
	"fmt"
	"strings"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

// Layout is the file layout of a workload.
type Layout uint8

const (
	// FilePerProcess: each process accesses its own file.
	FilePerProcess Layout = 0
	// Shared: all processes access one shared file.
	Shared Layout = 1
)

// Spatiality is how a process's requests are placed in its file.
type Spatiality uint8

const (
	// Contiguous: each process accesses one contiguous region, request after request.
	Contiguous Spatiality = 0
	// Strided: 1D-strided; request i of process p is at (i*Processes + p) * RequestSize.
	Strided Spatiality = 1
)

func (l Layout) String() string {
	if l == FilePerProcess {
		return "fpp"
	}
	return "shared"
}

func (s Spatiality) String() string {
	if s == Contiguous {
		return "contiguous"
	}
	return "strided"
}

// ParseLayout parses "fpp" / "file-per-process" / "0" or "shared" / "1".
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(s) {
	case "fpp", "file-per-process", "0":
		return FilePerProcess, nil
	case "shared", "shared-file", "1":
		return Shared, nil
	}
	return 0, fmt.Errorf("workload: unknown layout %q (want fpp or shared)", s)
}

// ParseSpatiality parses "contiguous" / "0" or "strided" / "1d-strided" / "1".
func ParseSpatiality(s string) (Spatiality, error) {
	switch strings.ToLower(s) {
	case "contiguous", "contig", "0":
		return Contiguous, nil
	case "strided", "1d-strided", "1":
		return Strided, nil
	}
	return 0, fmt.Errorf("workload: unknown spatiality %q (want contiguous or strided)", s)
}

// Pattern is one benchmark access pattern. TotalBytes is spread evenly over
// processes; each process issues RequestsPerProcess synchronous requests.
type Pattern struct {
	Processes   int
	Layout      Layout
	Spatiality  Spatiality
	Op          rw.Op
	RequestSize int64 // bytes
	TotalBytes  int64 // bytes over all processes (default 4 GiB in the papers)
}

// ErrBadPattern is returned by Validate.
var ErrBadPattern = errors.New("workload: invalid pattern")

// Validate checks the pattern can be generated.
func (p Pattern) Validate() error {
	switch {
	case p.Processes <= 0:
		return fmt.Errorf("%w: processes %d must be positive", ErrBadPattern, p.Processes)
	case p.RequestSize <= 0:
		return fmt.Errorf("%w: request size %d must be positive", ErrBadPattern, p.RequestSize)
	case p.TotalBytes < p.RequestSize*int64(p.Processes):
		return fmt.Errorf("%w: total %d bytes is less than one %d-byte request per process for %d processes", ErrBadPattern, p.TotalBytes, p.RequestSize, p.Processes)
	case !p.Op.Valid():
		return fmt.Errorf("%w: %w", ErrBadPattern, rw.ErrBadOp)
	case p.Layout > Shared || p.Spatiality > Strided:
		return fmt.Errorf("%w: unknown layout or spatiality", ErrBadPattern)
	}
	return nil
}

// RequestsPerProcess is the number of requests each process issues.
func (p Pattern) RequestsPerProcess() int {
	return int(p.TotalBytes / int64(p.Processes) / p.RequestSize)
}

// BytesPerProcess is the bytes each process moves (whole requests only).
func (p Pattern) BytesPerProcess() int64 { return int64(p.RequestsPerProcess()) * p.RequestSize }

// Files is the number of distinct files the pattern uses.
func (p Pattern) Files() int {
	if p.Layout == FilePerProcess {
		return p.Processes
	}
	return 1
}

// FileName is the name of file index file of the pattern, relative to the
// run's directory: "shared.dat", or "fpp.00012.dat" for process 12's file.
// The benchmark (fwd/fwdbench) writes these files and the simulator stripes
// them by these names (layout.Layout.FirstServer), so both place a file's
// stripes alike.
func (p Pattern) FileName(file int) string {
	if p.Layout == Shared {
		return "shared.dat"
	}
	return fmt.Sprintf("fpp.%05d.dat", file)
}

// Request returns the file index (0 <= file < Files()) and byte offset of
// request i (0-based) of process proc.
func (p Pattern) Request(proc, i int) (file int, offset int64) {
	n := int64(p.RequestsPerProcess())
	if p.Layout == FilePerProcess {
		file = proc
		if p.Spatiality == Contiguous {
			return file, int64(i) * p.RequestSize
		}
		// 1D-strided within a private file: stride of Processes requests
		// (the papers exclude it; kept for completeness).
		return file, int64(i) * int64(p.Processes) * p.RequestSize
	}
	if p.Spatiality == Contiguous {
		return 0, (int64(proc)*n + int64(i)) * p.RequestSize
	}
	return 0, (int64(i)*int64(p.Processes) + int64(proc)) * p.RequestSize
}

// Class is the access-pattern class the papers label this pattern with.
func (p Pattern) Class() access.Class {
	switch {
	case p.Layout == FilePerProcess:
		return access.FPP
	case p.Spatiality == Contiguous:
		return access.SC
	}
	return access.SS
}

// DefaultTotal is the bytes each of the papers' experiments moves (4 GiB).
const DefaultTotal = 4 << 30

// String is a compact, stable name such as "128p-shared-strided-read-32k";
// a total other than DefaultTotal is appended ("...-32k-512m"), so patterns
// that differ only in size keep distinct names.
func (p Pattern) String() string {
	name := fmt.Sprintf("%dp-%s-%s-%s-%s", p.Processes, p.Layout, p.Spatiality, p.Op, sizeString(p.RequestSize))
	if p.TotalBytes != DefaultTotal && p.TotalBytes > 0 {
		name += "-" + sizeString(p.TotalBytes)
	}
	return name
}

func sizeString(b int64) string {
	switch {
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dm", b>>20)
	case b%(1<<10) == 0:
		return fmt.Sprintf("%dk", b>>10)
	}
	return fmt.Sprintf("%db", b)
}

// Scenario is one experiment setting of the papers: a pattern on a number of
// I/O nodes.
type Scenario struct {
	Pattern
	IONodes int
}

// String is e.g. "128p-shared-strided-read-32k-4ion".
func (s Scenario) String() string { return fmt.Sprintf("%s-%dion", s.Pattern, s.IONodes) }

// Grid returns the papers' 144 scenarios (Bez et al., FGCS 2020, V-A): processes
// 128/256/512 x {FPP contiguous, shared contiguous, shared strided} x
// read/write x request 32/256 KiB x I/O nodes 1/2/4/8, total 4 GiB each, in a
// fixed order. With validation it returns the generalisation set with 64 and
// 128 KiB requests instead.
func Grid(validation bool) []Scenario {
	return grid([]int{128, 256, 512}, []int{1, 2, 4, 8}, validation)
}

// SmallGrid is the grid of small jobs, as IOR runs them on a few nodes: 4
// to 64 processes on 1 or 2 I/O nodes, the three patterns, both
// operations, requests of 32 KiB, 256 KiB and 1 MiB (validation: 64 and
// 128 KiB). Detection trained on Grid alone has seen 128 processes or more
// per experiment.
func SmallGrid(validation bool) []Scenario {
	out := grid([]int{4, 8, 16, 32, 64}, []int{1, 2}, validation)
	if !validation {
		for _, sc := range grid([]int{4, 8, 16, 32, 64}, []int{1, 2}, false) {
			if sc.RequestSize == 32<<10 {
				sc.RequestSize = 1 << 20
				out = append(out, sc)
			}
		}
	}
	return out
}

func grid(processes, ionodes []int, validation bool) []Scenario {
	sizes := []int64{32 << 10, 256 << 10}
	if validation {
		sizes = []int64{64 << 10, 128 << 10}
	}
	type ls struct {
		l Layout
		s Spatiality
	}
	var out []Scenario
	for _, procs := range processes {
		for _, x := range []ls{{FilePerProcess, Contiguous}, {Shared, Contiguous}, {Shared, Strided}} {
			for _, op := range []rw.Op{rw.Write, rw.Read} {
				for _, size := range sizes {
					for _, ion := range ionodes {
						out = append(out, Scenario{Pattern: Pattern{
							Processes: procs, Layout: x.l, Spatiality: x.s, Op: op,
							RequestSize: size, TotalBytes: DefaultTotal,
						}, IONodes: ion})
					}
				}
			}
		}
	}
	return out
}
