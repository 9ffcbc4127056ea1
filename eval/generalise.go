package eval

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/adaptio/adaptio/bandit"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/forge"
	"github.com/adaptio/adaptio/internal/atomicfile"
)

// SyntheticMachine describes a machine that does not exist, as a FORGE
// results file would record it: access patterns measured a few times with
// each number of I/O forwarders. Policies picked on one real machine are
// judged, unchanged, on such machines (GeneraliseConfig).
//
// Each pattern's bandwidth over the forwarder counts is a bump in log2 of
// the count: its peak at a count that grows with the clients and falls for
// shared files (so that neighbouring patterns resemble each other, as on a
// real machine, with a per-pattern deviation of 0.8 doublings), its width
// 1 to 3 doublings (Flat: the share of patterns 20 doublings wide, whose
// counts differ by less than the noise). Direct access (forwarder count
// 0) is the best arm, by 10% to 100%, for a DirectBest share of patterns,
// and 20% to 80% of the best forwarding count otherwise. Every repetition
// is the pattern's value times a log-normal factor of sigma Noise.
type SyntheticMachine struct {
	Name       string
	Forwarders []int   // the arms; 0 is direct access
	Patterns   int     // access patterns, drawn from a grid of 960
	Reps       int     // measurements per pattern and forwarder count
	Noise      float64 // sigma of a repetition's log-normal factor
	DirectBest float64 // share of patterns where direct access is best (with 0 in Forwarders)
	Flat       float64 // share of patterns whose forwarder counts are all about equal
	Seed       uint64
}

// DefaultSyntheticMachines are six machines unlike MareNostrum 4 in the
// ways issue reports found matter: 3 to 8 arms, direct access best for
// some patterns, noisier repetitions, flat patterns.
func DefaultSyntheticMachines() []SyntheticMachine {
	return []SyntheticMachine{
		{Name: "three-arms", Forwarders: []int{1, 2, 4}, Patterns: 150, Reps: 5, Noise: 0.1, Seed: 1},
		{Name: "direct-best", Forwarders: []int{0, 1, 2, 4, 8}, Patterns: 150, Reps: 5, Noise: 0.1, DirectBest: 0.3, Seed: 2},
		{Name: "eight-arms", Forwarders: []int{0, 1, 2, 4, 8, 16, 32, 64}, Patterns: 150, Reps: 5, Noise: 0.1, DirectBest: 0.1, Seed: 3},
		{Name: "noisy", Forwarders: []int{1, 2, 4, 8}, Patterns: 150, Reps: 5, Noise: 0.3, Seed: 4},
		{Name: "flat", Forwarders: []int{2, 4, 8, 16}, Patterns: 150, Reps: 5, Noise: 0.15, Flat: 0.5, Seed: 5},
		{Name: "six-arms-few-reps", Forwarders: []int{0, 1, 3, 6, 12, 24}, Patterns: 150, Reps: 3, Noise: 0.2, DirectBest: 0.2, Seed: 6},
	}
}

