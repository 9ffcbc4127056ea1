package selection

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Request is one request an I/O node received in a period, in arrival
// order.
type Request struct {
	File   uint64
	Offset int64
	Length int64
	Write  bool
}

// fileSpacing places files on one virtual disk, far apart, so that the
// distance between requests to different files is measured too (seed
// 003): file k of a period starts at k x fileSpacing.
const fileSpacing = 1 << 40

// Series is a period's access series: the distance on the virtual disk
// from each request to the previous one, with its counts.
type Series struct {
	Requests, Reads, Writes, Files int
	Points                         []float64
}

// SeriesOf builds the access series of a period's requests.
func SeriesOf(reqs []Request) Series {
	s := Series{Requests: len(reqs)}
	base := map[uint64]int64{}
	var prev int64
	for i, r := range reqs {
		b, ok := base[r.File]
		if !ok {
			b = int64(len(base)) * fileSpacing
			base[r.File] = b
		}
		if r.Write {
			s.Writes++
		} else {
			s.Reads++
		}
		pos := b + r.Offset
		if i > 0 {
			s.Points = append(s.Points, float64(pos-prev))
		}
		prev = pos
	}
	s.Files = len(base)
	return s
}

// KBConfig are the pattern matcher's parameters; zero values are AGIOS's.
type KBConfig struct {
	MinPatternSize int     // shorter series are ignored (default 5)
	MaxDifference  float64 // compare only patterns whose counts differ by at most this share (default 0.10)
	// Threshold is the similarity, 0-100, at which a series joins a
	// pattern (default 80 with MaxObserved, AGIOS's; 50 otherwise: on
	// repeated application patterns whose arrivals are a little out of
	// order our similarity is 60-90 within a pattern, 0-6 across).
	Threshold float64
	Radius    int // FastDTW's radius (default 1)
	// MaxObserved normalises a distance by the largest distance observed
	// so far, as AGIOS did: similarity (maxDTW - d) x 100 / maxDTW. By
	// default (false) a distance is normalised by the two series' own
	// magnitude, 100 x (1 - d / (sum |a| + sum |b|)): a similarity that
	// does not depend on what else was compared before, nor on the units
	// of the offsets (docs/selection.md).
	MaxObserved bool
}

func (c *KBConfig) defaults() error {
	if c.MinPatternSize == 0 {
		c.MinPatternSize = 5
	}
	if c.MaxDifference == 0 {
		c.MaxDifference = 0.10
	}
	if c.Threshold == 0 {
		c.Threshold = 50
		if c.MaxObserved {
			c.Threshold = 80
		}
	}
	if c.Radius == 0 {
		c.Radius = 1
	}
	if c.MinPatternSize < 2 || c.MaxDifference < 0 || c.Threshold < 0 || c.Threshold > 100 || c.Radius < 0 {
		return fmt.Errorf("%w: pattern matcher %+v", ErrConfig, *c)
	}
	return nil
}

// Perf is a scheduler's measured reward on a pattern.
type Perf struct {
	Sum float64 `json:"sum"`
	N   int     `json:"n"`
}

// Pattern is a known access pattern: the series it was first seen with
// and the reward of each scheduler that ran while it was seen.
type Pattern struct {
	ID     int             `json:"id"`
	Series Series          `json:"series"`
	Seen   int             `json:"seen"`
	Perf   map[string]Perf `json:"perf,omitempty"`

	l1 float64 // sum of |Series.Points|, cached (0: not yet)
}

// magnitude is the sum of |Series.Points|.
func (p *Pattern) magnitude() float64 {
	if p.l1 == 0 {
		p.l1 = l1(p.Series.Points)
	}
	return p.l1
}

// Best is the scheduler with the highest mean reward on p ("" if none).
func (p *Pattern) Best() string {
	best, bestV := "", math.Inf(-1)
	names := make([]string, 0, len(p.Perf))
	for s := range p.Perf {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		if v := p.Perf[s]; v.N > 0 && v.Sum/float64(v.N) > bestV {
			best, bestV = s, v.Sum/float64(v.N)
		}
	}
	return best
}

