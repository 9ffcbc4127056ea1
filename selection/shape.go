package selection

import (
	"cmp"
	"math"
	"slices"
)

// Shape is what the knowledge base compares of a series by default: each
// distance between consecutive requests in request sizes (the series'
// mean), on a signed log scale, sign(d) x log2(1 + |d| / size), sorted,
// and shortened to at most points averages of consecutive values (nil
// for an empty series).
//
// Each step removes a difference between two runs of one workload that
// says nothing of its pattern: the log scale keeps a jump of 30 or of 40
// requests apart (two processes that drifted apart) close, while a
// sequential step (1) stays far from a strided one; the request size
// makes the shape independent of it (it is compared on its own, see
// KBConfig.MaxDifference); sorting makes it independent of the order in
// which the processes' requests happened to arrive, which follows the
// timing of the run rather than the application (on the simulator's
// traces of the twelve selection tests, comparing the series in arrival
// order recognised a workload's second run 0.62 to 0.81 of the time
// where sorted reached 0.79 to 0.92; docs/selection.md).
func Shape(s Series, points int) []float64 {
	if len(s.Points) == 0 {
		return nil
	}
	size := s.size()
	out := make([]float64, len(s.Points))
	for i, d := range s.Points {
		out[i] = signedLog(d / size)
	}
	slices.Sort(out)
	out = shorten(out, max(points, 1))
	slices.Sort(out) // averages of sorted runs may differ from sorted by rounding
	return out
}

// signedLog is sign(x) x log2(1 + |x|).
func signedLog(x float64) float64 {
	if x < 0 {
		return -math.Log2(1 - x)
	}
	return math.Log2(1 + x)
}

// nearestSum is the sum over a's values of the distance to the nearest
// of b's, a and b sorted ascending, abandoned (a partial sum above limit)
// once it exceeds limit. Every row of a warping matrix holds a cell of
// the path, so this is a lower bound of DTW(a, b), of any windowed DTW
// and of FastDTW.
func nearestSum(a, b []float64, limit float64) float64 {
	var s float64
	j := 0
	for _, x := range a {
		for j+1 < len(b) && b[j+1] <= x {
			j++
		}
		d := math.Abs(x - b[j])
		if j+1 < len(b) {
			d = min(d, b[j+1]-x)
		}
		if s += d; s > limit {
			return s
		}
	}
	return s
}

// lowerBound is a lower bound of DTW(a, b) for sorted a and b: the
// larger of the two nearest sums (abandoned above limit).
func lowerBound(a, b []float64, limit float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == len(b) {
			return 0
		}
		return math.Inf(1)
	}
	lb := nearestSum(a, b, limit)
	if lb > limit {
		return lb
	}
	return max(lb, nearestSum(b, a, limit))
}

// comparable reports whether pattern q is close enough to series s by
// its counts to be compared (KBConfig.MaxDifference, RequestRatio).
func (c *KBConfig) comparable(q, s Series) bool {
	d := c.MaxDifference
	if c.MaxObserved {
		return within(q.Requests, s.Requests, d) && within(q.Reads, s.Reads, d) && within(q.Writes, s.Writes, d) && within(q.Files, s.Files, d)
	}
	if q.Requests <= 0 || s.Requests <= 0 {
		return q.Requests == s.Requests
	}
	lo, hi := min(q.Requests, s.Requests), max(q.Requests, s.Requests)
	if float64(hi) > c.RequestRatio*float64(lo) {
		return false
	}
	if math.Abs(float64(q.Reads)/float64(q.Requests)-float64(s.Reads)/float64(s.Requests)) > d {
		return false
	}
	qs, ss := q.size(), s.size()
	return within(q.Files, s.Files, d) && math.Abs(qs-ss) <= d*max(qs, ss)
}

// similarity is 100 x (1 - dist per point of two series of n and m
// points), at least 0.
func similarity(dist float64, n, m int) float64 {
	return max(0, 100*(1-dist/float64(n+m)))
}

