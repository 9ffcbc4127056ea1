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
// from each request to the previous one, with its counts and the bytes
// its requests asked for (0 in a knowledge base saved without them).
type Series struct {
	Requests, Reads, Writes, Files int
	Bytes                          int64 `json:",omitempty"`
	Points                         []float64
}

// size is the mean request size of s in bytes (1 when unknown).
func (s Series) size() float64 {
	if s.Bytes <= 0 || s.Requests <= 0 {
		return 1
	}
	return float64(s.Bytes) / float64(s.Requests)
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
		s.Bytes += max(r.Length, 0)
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

// KBConfig are the pattern matcher's parameters; zero values are the
// defaults.
type KBConfig struct {
	MinPatternSize int // shorter series are ignored (default 5)
	// MaxDifference bounds how far a pattern compared may be from the
	// period (default 0.10): its share of reads by this much, its file
	// count and its mean request size by this share of the larger (with
	// MaxObserved, AGIOS's filter: request, read, write and file counts
	// each within this share).
	MaxDifference float64
	// RequestRatio bounds the ratio of the request counts of a pattern
	// compared and the period (default 2): a period's count follows the
	// bandwidth, which changes with the algorithm and the machine's load,
	// not with the access pattern.
	RequestRatio float64
	// Threshold is the similarity, 0-100, at which a series joins a
	// pattern (default 70; with MaxObserved, AGIOS's 80 on its own
	// scale). The similarity is 100 x (1 - the DTW distance of the two
	// shapes per point of the two series), at least 0 (see Shape): 70
	// joins shapes 0.3 of a doubling apart per point on average (chosen
	// from measurements: docs/selection.md).
	Threshold float64
	Radius    int // FastDTW's radius (default 1)
	// Points is the most points a series is compared with (default
	// 128): a longer one is shortened to Points averages of consecutive
	// points (piecewise aggregate approximation), as FastDTW halves it,
	// so that a match costs the same however many requests a period saw.
	Points int
	// MaxPatterns caps the patterns kept (default 256): a new one past it
	// evicts the one seen longest ago. A period similar (Threshold) to
	// several patterns merges them into the most similar.
	MaxPatterns int
	// MaxObserved compares the raw series in arrival order and
	// normalises a distance by the largest distance observed so far, as
	// AGIOS did: similarity (maxDTW - d) x 100 / maxDTW. By default
	// (false) the shapes are compared (Shape), a similarity that depends
	// neither on what was compared before, nor on the request size or the
	// order in which a period's requests happened to arrive
	// (docs/selection.md).
	MaxObserved bool
}

func (c *KBConfig) defaults() error {
	if c.MinPatternSize == 0 {
		c.MinPatternSize = 5
	}
	if c.MaxDifference == 0 {
		c.MaxDifference = 0.10
	}
	if c.RequestRatio == 0 {
		c.RequestRatio = 2
	}
	if c.Threshold == 0 {
		c.Threshold = 70
		if c.MaxObserved {
			c.Threshold = 80
		}
	}
	if c.Radius == 0 {
		c.Radius = 1
	}
	if c.Points == 0 {
		c.Points = 128
	}
	if c.MaxPatterns == 0 {
		c.MaxPatterns = 256
	}
	if c.Points < 2 || c.MaxPatterns < 2 || c.MinPatternSize < 2 || !(c.MaxDifference >= 0) || !(c.RequestRatio >= 1) || !(c.Threshold >= 0 && c.Threshold <= 100) || c.Radius < 0 {
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
	// LastSeen is the knowledge base's observation count when the
	// pattern was last seen (eviction takes the lowest).
	LastSeen uint64 `json:"last_seen,omitempty"`
	// Shape is the series' shape (Shape), as compared; a pattern saved
	// without one gets its series' (already shortened) on load.
	Shape []float64 `json:"shape,omitempty"`
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
	patterns []*Pattern // by ascending ID
	nextID   int
	tick     uint64 // observations made
	maxDTW   float64
	next     map[int]map[int]int // transitions: from pattern, to pattern, count
	last     int                 // the previous period's pattern (-1: none)
	work     dtwWork
	cands    []candidate // candidates' buffer
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
	if i, ok := kb.find(id); ok {
		return kb.patterns[i]
	}
	return nil
}

// find is the index of pattern id in kb.patterns.
func (kb *KnowledgeBase) find(id int) (int, bool) {
	return slices.BinarySearchFunc(kb.patterns, id, func(p *Pattern, id int) int { return p.ID - id })
}

// shorten returns x as at most n averages of consecutive points
// (piecewise aggregate approximation; x itself if it is short enough).
func shorten(x []float64, n int) []float64 {
	if len(x) <= n {
		return x
	}
	out := make([]float64, n)
	for k := range n {
		lo, hi := k*len(x)/n, (k+1)*len(x)/n
		var s float64
		for _, v := range x[lo:hi] {
			s += v
		}
		out[k] = s / float64(hi-lo)
	}
	return out
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
	// Merged are the patterns merged into ID (the period was similar to
	// them too); Evicted the one dropped to make room (-1: none).
	Merged  []int
	Evicted int
}

// Observe matches a period's series against the known patterns. By
// default, the patterns that pass the count filter (KBConfig.MaxDifference,
// RequestRatio) are compared by their shapes (Shape) with FastDTW, and
// the series joins the most similar at Threshold or above; the patterns
// next by their lower bound (up to 4) that are at Threshold of that one
// themselves are merged into it. With none, the series is stored as a
// new pattern.
// With KBConfig.MaxObserved, AGIOS's rule: the raw series in arrival
// order, similarity by the largest distance observed. The Markov chain
// counts the transition from the previous period's pattern. A series
// shorter than MinPatternSize is ignored.
func (kb *KnowledgeBase) Observe(s Series) Match {
	if len(s.Points) < kb.cfg.MinPatternSize {
		return Match{ID: -1, Evicted: -1}
	}
	var sh []float64
	if !kb.cfg.MaxObserved {
		sh = Shape(s, kb.cfg.Points)
	}
	s.Points = shorten(s.Points, kb.cfg.Points)
	kb.tick++
	var r matched
	var cands []candidate
	if kb.cfg.MaxObserved {
		r = kb.searchObserved(s)
	} else {
		cands = kb.candidates(s, sh)
		r = kb.search(s, sh, cands)
	}
	m := Match{ID: -1, Similarity: r.sim, Evicted: -1}
	if r.best >= 0 {
		m.ID = kb.patterns[r.best].ID
		// The next candidates by bound that are alike to the one joined
		// are merged into it.
		n := 0
		for _, c := range cands {
			if n == maxMerge {
				break
			}
			if c.i != r.best {
				n++
				if kb.alike(kb.patterns[r.best], kb.patterns[c.i]) {
					m.Merged = append(m.Merged, kb.patterns[c.i].ID)
				}
			}
		}
		for _, id := range m.Merged {
			kb.merge(m.ID, id)
		}
	} else {
		for len(kb.patterns) >= kb.cfg.MaxPatterns {
			m.Evicted = kb.evict()
		}
		p := &Pattern{ID: kb.nextID, Series: Series{Requests: s.Requests, Reads: s.Reads, Writes: s.Writes, Files: s.Files, Bytes: s.Bytes, Points: slices.Clone(s.Points)}, Shape: sh}
		kb.nextID++
		kb.patterns = append(kb.patterns, p)
		m = Match{ID: p.ID, New: true, Evicted: m.Evicted}
	}
	p := kb.Pattern(m.ID)
	p.Seen++
	p.LastSeen = kb.tick
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

// alike reports whether patterns p and q are themselves at the threshold
// of each other (a period similar to both is not enough: it may sit
// between two patterns that are not).
func (kb *KnowledgeBase) alike(p, q *Pattern) bool {
	a, b := kb.shapeOf(p), kb.shapeOf(q)
	limit := kb.cfg.limit(len(a), len(b))
	return kb.work.fastWithin(a, b, kb.cfg.Radius, limit) <= limit
}

// searchObserved is AGIOS's rule: FastDTW between the raw series of the
// patterns that pass AGIOS's count filter, each distance normalised by
// the largest observed so far; the most similar at Threshold or above.
func (kb *KnowledgeBase) searchObserved(s Series) matched {
	r := matched{best: -1}
	var dists []float64
	var idx []int
	for i, p := range kb.patterns {
		if !kb.cfg.comparable(p.Series, s) {
			continue
		}
		d := kb.work.fast(s.Points, p.Series.Points, kb.cfg.Radius)
		kb.maxDTW = max(kb.maxDTW, d)
		dists, idx = append(dists, d), append(idx, i)
	}
	for k, d := range dists {
		sim := 100.0
		if kb.maxDTW > 0 {
			sim = (kb.maxDTW - d) * 100 / kb.maxDTW
		}
		if sim >= kb.cfg.Threshold && (r.best < 0 || sim > r.sim) {
			r.best, r.sim = idx[k], sim
		}
	}
	return r
}

// evict drops the pattern seen longest ago (never the last one seen)
// and its transitions, and returns its id.
func (kb *KnowledgeBase) evict() int {
	k := -1
	for i, p := range kb.patterns {
		if p.ID != kb.last && (k < 0 || p.LastSeen < kb.patterns[k].LastSeen) {
			k = i
		}
	}
	id := kb.patterns[k].ID
	kb.patterns = slices.Delete(kb.patterns, k, k+1)
	delete(kb.next, id)
	for _, t := range kb.next {
		delete(t, id)
	}
	return id
}

// merge folds pattern from into pattern into: its sightings, its
// schedulers' rewards and its transitions; from is dropped.
func (kb *KnowledgeBase) merge(into, from int) {
	i, _ := kb.find(from)
	f, p := kb.patterns[i], kb.Pattern(into)
	p.Seen += f.Seen
	p.LastSeen = max(p.LastSeen, f.LastSeen)
	for s, v := range f.Perf {
		if p.Perf == nil {
			p.Perf = map[string]Perf{}
		}
		w := p.Perf[s]
		p.Perf[s] = Perf{Sum: w.Sum + v.Sum, N: w.N + v.N}
	}
	kb.patterns = slices.Delete(kb.patterns, i, i+1)
	if t := kb.next[from]; t != nil {
		delete(kb.next, from)
		if kb.next[into] == nil {
			kb.next[into] = map[int]int{}
		}
		for to, c := range t {
			if to == from {
				to = into
			}
			kb.next[into][to] += c
		}
	}
	for _, t := range kb.next {
		if c, ok := t[from]; ok {
			delete(t, from)
			t[into] += c
		}
	}
	if kb.last == from {
		kb.last = into
	}
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
	p := kb.Pattern(id)
	if p == nil {
		return "", false
	}
	s := p.Best()
	return s, s != ""
}

// kbJSON is the persisted form.
type kbJSON struct {
	Patterns    []*Pattern          `json:"patterns"`
	NextID      int                 `json:"next_id,omitempty"` // absent: one past the last pattern's
	Tick        uint64              `json:"tick,omitempty"`
	MaxDTW      float64             `json:"max_dtw"`
	Transitions map[int]map[int]int `json:"transitions"`
	Last        int                 `json:"last"`
}

// MarshalJSON saves the knowledge base (its configuration is not saved).
func (kb *KnowledgeBase) MarshalJSON() ([]byte, error) {
	return json.Marshal(kbJSON{Patterns: kb.patterns, NextID: kb.nextID, Tick: kb.tick, MaxDTW: kb.maxDTW, Transitions: kb.next, Last: kb.last})
}

// UnmarshalJSON restores a saved knowledge base into kb (configured by
// NewKnowledgeBase), refusing one that is inconsistent.
func (kb *KnowledgeBase) UnmarshalJSON(b []byte) error {
	var v kbJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("selection: knowledge base: %w", err)
	}
	ids := map[int]bool{}
	for i, p := range v.Patterns {
		if p == nil || p.ID < 0 || i > 0 && p.ID <= v.Patterns[i-1].ID || p.Seen < 0 {
			return fmt.Errorf("selection: knowledge base: pattern %d malformed (ids must ascend from 0)", i)
		}
		ids[p.ID] = true
		v.NextID = max(v.NextID, p.ID+1)
		v.Tick = max(v.Tick, p.LastSeen)
		for s, perf := range p.Perf {
			if perf.N < 0 || math.IsNaN(perf.Sum) || math.IsInf(perf.Sum, 0) {
				return fmt.Errorf("selection: knowledge base: pattern %d, scheduler %q: %+v", i, s, perf)
			}
		}
	}
	for from, t := range v.Transitions {
		for to, c := range t {
			if !ids[from] || !ids[to] || c < 0 {
				return fmt.Errorf("selection: knowledge base: transition %d -> %d (%d) between unknown patterns", from, to, c)
			}
		}
	}
	if v.Last < -1 || v.Last >= 0 && !ids[v.Last] || math.IsNaN(v.MaxDTW) || v.MaxDTW < 0 {
		return fmt.Errorf("selection: knowledge base: last pattern %d unknown, or max DTW %v", v.Last, v.MaxDTW)
	}
	if v.Transitions == nil {
		v.Transitions = map[int]map[int]int{}
	}
	if kb.cfg.MinPatternSize == 0 { // a zero KnowledgeBase: the default parameters
		if err := kb.cfg.defaults(); err != nil {
			return err
		}
	}
	for i, p := range v.Patterns { // saved with longer series: compared as Observe shortens
		p.Series.Points = shorten(p.Series.Points, kb.cfg.Points)
		if slices.ContainsFunc(p.Shape, func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }) {
			return fmt.Errorf("selection: knowledge base: pattern %d: shape not finite", i)
		}
		if p.Shape != nil {
			p.Shape = shorten(p.Shape, kb.cfg.Points)
			slices.Sort(p.Shape) // a shape is sorted (the lower bound relies on it)
		}
		if p.Series.Requests < 0 || p.Series.Reads < 0 || p.Series.Writes < 0 || p.Series.Files < 0 || p.Series.Bytes < 0 {
			return fmt.Errorf("selection: knowledge base: pattern %d: negative counts %+v", i, p.Series)
		}
	}
	kb.patterns, kb.nextID, kb.tick, kb.maxDTW, kb.next, kb.last = v.Patterns, v.NextID, v.Tick, v.MaxDTW, v.Transitions, v.Last
	return nil
}