// KnowledgeBase holds the access patterns seen and the Markov chain of
// their succession (the JLESC AGIOS selection report's pattern matching). A pure state machine.
type KnowledgeBase struct {
	cfg      KBConfig
	patterns []*Pattern
	maxDTW   float64
	next     map[int]map[int]int // transitions: from pattern, to pattern, count
	last     int                 // the previous period's pattern (-1: none)
	work     dtwWork
}

// NewKnowledgeBase returns an empty knowledge base.
func NewKnowledgeBase(cfg KBConfig) (*KnowledgeBase, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &KnowledgeBase{cfg: cfg, next: map[int]map[int]int{}, last: -1}, nil
}

// Len is the number of known patterns.
func (kb *KnowledgeBase) Len() int { return len(kb.patterns) }

// Pattern returns known pattern id (nil if unknown).
func (kb *KnowledgeBase) Pattern(id int) *Pattern {
	if id < 0 || id >= len(kb.patterns) {
		return nil
	}
	return kb.patterns[id]
}

// within reports whether counts a and b differ by at most the share d.
func within(a, b int, d float64) bool {
	return math.Abs(float64(a-b)) <= d*math.Max(float64(max(a, b)), 1)
}

// Match is the outcome of Observe.
type Match struct {
	ID         int     // the pattern the period is (-1: ignored, too short)
	New        bool    // a new pattern was stored
	Similarity float64 // with the pattern joined (0-100; 0 for a new one)
}

// Observe matches a period's series against the known patterns: those
// whose request, read, write and file counts are within MaxDifference are
// compared with FastDTW, their similarity from 0 to 100 (see
// KBConfig.MaxObserved); the most similar at
// Threshold or more is joined, else the series is stored as a new
// pattern. The Markov chain counts the transition from the previous
// period's pattern. A series shorter than MinPatternSize is ignored.
func (kb *KnowledgeBase) Observe(s Series) Match {
	if len(s.Points) < kb.cfg.MinPatternSize {
		return Match{ID: -1}
	}
	best, bestSim := -1, math.Inf(-1)
	d := kb.cfg.MaxDifference
	mag := l1(s.Points)
	var dists []float64 // AGIOS's normalisation: every distance, normalised at the end
	var cands []int
	for _, p := range kb.patterns {
		q := p.Series
		if !within(q.Requests, s.Requests, d) || !within(q.Reads, s.Reads, d) || !within(q.Writes, s.Writes, d) || !within(q.Files, s.Files, d) {
			continue
		}
		if kb.cfg.MaxObserved {
			dist := kb.work.fast(s.Points, q.Points, kb.cfg.Radius)
			kb.maxDTW = max(kb.maxDTW, dist)
			dists, cands = append(dists, dist), append(cands, p.ID)
			continue
		}
		m := mag + p.magnitude()
		if m == 0 {
			best, bestSim = p.ID, 100
			break
		}
		// A comparison that can reach neither Threshold nor the best
		// similarity so far is abandoned as soon as that shows.
		floor := max(kb.cfg.Threshold, bestSim)
		dist := kb.work.fastWithin(s.Points, q.Points, kb.cfg.Radius, (1-floor/100)*m)
		if math.IsInf(dist, 1) {
			continue
		}
		if sim := 100 * (1 - dist/m); sim > bestSim {
			best, bestSim = p.ID, sim
		}
	}
	for k, dist := range dists {
		sim := 100.0
		if kb.maxDTW > 0 {
			sim = (kb.maxDTW - dist) * 100 / kb.maxDTW
		}
		if sim > bestSim {
			best, bestSim = cands[k], sim
		}
	}
	m := Match{ID: best, Similarity: bestSim}
	if best < 0 || bestSim < kb.cfg.Threshold {
		p := &Pattern{ID: len(kb.patterns), Series: Series{Requests: s.Requests, Reads: s.Reads, Writes: s.Writes, Files: s.Files, Points: slices.Clone(s.Points)}}
		kb.patterns = append(kb.patterns, p)
		m = Match{ID: p.ID, New: true}
	}
	kb.patterns[m.ID].Seen++
	if kb.last >= 0 {
		t := kb.next[kb.last]
		if t == nil {
			t = map[int]int{}
			kb.next[kb.last] = t
		}
		t[m.ID]++
	}
	kb.last = m.ID
	return m
}

