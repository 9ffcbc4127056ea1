package eval

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// TwinsData is the simulator's dataset arranged for the papers' offline
// evaluation: per scenario, the per-second bandwidths measured with each
// TWINS window.
type TwinsData struct {
	Windows   []time.Duration // arms, ascending
	Envs      []*Env          // one per scenario with every window measured, sorted by key
	Scenarios map[string]workload.Scenario
	Skipped   []string // scenarios lacking a window
}

// TwinsEnvs groups TWINS rows (Scheduler "twins") by scenario and window;
// the reward samples of (scenario, window) are the per-second bandwidths of
// its non-idle observations. An experiment's last interval, shorter than
// the others (dataset.LoadObservations), is left out unless it is the only
// one: its bandwidth is the last requests' bytes over a fraction of a
// second, often served from a page cache, and reaches up to 13 times the
// experiment's typical second (the simulator's grid: 128 processes reading
// their own files through one I/O node, 1.14 GB/s over its last 4.6 ms
// against a median of 80 MB/s), so that one such interval among 50 would
// make an arm the best by its mean alone. An environment's Horizon is the smallest number
// of measurements of any of its windows (Bez et al., FGCS 2020, V-B: "the simulation
// duration is limited by the amount of measurements").
func TwinsEnvs(rows []dataset.Row) (*TwinsData, error) {
	type key struct {
		sc string
		w  time.Duration
	}
	samples := map[key][]float64{}
	partial := map[key][]float64{}
	scen := map[string]workload.Scenario{}
	winSet := map[time.Duration]bool{}
	var full time.Duration // the dataset's interval: its longest
	for _, r := range rows {
		full = max(full, r.Obs.Interval)
	}
	for _, r := range rows {
		if r.Scheduler != "twins" || r.Window <= 0 || r.Obs.Idle() {
			continue
		}
		k := key{r.Scenario.String(), r.Window}
		if r.Obs.Interval < full {
			partial[k] = append(partial[k], r.Obs.Bandwidth)
		} else {
			samples[k] = append(samples[k], r.Obs.Bandwidth)
		}
		scen[k.sc] = r.Scenario
		winSet[r.Window] = true
	}
	if len(scen) == 0 {
		return nil, fmt.Errorf("%w: no non-idle TWINS observations", ErrNoData)
	}
	for k, v := range partial {
		if len(samples[k]) == 0 {
			samples[k] = v // an experiment shorter than one interval
		}
	}
	d := &TwinsData{Scenarios: scen}
	for w := range winSet {
		d.Windows = append(d.Windows, w)
	}
	sort.Slice(d.Windows, func(i, j int) bool { return d.Windows[i] < d.Windows[j] })
	labels := make([]string, len(d.Windows))
	for i, w := range d.Windows {
		labels[i] = w.String()
	}
	keys := make([]string, 0, len(scen))
	for k := range scen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, sc := range keys {
		s := make([][]float64, len(d.Windows))
		horizon := -1
		for i, w := range d.Windows {
			s[i] = samples[key{sc, w}]
			if horizon < 0 || len(s[i]) < horizon {
				horizon = len(s[i])
			}
		}
		if horizon == 0 {
			d.Skipped = append(d.Skipped, sc)
			continue
		}
		e, err := NewEnv(sc, labels, s)
		if err != nil {
			return nil, err
		}
		e.Horizon = horizon
		e.Group = scen[sc].Op.String()
		e.Features = ScenarioFeatures(scen[sc])
		d.Envs = append(d.Envs, e)
	}
	if len(d.Envs) == 0 {
		return nil, fmt.Errorf("%w: no scenario has every window measured", ErrNoData)
	}
	return d, nil
}

// ScenarioFeatures describes a scenario for learning shared across
// scenarios: log2 of processes, request size (KiB) and I/O nodes, and layout,
// spatiality and operation weighted 2 (a class or operation change matters
// more than a doubling).
func ScenarioFeatures(s workload.Scenario) []float64 {
	return []float64{math.Log2(float64(s.Processes)), math.Log2(float64(s.RequestSize) / 1024), math.Log2(float64(s.IONodes)),
		2 * float64(s.Layout), 2 * float64(s.Spatiality), 2 * float64(s.Op)}
}

// Env returns the environment of a scenario (nil if absent).
func (d *TwinsData) Env(s workload.Scenario) *Env {
	k := s.String()
	i := sort.Search(len(d.Envs), func(i int) bool { return d.Envs[i].Key >= k })
	if i < len(d.Envs) && d.Envs[i].Key == k {
		return d.Envs[i]
	}
	return nil
}

// Pattern is one of the six scenarios of Bez et al., FGCS 2020, Table III.
type Pattern struct {
	Name     string
	Scenario workload.Scenario
}

// TableIII returns patterns A-F of Bez et al., FGCS 2020, Table III (4 GiB each).
func TableIII() []Pattern {
	mk := func(name string, ion, procs int, l workload.Layout, s workload.Spatiality, op rw.Op) Pattern {
		return Pattern{name, workload.Scenario{IONodes: ion, Pattern: workload.Pattern{
			Processes: procs, Layout: l, Spatiality: s, Op: op, RequestSize: 32 << 10, TotalBytes: 4 << 30}}}
	}
	return []Pattern{
		mk("A", 8, 128, workload.Shared, workload.Strided, rw.Read),
		mk("B", 2, 128, workload.Shared, workload.Contiguous, rw.Write),
		mk("C", 8, 512, workload.Shared, workload.Contiguous, rw.Read),
		mk("D", 1, 128, workload.Shared, workload.Strided, rw.Write),
		mk("E", 1, 128, workload.FilePerProcess, workload.Contiguous, rw.Write),
		mk("F", 4, 128, workload.Shared, workload.Strided, rw.Read),
	}
}
