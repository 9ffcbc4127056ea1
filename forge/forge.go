// Package forge reads FORGE results files: bandwidths measured on a
// supercomputer for access patterns (clients, processes, file layout,
// spatiality, request size, operation) under 0 (direct access), 1, 2, 4 or
// 8 I/O forwarders (jeanbez/forge-evaluation; the MareNostrum 4 file is
// File). It is the one reader (and writer) of the format: package eval turns
// the rows into bandit environments and writes synthetic machines' files,
// and package sim/experiment compares the simulator with them.
//
//	rows, err := forge.Load(path) // or forge.Read(r); path from forge.Find()
//	err = forge.Write(w, rows)    // a file Read reads back
//	for _, r := range rows {
//		fmt.Println(r.ContextKey(), forge.ForwardersLabel(r.Forwarders), r.Bandwidth)
//	}
package forge

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/adaptio/adaptio/internal/datadir"
)

// Errors returned by the package.
var (
	// ErrFormat is wrapped by every decoding error.
	ErrFormat = errors.New("forge: bad FORGE results file")
	// ErrNoRows: the file has a header and no measurement.
	ErrNoRows = errors.New("forge: no rows")
	// ErrNotFound: Find found no FORGE data.
	ErrNotFound = errors.New("forge: FORGE data not found")
)

// Row is one FORGE measurement (jeanbez/forge-evaluation results.csv).
type Row struct {
	Forwarders int     // I/O forwarding nodes; 0: direct access to the file system, no forwarder
	Clients    int     // compute nodes
	Processes  int     // MPI processes
	Layout     int     // 0 file per process, 1 shared file
	Spatiality int     // 0 contiguous, 1 1D-strided
	RequestKiB int     // request size, KiB
	Operation  string  // "write" or "read"
	Bandwidth  float64 // MiB/s
}

// ContextKey names the access pattern of a row, e.g. "c32-p1536-shared-contiguous-4096k-write".
func (r Row) ContextKey() string {
	l, s := "fpp", "contiguous"
	if r.Layout == 1 {
		l = "shared"
	}
	if r.Spatiality == 1 {
		s = "strided"
	}
	return fmt.Sprintf("c%d-p%d-%s-%s-%dk-%s", r.Clients, r.Processes, l, s, r.RequestKiB, r.Operation)
}

var columns = []string{"forwarders", "clients", "processes", "layout", "spatiality", "request", "operation", "bandwidth"}

// Columns returns the names of the columns Read needs, in the order a
// writer of FORGE files puts them.
func Columns() []string { return slices.Clone(columns) }

