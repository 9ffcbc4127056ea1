package eval

import (
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
	Forwarders int     // I/O forwarding nodes
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

// ReadForge decodes a ';'-separated FORGE results file with a header.
func ReadForge(rd io.Reader) ([]ForgeRow, error) {
	r := csv.NewReader(rd)
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
			return nil, fmt.Errorf("%w: header lacks column %q", ErrForgeFormat, c)
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
		case row.Forwarders <= 0 || row.Clients <= 0 || row.Processes <= 0 || row.RequestKiB <= 0:
			return nil, fmt.Errorf("%w: line %d: non-positive count", ErrForgeFormat, line)
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
		labels[i] = strconv.Itoa(f)
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
