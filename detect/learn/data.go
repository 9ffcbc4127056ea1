package learn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/detect"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Set is a labelled feature matrix: X[i] (access.Observation.Features
// order) has class Y[i]; Op[i] is the interval's operation, kept beside the
// class.
type Set struct {
	X  [][access.NumFeatures]float64
	Y  []access.Class
	Op []rw.Op
	// Seq numbers the interval sequences rows belong to (one per experiment
	// and I/O node, rows in time order), for EvaluateSmoothed.
	Seq []int32
}

// Len returns the number of rows.
func (s Set) Len() int { return len(s.Y) }

func (s *Set) add(o access.Observation, c access.Class, seq int) {
	s.X = append(s.X, o.Features())
	s.Y = append(s.Y, c)
	s.Op = append(s.Op, o.Op)
	s.Seq = append(s.Seq, int32(seq))
}

// Subset returns the rows idx, in that order (sharing no slices with s).
func (s Set) Subset(idx []int) Set {
	out := Set{X: make([][access.NumFeatures]float64, len(idx)), Y: make([]access.Class, len(idx)),
		Op: make([]rw.Op, len(idx)), Seq: make([]int32, len(idx))}
	for k, i := range idx {
		out.X[k], out.Y[k], out.Op[k], out.Seq[k] = s.X[i], s.Y[i], s.Op[i], s.Seq[i]
	}
	return out
}

// Counts returns the rows per class in access.Classes order.
func (s Set) Counts() [detect.NumClasses]int {
	var c [detect.NumClasses]int
	for _, y := range s.Y {
		if k := y.Index(); k >= 0 {
			c[k]++
		}
	}
	return c
}

// SetOptions selects rows of a dataset.
type SetOptions struct {
	// PerExperiment rows are kept from the centre of each experiment; <= 0
	// keeps every labelled, non-idle row.
	PerExperiment int
	// Schedulers keeps only experiments run under these schedulers (e.g.
	// "twins", as the papers' 1,008 experiments); empty keeps all.
	Schedulers []string
}