// Read decodes a ';'-separated FORGE results file with a header naming at
// least the columns forwarders, clients, processes, layout, spatiality,
// request, operation and bandwidth (in any order, others ignored), of any
// machine: forwarders 0 (direct access, as FORGE records a run that
// bypasses the forwarders) is a valid arm (ForwardersLabel "direct"). A
// UTF-8 byte-order mark is skipped and cells are trimmed; a file separated
// by commas or tabs, or without a header, is refused with a hint; a bad
// value names its line and column. Errors wrap ErrFormat, or ErrNoRows for
// a file without measurements. Rows keep the file's order.
func Read(rd io.Reader) ([]Row, error) {
	br := bufio.NewReader(rd)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	r := csv.NewReader(br)
	r.Comma = ';'
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrFormat, err)
	}
	idx := map[string]int{}
	for i, h := range head {
		idx[strings.TrimSpace(h)] = i
	}
	for _, c := range columns {
		if _, ok := idx[c]; !ok {
			switch first := strings.Join(head, ";"); {
			case len(head) == 1 && strings.Contains(first, ","):
				return nil, fmt.Errorf("%w: the header is one column with commas: FORGE files are ';'-separated (convert with: tr ',' ';')", ErrFormat)
			case len(head) == 1 && strings.Contains(first, "\t"):
				return nil, fmt.Errorf("%w: the header is one column with tabs: FORGE files are ';'-separated", ErrFormat)
			case len(idx) > 0 && isNumber(head[0]):
				return nil, fmt.Errorf("%w: line 1 is data, not a header: FORGE files start with a header naming the columns %v", ErrFormat, columns)
			}
			return nil, fmt.Errorf("%w: header lacks column %q (it has %v; want %v)", ErrFormat, c, head, columns)
		}
	}
	var out []Row
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrFormat, line, err)
		}
		var ferr error
		num := func(c string) int {
			v, err := strconv.Atoi(strings.TrimSpace(rec[idx[c]]))
			if err != nil && ferr == nil {
				ferr = fmt.Errorf("%w: line %d: column %s: %q is not an integer", ErrFormat, line, c, rec[idx[c]])
			}
			return v
		}
		row := Row{Forwarders: num("forwarders"), Clients: num("clients"), Processes: num("processes"),
			Layout: num("layout"), Spatiality: num("spatiality"), RequestKiB: num("request"),
			Operation: strings.TrimSpace(rec[idx["operation"]])}
		bw, err := strconv.ParseFloat(strings.TrimSpace(rec[idx["bandwidth"]]), 64)
		switch {
		case ferr != nil:
			return nil, ferr
		case err != nil || math.IsNaN(bw) || math.IsInf(bw, 0) || bw < 0:
			return nil, fmt.Errorf("%w: line %d: bandwidth %q", ErrFormat, line, rec[idx["bandwidth"]])
		case row.Forwarders < 0:
			return nil, fmt.Errorf("%w: line %d: column forwarders: %d, want 0 (direct access) or more", ErrFormat, line, row.Forwarders)
		case row.Clients <= 0:
			return nil, fmt.Errorf("%w: line %d: column clients: %d, want a positive count", ErrFormat, line, row.Clients)
		case row.Processes <= 0:
			return nil, fmt.Errorf("%w: line %d: column processes: %d, want a positive count", ErrFormat, line, row.Processes)
		case row.RequestKiB <= 0:
			return nil, fmt.Errorf("%w: line %d: column request: %d KiB, want a positive size", ErrFormat, line, row.RequestKiB)
		case row.Layout > 1 || row.Layout < 0 || row.Spatiality > 1 || row.Spatiality < 0:
			return nil, fmt.Errorf("%w: line %d: layout %d / spatiality %d not 0 or 1", ErrFormat, line, row.Layout, row.Spatiality)
		}
		row.Bandwidth = bw
		out = append(out, row)
	}
	if len(out) == 0 {
		return nil, ErrNoRows
	}
	return out, nil
}

// ForwardersLabel names an arm of a FORGE file: "direct" for 0 forwarders
// (direct access), else the count.
func ForwardersLabel(n int) string {
	if n == 0 {
		return "direct"
	}
	return strconv.Itoa(n)
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// Write encodes rows as a FORGE results file: ';'-separated, the header
// naming Columns in order, bandwidths with three decimals; Read reads it
// back.
func Write(w io.Writer, rows []Row) error {
	var b bytes.Buffer
	b.WriteString(strings.Join(columns, ";") + "\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%d;%d;%d;%d;%d;%d;%s;%s\n", r.Forwarders, r.Clients, r.Processes, r.Layout, r.Spatiality,
			r.RequestKiB, r.Operation, strconv.FormatFloat(r.Bandwidth, 'f', 3, 64))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Load reads the FORGE results file at path (Read).
func Load(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("forge: FORGE data: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// File is the FORGE MareNostrum 4 results file, relative to the directory
// holding the shared data (see Find).
const File = "forge/marenostrum-4-results.csv"

// Find returns the path of File under $ADAPTIO_DATA when that is set, else
// looks for it under shared/data or ../shared/data in the working directory
// and its ancestors; ErrNotFound when it is not there (scripts/fetch-data
// downloads it).
func Find() (string, error) {
	if d := os.Getenv(datadir.Env); d != "" {
		p := filepath.Join(d, File)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s has no %s", ErrNotFound, datadir.Env, d, File)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		for _, rel := range []string{"shared/data", "../shared/data"} {
			p := filepath.Join(dir, rel, File)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}
