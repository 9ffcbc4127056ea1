package eval

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ErrForgeFormat is wrapped by every FORGE decoding error.
var ErrForgeFormat = errors.New("eval: bad FORGE results file")

// ForgeRow is one FORGE measurement (jeanbez/forge-evaluation results.csv).
type ForgeRow struct {
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
func (r ForgeRow) ContextKey() string {
	l, s := "fpp", "contiguous"
	if r.Layout == 1 {
		l = "shared"
	}
	if r.Spatiality == 1 {
		s = "strided"
	}
	return fmt.Sprintf("c%d-p%d-%s-%s-%dk-%s", r.Clients, r.Processes, l, s, r.RequestKiB, r.Operation)
}

// Features describes the access pattern for learning shared across
// contexts: log2 of clients, processes and request size, and layout and
// spatiality weighted 2 (a layout change matters more than a doubling).
func (r ForgeRow) Features() []float64 {
	return []float64{math.Log2(float64(r.Clients)), math.Log2(float64(r.Processes)),
		2 * float64(r.Layout), 2 * float64(r.Spatiality), math.Log2(float64(r.RequestKiB))}
}

var forgeCols = []string{"forwarders", "clients", "processes", "layout", "spatiality", "request", "operation", "bandwidth"}

// ReadForge decodes a ';'-separated FORGE results file with a header, of
// any machine: forwarders 0 (direct access, as FORGE records a run that
// bypasses the forwarders) is a valid arm. A UTF-8 byte-order mark is
// skipped; a file separated by commas or tabs, or without a header, is
// refused with a hint.
func ReadForge(rd io.Reader) ([]ForgeRow, error) {
	br := bufio.NewReader(rd)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	r := csv.NewReader(br)
	r.Comma = ';'
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrForgeFormat, err)
	}
	idx := map[string]int{}
	for i, h := range head {
		idx[strings.TrimSpace(h)] = i
	}
	for _, c := range forgeCols {
		if _, ok := idx[c]; !ok {
			switch first := strings.Join(head, ";"); {
			case len(head) == 1 && strings.Contains(first, ","):
				return nil, fmt.Errorf("%w: the header is one column with commas: FORGE files are ';'-separated (convert with: tr ',' ';')", ErrForgeFormat)
			case len(head) == 1 && strings.Contains(first, "\t"):
				return nil, fmt.Errorf("%w: the header is one column with tabs: FORGE files are ';'-separated", ErrForgeFormat)
			case len(idx) > 0 && isNumber(head[0]):
				return nil, fmt.Errorf("%w: line 1 is data, not a header: FORGE files start with a header naming the columns %v", ErrForgeFormat, forgeCols)
			}
			return nil, fmt.Errorf("%w: header lacks column %q (it has %v; want %v)", ErrForgeFormat, c, head, forgeCols)
		}
	}
	var out []ForgeRow
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrForgeFormat, line, err)
		}
		var ferr error
		num := func(c string) int {
			v, err := strconv.Atoi(strings.TrimSpace(rec[idx[c]]))
			if err != nil && ferr == nil {
				ferr = fmt.Errorf("%w: line %d: column %s: %q is not an integer", ErrForgeFormat, line, c, rec[idx[c]])
			}
			return v
		}
		row := ForgeRow{Forwarders: num("forwarders"), Clients: num("clients"), Processes: num("processes"),
			Layout: num("layout"), Spatiality: num("spatiality"), RequestKiB: num("request"),
			Operation: strings.TrimSpace(rec[idx["operation"]])}
		bw, err := strconv.ParseFloat(strings.TrimSpace(rec[idx["bandwidth"]]), 64)
		switch {
		case ferr != nil:
			return nil, ferr
		case err != nil || math.IsNaN(bw) || math.IsInf(bw, 0) || bw < 0:
			return nil, fmt.Errorf("%w: line %d: bandwidth %q", ErrForgeFormat, line, rec[idx["bandwidth"]])
		case row.Forwarders < 0:
			return nil, fmt.Errorf("%w: line %d: column forwarders: %d, want 0 (direct access) or more", ErrForgeFormat, line, row.Forwarders)
		case row.Clients <= 0:
			return nil, fmt.Errorf("%w: line %d: column clients: %d, want a positive count", ErrForgeFormat, line, row.Clients)
		case row.Processes <= 0:
			return nil, fmt.Errorf("%w: line %d: column processes: %d, want a positive count", ErrForgeFormat, line, row.Processes)
		case row.RequestKiB <= 0:
			return nil, fmt.Errorf("%w: line %d: column request: %d KiB, want a positive size", ErrForgeFormat, line, row.RequestKiB)
		case row.Layout > 1 || row.Layout < 0 || row.Spatiality > 1 || row.Spatiality < 0:
			return nil, fmt.Errorf("%w: line %d: layout %d / spatiality %d not 0 or 1", ErrForgeFormat, line, row.Layout, row.Spatiality)
		}
		row.Bandwidth = bw
		out = append(out, row)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrNoData)
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

// LoadForge reads a FORGE results file.
func LoadForge(path string) ([]ForgeRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: FORGE data: %w", err)
	}
	defer f.Close()
	return ReadForge(f)
}

// ForgeEnvs builds one environment per access pattern (clients, processes,
// layout, spatiality, request size, operation) with the numbers of
// forwarders as arms (sorted ascending) and the measured bandwidths as
// rewards. Patterns lacking a measurement for some forwarder count are
// skipped and returned by key. Environments are sorted by key; Horizon is
// left 0 (the FORGE evaluation sets its steps).
func ForgeEnvs(rows []ForgeRow) (envs []*Env, skipped []string, err error) {
	fwdSet := map[int]bool{}
	type ctx struct {
		row     ForgeRow
		samples map[int][]float64
	}
	byKey := map[string]*ctx{}
	for _, r := range rows {
		fwdSet[r.Forwarders] = true
		c := byKey[r.ContextKey()]
		if c == nil {
			c = &ctx{row: r, samples: map[int][]float64{}}
			byKey[r.ContextKey()] = c
		}
		c.samples[r.Forwarders] = append(c.samples[r.Forwarders], r.Bandwidth)
	}
	var fwds []int
	for f := range fwdSet {
		fwds = append(fwds, f)
	}
	sort.Ints(fwds)
	labels := make([]string, len(fwds))
	for i, f := range fwds {
		labels[i] = ForwardersLabel(f)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := byKey[k]
		samples := make([][]float64, len(fwds))
		ok := true
		for i, f := range fwds {
			samples[i] = c.samples[f]
			ok = ok && len(samples[i]) > 0
		}
		if !ok {
			skipped = append(skipped, k)
			continue
		}
		e, err := NewEnv(k, labels, samples)
		if err != nil {
			return nil, nil, err
		}
		e.Features = c.row.Features()
		e.Group = c.row.Operation
		envs = append(envs, e)
	}
	if len(envs) == 0 {
		return nil, skipped, fmt.Errorf("%w: no complete FORGE pattern", ErrNoData)
	}
	return envs, skipped, nil
}