// CenterRows builds a training set from dataset rows as the papers do: rows
// are grouped by experiment (dataset.Run), idle or unlabelled intervals are
// dropped, and from each experiment the opt.PerExperiment rows at the centre
// of its remaining rows (in file order) are kept, avoiding start-up and
// tear-down noise and weighting experiments equally. Experiments appear in
// first-seen order.
func CenterRows(rows []dataset.Row, opt SetOptions) Set {
	perExperiment := opt.PerExperiment
	groups := map[string][]int{}
	var keys []string
	for i, r := range rows {
		if r.Obs.Idle() || r.Class.Index() < 0 {
			continue
		}
		if len(opt.Schedulers) > 0 && !slices.Contains(opt.Schedulers, r.Run.Scheduler) {
			continue
		}
		k := r.Run.Key()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	var s Set
	for e, k := range keys {
		g := groups[k]
		if perExperiment > 0 && len(g) > perExperiment {
			start := (len(g) - perExperiment) / 2
			g = g[start : start+perExperiment]
		}
		for _, i := range g {
			s.add(rows[i].Obs, rows[i].Class, e*4096+rows[i].Obs.Node)
		}
	}
	return s
}

// Split divides s into a training share frac (0 < frac < 1) and the rest,
// stratified by class: each class is shuffled with rng and split at the same
// proportion. Both parts keep s's row order.
func Split(s Set, frac float64, rng *rand.Rand) (train, test Set, err error) {
	if !(frac > 0 && frac < 1) {
		return Set{}, Set{}, fmt.Errorf("%w: train fraction %v, want in (0, 1)", detect.ErrOptions, frac)
	}
	var byClass [detect.NumClasses + 1][]int
	for i, y := range s.Y {
		byClass[y.Index()+1] = append(byClass[y.Index()+1], i)
	}
	inTrain := make([]bool, s.Len())
	for _, rows := range byClass {
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		k := int(math.Round(frac * float64(len(rows))))
		for _, i := range rows[:k] {
			inTrain[i] = true
		}
	}
	var a, b []int
	for i, t := range inTrain {
		if t {
			a = append(a, i)
		} else {
			b = append(b, i)
		}
	}
	return s.Subset(a), s.Subset(b), nil
}

// SyntheticOptions shapes Synthetic's observations.
type SyntheticOptions struct {
	PerScenario int // observations per scenario; default 40
	MinRequests int // requests per interval, drawn log-uniformly; default 64
	MaxRequests int // default 2048
}

// Synthetic generates a labelled set without the simulator: for each
// scenario, PerScenario intervals of an I/O node (nodes taken in turn) near
// the middle of the run. Process p is served by I/O node p mod IONodes; in
// each round every process of the node issues its next request
// (workload.Pattern.Request) in a random order, and an interval holds a
// random number of consecutive requests fed through an access.Accumulator
// (one round is fed before the interval so offset distances carry over, as
// in a running daemon).
func Synthetic(scenarios []workload.Scenario, opt SyntheticOptions, rng *rand.Rand) (Set, error) {
	if opt.PerScenario == 0 {
		opt.PerScenario = 40
	}
	if opt.MinRequests == 0 {
		opt.MinRequests = 64
	}
	if opt.MaxRequests == 0 {
		opt.MaxRequests = 2048
	}
	if opt.PerScenario < 0 || opt.MinRequests < 1 || opt.MaxRequests < opt.MinRequests {
		return Set{}, fmt.Errorf("%w: synthetic options %+v", detect.ErrOptions, opt)
	}
	var s Set
	for _, sc := range scenarios {
		if err := sc.Validate(); err != nil {
			return Set{}, err
		}
		ion := max(sc.IONodes, 1)
		perProc := sc.RequestsPerProcess()
		for k := range opt.PerScenario {
			node := k % ion
			var procs []int
			for p := node; p < sc.Processes; p += ion {
				procs = append(procs, p)
			}
			if len(procs) == 0 {
				continue
			}
			lr := math.Log(float64(opt.MinRequests)) + rng.Float64()*(math.Log(float64(opt.MaxRequests))-math.Log(float64(opt.MinRequests)))
			want := int(math.Round(math.Exp(lr)))
			rounds := (want + len(procs) - 1) / len(procs)
			// Start near the centre of the run.
			span := max(perProc-rounds-1, 1)
			r0 := perProc/2 - span/4 + rng.IntN(max(span/2, 1))
			r0 = max(0, min(r0, perProc-1))
			var acc access.Accumulator
			issue := func(round, limit int) int {
				order := rng.Perm(len(procs))
				n := 0
				for _, j := range order {
					if n == limit {
						break
					}
					p := procs[j]
					file, off := sc.Request(p, round%perProc)
					acc.Request(uint32(p), uint64(p), uint64(file), off, sc.RequestSize, sc.Op)
					acc.Done(sc.RequestSize)
					n++
				}
				return n
			}
			issue(r0, len(procs))
			acc.Close(node, 0, time.Second, 1, 0)
			left := want
			for r := r0 + 1; left > 0; r++ {
				left -= issue(r, left)
			}
			s.add(acc.Close(node, 0, time.Second, 1, 0), sc.Class(), s.Len())
		}
	}
	return s, nil
}

// SyntheticDir is the pseudo data directory naming Synthetic's training
// grid (32/256 KiB) in LoadSet; SyntheticValidationDir names its 64/128 KiB
// validation grid; SyntheticSmallDir and SyntheticSmallValidationDir the
// grid of small jobs (workload.SmallGrid: 4 to 64 processes, as IOR runs).
const (
	SyntheticDir                = "synthetic"
	SyntheticValidationDir      = "synthetic-validation"
	SyntheticSmallDir           = "synthetic-small"
	SyntheticSmallValidationDir = "synthetic-small-validation"
)

// LoadSet reads dir/observations.csv (dataset package schema) and returns
// CenterRows(rows, opt). The names SyntheticDir, SyntheticValidationDir,
// SyntheticSmallDir and SyntheticSmallValidationDir generate Synthetic sets
// instead (PerExperiment*7 intervals per scenario, like 40 rows from each
// of 7 windows), seeded by seed. A comma-separated list loads each source
// and joins them (e.g. "DIR/grid,synthetic-small"). A source ending in
// "*N" (N a positive integer) counts N times: its rows are repeated, so a
// few hundred node-seconds of real runs weigh against a simulated grid of
// hundreds of thousands (e.g. "DIR/grid,DIR/real*50").
func LoadSet(dir string, opt SetOptions, seed uint64) (Set, error) {
	if i := strings.LastIndex(dir, "*"); i >= 0 && !strings.Contains(dir, ",") {
		n, err := strconv.Atoi(dir[i+1:])
		if err != nil || n < 1 || n > 10000 {
			return Set{}, fmt.Errorf("%w: source %q: the weight after * must be an integer in [1, 10000]", detect.ErrData, dir)
		}
		s, err := LoadSet(dir[:i], opt, seed)
		if err != nil {
			return Set{}, err
		}
		out := Set{}
		step := int32(0)
		if len(s.Seq) > 0 {
			step = slices.Max(s.Seq) + 1
		}
		for k := range n {
			for r := range s.Len() {
				out.X = append(out.X, s.X[r])
				out.Y = append(out.Y, s.Y[r])
				out.Op = append(out.Op, s.Op[r])
				out.Seq = append(out.Seq, s.Seq[r]+int32(k)*step)
			}
		}
		return out, nil
	}
	if strings.Contains(dir, ",") {
		var all Set
		for i, d := range strings.Split(dir, ",") {
			s, err := LoadSet(strings.TrimSpace(d), opt, seed+uint64(i))
			if err != nil {
				return Set{}, err
			}
			base := int32(0)
			if n := len(all.Seq); n > 0 {
				base = slices.Max(all.Seq) + 1
			}
			for k := range s.Seq {
				s.Seq[k] += base
			}
			all.X = append(all.X, s.X...)
			all.Y = append(all.Y, s.Y...)
			all.Op = append(all.Op, s.Op...)
			all.Seq = append(all.Seq, s.Seq...)
		}
		return all, nil
	}
	switch dir {
	case SyntheticDir, SyntheticValidationDir, SyntheticSmallDir, SyntheticSmallValidationDir:
		per := opt.PerExperiment * 7
		if per <= 0 {
			per = 280
		}
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		validation := dir == SyntheticValidationDir || dir == SyntheticSmallValidationDir
		grid := workload.Grid(validation)
		if dir == SyntheticSmallDir || dir == SyntheticSmallValidationDir {
			grid = workload.SmallGrid(validation)
		}
		return Synthetic(grid, SyntheticOptions{PerScenario: per}, rng)
	}
	rows, err := dataset.LoadObservations(dir)
	if err != nil {
		return Set{}, err
	}
	s := CenterRows(rows, opt)
	if s.Len() == 0 {
		return Set{}, fmt.Errorf("%w: %s has no labelled, non-idle observations (schedulers %v)", detect.ErrData, dir, opt.Schedulers)
	}
	return s, nil
}
