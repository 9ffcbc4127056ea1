package eval

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/adaptio/adaptio/forge"
)

// ReadForge decodes a FORGE results file of any machine with forge.Read; a
// file without rows wraps ErrNoData.
func ReadForge(rd io.Reader) ([]forge.Row, error) { return noRows(forge.Read(rd)) }

// LoadForge reads a FORGE results file with forge.Load; a file without rows
// wraps ErrNoData.
func LoadForge(path string) ([]forge.Row, error) { return noRows(forge.Load(path)) }

func noRows(rows []forge.Row, err error) ([]forge.Row, error) {
	if errors.Is(err, forge.ErrNoRows) {
		return nil, fmt.Errorf("%w: no rows", ErrNoData)
	}
	return rows, err
}

// ForgeFeatures describes a row's access pattern for learning shared
// across contexts: log2 of clients, processes and request size, and layout
// and spatiality weighted 2 (a layout change matters more than a doubling).
func ForgeFeatures(r forge.Row) []float64 {
	return []float64{math.Log2(float64(r.Clients)), math.Log2(float64(r.Processes)),
		2 * float64(r.Layout), 2 * float64(r.Spatiality), math.Log2(float64(r.RequestKiB))}
}

// ForgeEnvs builds one environment per access pattern (clients, processes,
// layout, spatiality, request size, operation) with the numbers of
// forwarders as arms (sorted ascending) and the measured bandwidths as
// rewards. Patterns lacking a measurement for some forwarder count are
// skipped and returned by key. Environments are sorted by key; Horizon is
// left 0 (the FORGE evaluation sets its steps).
func ForgeEnvs(rows []forge.Row) (envs []*Env, skipped []string, err error) {
	fwdSet := map[int]bool{}
	type ctx struct {
		row     forge.Row
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
		labels[i] = forge.ForwardersLabel(f)
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
		e.Features = ForgeFeatures(c.row)
		e.Group = c.row.Operation
		envs = append(envs, e)
	}
	if len(envs) == 0 {
		return nil, skipped, fmt.Errorf("%w: no complete FORGE pattern", ErrNoData)
	}
	return envs, skipped, nil
}