// limit is the largest distance between shapes of n and m points at
// which a series joins a pattern: similarity Threshold.
func (c *KBConfig) limit(n, m int) float64 {
	return (1 - c.Threshold/100) * float64(n+m)
}

// matched is the outcome of a search of the knowledge base for a shape:
// the index of the most similar pattern at the threshold or above (-1:
// none, ties: the lowest index) and its similarity.
type matched struct {
	best int
	sim  float64
}

// candidate is a pattern that passes the count filter and whose lower
// bound does not rule it out: its index and the bound's similarity (no
// distance can be more similar).
type candidate struct {
	i     int
	bound float64
}

// maxMerge is the most patterns a period's match merges: the candidates
// with the highest bounds after the one joined, those alike to it.
const maxMerge = 4

// candidates lists the patterns that pass the count filter and whose
// lower bound (lowerBound) leaves them at the threshold or above, by
// descending bound (ties: ascending index).
func (kb *KnowledgeBase) candidates(s Series, sh []float64) []candidate {
	c := kb.cands[:0]
	for i, p := range kb.patterns {
		if !kb.cfg.comparable(p.Series, s) {
			continue
		}
		ps := kb.shapeOf(p)
		limit := kb.cfg.limit(len(sh), len(ps))
		lb := lowerBound(sh, ps, limit)
		// The bound and the distance sum the same terms in another
		// order: a margin for rounding keeps the bound below.
		lb = max(0, lb*(1-1e-9)-1e-12)
		if lb > limit {
			continue
		}
		c = append(c, candidate{i, similarity(lb, len(sh), len(ps))})
	}
	slices.SortFunc(c, func(a, b candidate) int {
		if a.bound != b.bound {
			return cmp.Compare(b.bound, a.bound)
		}
		return a.i - b.i
	})
	kb.cands = c
	return c
}

// search finds the most similar pattern at the threshold or above for
// series s with shape sh: the candidates by descending bound, each
// compared with FastDTW abandoned once it cannot reach the threshold nor
// the best similarity so far, until a bound falls below that similarity.
// The outcome is the exhaustive search's (searchAll).
func (kb *KnowledgeBase) search(s Series, sh []float64, cands []candidate) matched {
	r := matched{best: -1}
	for _, c := range cands {
		if r.best >= 0 && c.bound < r.sim {
			break // no pattern left can be as similar
		}
		ps := kb.shapeOf(kb.patterns[c.i])
		limit := kb.cfg.limit(len(sh), len(ps))
		if r.best >= 0 { // beat (or tie) the best so far
			limit = min(limit, (1-r.sim/100)*float64(len(sh)+len(ps))*(1+1e-9)+1e-12)
		}
		d := kb.work.fastWithin(sh, ps, kb.cfg.Radius, limit)
		if !(d <= kb.cfg.limit(len(sh), len(ps))) {
			continue
		}
		sim := similarity(d, len(sh), len(ps))
		if r.best < 0 || sim > r.sim || sim == r.sim && c.i < r.best {
			r.best, r.sim = c.i, sim
		}
	}
	return r
}

// searchAll is search without the lower bound nor early abandoning:
// FastDTW with every pattern that passes the count filter (the
// reference search is measured against).
func (kb *KnowledgeBase) searchAll(s Series, sh []float64) matched {
	r := matched{best: -1}
	for i, p := range kb.patterns {
		if !kb.cfg.comparable(p.Series, s) {
			continue
		}
		ps := kb.shapeOf(p)
		d := FastDTW(sh, ps, kb.cfg.Radius)
		if !(d <= kb.cfg.limit(len(sh), len(ps))) {
			continue
		}
		if sim := similarity(d, len(sh), len(ps)); r.best < 0 || sim > r.sim {
			r.best, r.sim = i, sim
		}
	}
	return r
}

// shapeOf is p's shape (computed from its series when it was saved
// without one).
func (kb *KnowledgeBase) shapeOf(p *Pattern) []float64 {
	if p.Shape == nil {
		p.Shape = Shape(p.Series, kb.cfg.Points)
	}
	return p.Shape
}