// l1 is the sum of |x|.
func l1(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += math.Abs(v)
	}
	return s
}

// Credit records scheduler's reward bw on pattern id.
func (kb *KnowledgeBase) Credit(id int, scheduler string, bw float64) error {
	p := kb.Pattern(id)
	if p == nil {
		return fmt.Errorf("selection: unknown pattern %d", id)
	}
	if p.Perf == nil {
		p.Perf = map[string]Perf{}
	}
	v := p.Perf[scheduler]
	v.Sum += bw
	v.N++
	p.Perf[scheduler] = v
	return nil
}

// Predict is the pattern the Markov chain expects after the last one
// observed: its most frequent successor (ties: the lowest id).
func (kb *KnowledgeBase) Predict() (int, bool) {
	t := kb.next[kb.last]
	best, n := -1, 0
	for id, c := range t {
		if c > n || c == n && id < best {
			best, n = id, c
		}
	}
	return best, best >= 0
}

// Advise is the best-known scheduler of the predicted next pattern ("",
// false when there is no prediction or it has no measurement: let the
// bandit decide).
func (kb *KnowledgeBase) Advise() (string, bool) {
	id, ok := kb.Predict()
	if !ok {
		return "", false
	}
	s := kb.patterns[id].Best()
	return s, s != ""
}

// kbJSON is the persisted form.
type kbJSON struct {
	Patterns    []*Pattern          `json:"patterns"`
	MaxDTW      float64             `json:"max_dtw"`
	Transitions map[int]map[int]int `json:"transitions"`
	Last        int                 `json:"last"`
}

// MarshalJSON saves the knowledge base (its configuration is not saved).
func (kb *KnowledgeBase) MarshalJSON() ([]byte, error) {
	return json.Marshal(kbJSON{Patterns: kb.patterns, MaxDTW: kb.maxDTW, Transitions: kb.next, Last: kb.last})
}

// UnmarshalJSON restores a saved knowledge base into kb (configured by
// NewKnowledgeBase), refusing one that is inconsistent.
func (kb *KnowledgeBase) UnmarshalJSON(b []byte) error {
	var v kbJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("selection: knowledge base: %w", err)
	}
	n := len(v.Patterns)
	for i, p := range v.Patterns {
		if p == nil || p.ID != i || p.Seen < 0 {
			return fmt.Errorf("selection: knowledge base: pattern %d malformed", i)
		}
		for s, perf := range p.Perf {
			if perf.N < 0 || math.IsNaN(perf.Sum) || math.IsInf(perf.Sum, 0) {
				return fmt.Errorf("selection: knowledge base: pattern %d, scheduler %q: %+v", i, s, perf)
			}
		}
	}
	for from, t := range v.Transitions {
		for to, c := range t {
			if from < 0 || from >= n || to < 0 || to >= n || c < 0 {
				return fmt.Errorf("selection: knowledge base: transition %d -> %d (%d) outside %d patterns", from, to, c, n)
			}
		}
	}
	if v.Last < -1 || v.Last >= n || math.IsNaN(v.MaxDTW) || v.MaxDTW < 0 {
		return fmt.Errorf("selection: knowledge base: last pattern %d of %d, max DTW %v", v.Last, n, v.MaxDTW)
	}
	if v.Transitions == nil {
		v.Transitions = map[int]map[int]int{}
	}
	if kb.cfg.MinPatternSize == 0 { // a zero KnowledgeBase: the default parameters
		if err := kb.cfg.defaults(); err != nil {
			return err
		}
	}
	kb.patterns, kb.maxDTW, kb.next, kb.last = v.Patterns, v.MaxDTW, v.Transitions, v.Last
	return nil
}