// Rows generates the machine's measurements.
func (m SyntheticMachine) Rows() ([]forge.Row, error) {
	if len(m.Forwarders) < 2 || m.Patterns < 1 || m.Reps < 1 || m.Noise < 0 || m.DirectBest < 0 || m.DirectBest > 1 || m.Flat < 0 || m.Flat > 1 {
		return nil, fmt.Errorf("%w: synthetic machine %q: want >= 2 forwarder counts, >= 1 pattern and repetition, noise >= 0, shares in [0, 1]", ErrConfig, m.Name)
	}
	for i, f := range m.Forwarders {
		if f < 0 || i > 0 && f <= m.Forwarders[i-1] {
			return nil, fmt.Errorf("%w: synthetic machine %q: forwarder counts %v, want ascending, >= 0", ErrConfig, m.Name, m.Forwarders)
		}
	}
	rng := rand.New(rand.NewPCG(m.Seed, 0x5e7))
	var grid []forge.Row
	for _, c := range []int{4, 8, 16, 32, 64} {
		for _, ppn := range []int{12, 48} {
			for layout := range 2 {
				for spat := range 2 {
					for _, req := range []int{4, 32, 128, 1024, 4096, 8192} {
						for _, op := range []string{"write", "read"} {
							grid = append(grid, forge.Row{Clients: c, Processes: c * ppn, Layout: layout, Spatiality: spat, RequestKiB: req, Operation: op})
						}
					}
				}
			}
		}
	}
	perm := rng.Perm(len(grid))
	var out []forge.Row
	for _, i := range perm[:min(m.Patterns, len(grid))] {
		p := grid[i]
		// The pattern's scale: larger requests and more clients move more.
		base := 50 * math.Pow(float64(p.RequestKiB), 0.3) * math.Pow(float64(p.Clients), 0.4) * math.Exp(0.5*rng.NormFloat64())
		if p.Layout == 1 {
			base /= 3
		}
		peak := 0.5*math.Log2(float64(p.Clients)) - float64(p.Layout) + 0.8*rng.NormFloat64()
		width := 1 + 2*rng.Float64()
		if rng.Float64() < m.Flat {
			width = 20
		}
		value := make([]float64, len(m.Forwarders))
		best := 0.0
		for a, f := range m.Forwarders {
			if f == 0 {
				continue
			}
			d := math.Log2(float64(f)) - peak
			value[a] = base * (0.2 + 0.8*math.Exp(-d*d/(2*width*width)))
			best = max(best, value[a])
		}
		if m.Forwarders[0] == 0 {
			if rng.Float64() < m.DirectBest {
				value[0] = best * (1.1 + 0.9*rng.Float64())
			} else {
				value[0] = best * (0.2 + 0.6*rng.Float64())
			}
		}
		for a, f := range m.Forwarders {
			for range m.Reps {
				r := p
				r.Forwarders = f
				r.Bandwidth = value[a] * math.Exp(m.Noise*rng.NormFloat64())
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Targets of learning that holds on machines it has never seen: on every
// file, the last bin's median performance, the worst pattern's last-bin
// performance and the first bin's mean performance.
const (
	TargetLastMedian = 0.995
	TargetWorst      = 0.95
	TargetFirstMean  = 0.85
)

// GeneraliseConfig judges policies on several files: the reference
// machine they were picked on, synthetic machines and the simulator's
// dataset, unchanged (same options, steps and bins everywhere).
type GeneraliseConfig struct {
	Config
	Reference string             // FORGE file of the machine the policies were picked on ("": none)
	SimData   string             // the simulator's dataset directory ("": none)
	Machines  []SyntheticMachine // written to Out/machines/NAME.csv
	Specs     []Spec
	Neighbors int    // shared mode's nearest patterns (default 3)
	Out       string // output directory (created)
	Command   string
}

// GeneraliseRow is one policy, in one mode, on one file.
type GeneraliseRow struct {
	File       string
	Arms       []string
	Patterns   int
	Label      string // the policy's label
	Mode       string // "cold" or "shared"
	FirstMean  float64
	LastMedian float64
	Worst      float64
	WorstEnv   string
	// Prior is how well the file's contexts predict each other's best arm:
	// the same for every row of a file.
	Prior PriorQuality
	// Ident is what identification alone reaches on the file's patterns
	// (the same for every row of a file); WorstIdent is the reference of
	// this row's worst pattern.
	Ident      Identification
	WorstIdent float64
}

// PriorQuality measures what sharing can give on a file, independently of
// any policy: every pattern's prior is built (as the shared mode builds
// it) from its nearest neighbours, each known perfectly (its arms' true
// means), and judged against the pattern's own means.
type PriorQuality struct {
	Hit       float64 // share of patterns whose prior favours their best arm
	Favourite float64 // mean relative value of the prior's favourite arm
	TopTwo    float64 // mean relative value of the better of the prior's two favourites
}

// PriorQualityOf computes the PriorQuality of envs with the given number
// of neighbours. A first bin (the prior's favourite pulled first, then
// learning) above Favourite needs the pattern's own rewards to correct the
// prior within the bin; above TopTwo, to try beyond the prior's two
// favourites and still exploit within it.
func PriorQualityOf(envs []*Env, neighbors int) (PriorQuality, error) {
	if len(envs) == 0 {
		return PriorQuality{}, fmt.Errorf("%w: no environments", ErrNoData)
	}
	k := len(envs[0].Arms)
	known, err := bandit.NewContextual("greedy", k, bandit.Options{Neighbors: neighbors})
	if err != nil {
		return PriorQuality{}, err
	}
	for _, e := range envs {
		p := known.PolicyWith(e.Key, e.Features)
		for a, m := range e.Means {
			p.Update(a, m)
		}
	}
	var q PriorQuality
	var n float64
	for _, e := range envs {
		rel := known.Prior(e.Features, e.Key)
		if rel == nil {
			continue
		}
		first, second := -1, -1
		for a, v := range rel {
			switch {
			case first < 0 || v > rel[first]:
				first, second = a, first
			case second < 0 || v > rel[second]:
				second = a
			}
		}
		n++
		if first == e.Best {
			q.Hit++
		}
		q.Favourite += e.Relative(first)
		top := e.Relative(first)
		if second >= 0 {
			top = max(top, e.Relative(second))
		}
		q.TopTwo += top
	}
	if n == 0 {
		return PriorQuality{}, fmt.Errorf("%w: no pattern has features to find neighbours by", ErrNoData)
	}
	q.Hit, q.Favourite, q.TopTwo = q.Hit/n, q.Favourite/n, q.TopTwo/n
	return q, nil
}

// Met reports whether r meets the three targets.
func (r GeneraliseRow) Met() bool {
	return r.LastMedian >= TargetLastMedian && r.Worst >= TargetWorst && r.FirstMean >= TargetFirstMean
}

// RunGeneralise runs every spec, cold and shared, on every file of cfg and
// writes the synthetic machines' files, generalise_summary.csv and
// report.html to cfg.Out.
func RunGeneralise(ctx context.Context, cfg GeneraliseConfig) ([]GeneraliseRow, error) {
	if cfg.Neighbors == 0 {
		cfg.Neighbors = 3
	}
	if cfg.Steps == 0 {
		cfg.Steps = 200
	}
	if err := os.MkdirAll(filepath.Join(cfg.Out, "machines"), 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	type file struct {
		name string
		envs []*Env
	}
	var files []file
	if cfg.Reference != "" {
		rows, err := LoadForge(cfg.Reference)
		if err != nil {
			return nil, err
		}
		envs, _, err := ForgeEnvs(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Reference, err)
		}
		files = append(files, file{filepath.Base(cfg.Reference), envs})
	}
	for _, m := range cfg.Machines {
		rows, err := m.Rows()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(cfg.Out, "machines", m.Name+".csv")
		if err := atomicfile.Write(path, func(w io.Writer) error { return forge.Write(w, rows) }); err != nil {
			return nil, err
		}
		envs, _, err := ForgeEnvs(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		files = append(files, file{"synthetic " + m.Name, envs})
	}
	if cfg.SimData != "" {
		obs, err := loadTwins(cfg.SimData)
		if err != nil {
			return nil, err
		}
		files = append(files, file{"simulator " + filepath.Base(cfg.SimData), obs.Envs})
	}
	var out []GeneraliseRow
	for _, f := range files {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "%s: %d patterns, arms %v\n", f.name, len(f.envs), f.envs[0].Arms)
		}
		r, err := EvaluateForge(ctx, f.envs, ForgeConfig{Config: cfg.Config, Specs: cfg.Specs, Neighbors: cfg.Neighbors})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		pq, err := PriorQualityOf(f.envs, cfg.Neighbors)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		ident, err := IdentificationOf(f.envs, cfg.Config)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		for i, s := range r.Specs {
			for _, mode := range []struct {
				name string
				cs   []Curve
			}{{"cold", r.Cold[i]}, {"shared", r.Shared[i]}} {
				first, last, _, _ := curveStats(mode.cs)
				row := GeneraliseRow{File: f.name, Arms: f.envs[0].Arms, Patterns: len(f.envs), Label: s.Label, Mode: mode.name,
					FirstMean: first.Mean, LastMedian: last.Median, Worst: math.Inf(1), Prior: pq, Ident: ident}
				for _, c := range mode.cs {
					if _, p := c.Last(); p < row.Worst {
						row.Worst, row.WorstEnv = p, c.Env
					}
				}
				row.WorstIdent = ident.ByEnv[row.WorstEnv]
				out = append(out, row)
			}
		}
	}
	return out, writeGeneralise(cfg, out)
}

// loadTwins reads the TWINS environments of a simulator dataset.
func loadTwins(dir string) (*TwinsData, error) {
	rows, err := dataset.LoadObservations(dir)
	if err != nil {
		return nil, err
	}
	return TwinsEnvs(rows)
}

func writeGeneralise(cfg GeneraliseConfig, rows []GeneraliseRow) error {
	header := []string{"file", "arms", "patterns", "policy", "mode", "first-bin mean", "last-bin median", "worst pattern", "worst pattern's name", "targets met",
		"prior hit", "prior favourite", "prior top two",
		"worst pattern's identification reference", "lowest identification reference", "its pattern", "patterns whose reference is below the worst-pattern target"}
	var csvRows [][]string
	for _, r := range rows {
		csvRows = append(csvRows, []string{r.File, strings.Join(r.Arms, " "), strconv.Itoa(r.Patterns), r.Label, r.Mode,
			f3(r.FirstMean), f3(r.LastMedian), f3(r.Worst), r.WorstEnv, strconv.FormatBool(r.Met()),
			f3(r.Prior.Hit), f3(r.Prior.Favourite), f3(r.Prior.TopTwo),
			f3(r.WorstIdent), f3(r.Ident.Worst), r.Ident.WorstEnv, strconv.Itoa(r.Ident.Below)})
	}
	if err := WriteCSV(cfg.Out, "generalise_summary.csv", header, csvRows); err != nil {
		return err
	}
	// One table per policy and mode: its files side by side.
	type key struct{ label, mode string }
	var keys []key
	byKey := map[key][]GeneraliseRow{}
	for _, r := range rows {
		k := key{r.Label, r.Mode}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	priors := Table{Title: "What the neighbours predict (independent of the policy)",
		Note: "Each pattern's prior built from its nearest patterns, each known perfectly. Hit: the prior favours the pattern's best arm. " +
			"Favourite: the relative value of the prior's favourite arm, what a first bin that only followed the prior would score. " +
			"Top two: the better of its two favourites. A first-bin mean above these needs the pattern's own rewards to correct the prior within the bin.",
		Header: []string{"file", "arms", "prior hit", "prior favourite", "prior top two"}}
	idents := Table{Title: "What identification alone reaches (independent of the policy)",
		Note:   IdentificationNote(cfg.Steps, cfg.Bin),
		Header: []string{"file", "arms", "lowest pattern's reference", "its pattern", "patterns below " + strconv.FormatFloat(TargetWorst, 'f', -1, 64)}}
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.File] {
			seen[r.File] = true
			priors.Rows = append(priors.Rows, []string{r.File, strings.Join(r.Arms, " "), f3(r.Prior.Hit), f3(r.Prior.Favourite), f3(r.Prior.TopTwo)})
			idents.Rows = append(idents.Rows, []string{r.File, strings.Join(r.Arms, " "), f3(r.Ident.Worst), r.Ident.WorstEnv, strconv.Itoa(r.Ident.Below)})
		}
	}
	tables := []Table{priors, idents}
	var met []string
	for _, k := range keys {
		t := Table{Title: k.label + ", " + k.mode, Header: []string{"file", "arms", "patterns", "first-bin mean", "last-bin median", "worst pattern", "", "its identification reference", "targets"}}
		all := true
		for _, r := range byKey[k] {
			ok := "met"
			if !r.Met() {
				ok, all = "missed", false
			}
			t.Rows = append(t.Rows, []string{r.File, strings.Join(r.Arms, " "), strconv.Itoa(r.Patterns), f3(r.FirstMean), f3(r.LastMedian), f3(r.Worst), r.WorstEnv, f3(r.WorstIdent), ok})
		}
		if all {
			met = append(met, k.label+" ("+k.mode+")")
		}
		tables = append(tables, t)
	}
	slices.Sort(met)
	summary := "No policy meets the targets on every file."
	if len(met) > 0 {
		summary = "Meeting the targets on every file: " + strings.Join(met, ", ") + "."
	}
	rep := &Report{
		Title:   "Learning on machines it has never seen",
		Command: cfg.Command,
		Intro: fmt.Sprintf("Every policy, with the options it has on the reference machine, on every file: %d steps per pattern, bins of %d, %d repetitions, "+
			"cold (each pattern from zero) and shared (a pattern learned after all others, from the prior of its %d nearest). "+
			"Targets on every file: first-bin mean >= %.2f, last-bin median >= %.3f, worst pattern >= %.2f. The synthetic machines' files are in machines/ (FORGE format: adaptio eval forge --data reads them).",
			cfg.Steps, cfg.Bin, cfg.Reps, cfg.Neighbors, TargetFirstMean, TargetLastMedian, TargetWorst),
		Sections: []Section{{Title: "Summary", Text: summary, Tables: tables}},
	}
	return rep.WriteHTML(filepath.Join(cfg.Out, "report.html"))
}
