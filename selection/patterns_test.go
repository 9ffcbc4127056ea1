package selection

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// workloadPeriod generates one period of an application pattern: procs
// processes issuing reqs requests of size each to one shared file (1D
// strided or contiguous blocks) or to a file each, their arrivals
// interleaved with a little disorder.
type workloadPeriod struct {
	procs, reqs int
	size        int64
	shared      bool
	strided     bool
	write       bool
}

func (w workloadPeriod) requests(rng *rand.Rand, iter int) []Request {
	per := w.reqs / w.procs
	var out []Request
	for k := range per {
		for p := range w.procs {
			r := Request{Length: w.size, Write: w.write}
			i := int64(iter*per + k)
			switch {
			case !w.shared:
				r.File, r.Offset = uint64(p), i*w.size
			case w.strided:
				r.Offset = (i*int64(w.procs) + int64(p)) * w.size
			default:
				r.Offset = int64(p)*int64(per)*w.size*1000 + i*w.size
			}
			out = append(out, r)
		}
	}
	for i := 1; i < len(out); i++ { // a little disorder in the arrivals
		if rng.IntN(10) == 0 {
			out[i], out[i-1] = out[i-1], out[i]
		}
	}
	return out
}

var testPatterns = []workloadPeriod{
	{procs: 16, reqs: 128, size: 32 << 10, shared: true, strided: true, write: true},
	{procs: 16, reqs: 128, size: 32 << 10, shared: true, strided: true},
	{procs: 16, reqs: 128, size: 1 << 20, shared: true, strided: true, write: true},
	{procs: 16, reqs: 128, size: 32 << 10, shared: true, write: true},
	{procs: 16, reqs: 128, size: 32 << 10, write: true},
	{procs: 8, reqs: 128, size: 32 << 10, write: true},
	{procs: 32, reqs: 256, size: 64 << 10, shared: true, strided: true},
	{procs: 32, reqs: 256, size: 64 << 10},
}

// A repeated pattern is recognised: each of 8 application patterns seen
// 25 times in random order (arrivals a little out of order, offsets
// moving on each time) is matched to the entry its first occurrence made
// at least 95% of the time.
func TestRepeatedPatternsRecognised(t *testing.T) {
	share, entries := recognised(t, KBConfig{})
	t.Logf("%.1f%% of repeats matched to their pattern's entry; %d entries for %d patterns", 100*share, entries, len(testPatterns))
	if share < 0.95 || entries != len(testPatterns) {
		t.Errorf("%.1f%% of repeats recognised in %d entries, want >= 95%% in %d", 100*share, entries, len(testPatterns))
	}
	// AGIOS's normalisation by the largest distance observed, threshold
	// 80, on the same periods: why the default changed (docs/selection.md).
	agiosShare, agiosEntries := recognised(t, KBConfig{MaxObserved: true})
	t.Logf("AGIOS's rules: %.1f%% recognised, %d entries", 100*agiosShare, agiosEntries)
	if agiosShare >= share {
		t.Errorf("AGIOS's normalisation recognises %.1f%%, ours %.1f%%: the default should be the better", 100*agiosShare, 100*share)
	}
}

// recognised runs the repeated-patterns experiment with cfg: the share of
// repeats matched to their first occurrence's entry, and the entries made.
func recognised(t *testing.T, cfg KBConfig) (float64, int) {
	kb, err := NewKnowledgeBase(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var order []int
	for i := range testPatterns {
		for range 25 {
			order = append(order, i)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	entry := map[int]int{}
	right, repeats := 0, 0
	for iter, i := range order {
		m := kb.Observe(SeriesOf(testPatterns[i].requests(rng, iter)))
		if m.ID < 0 {
			t.Fatal("a period of 128 requests was ignored")
		}
		if e, ok := entry[i]; !ok {
			entry[i] = m.ID
		} else {
			repeats++
			if m.ID == e {
				right++
			}
		}
	}
	return float64(right) / float64(repeats), kb.Len()
}

// The Markov chain predicts the pattern that followed the last one most
// often, and the knowledge base advises that pattern's best scheduler.
func TestMarkovPredictsTheNextPatternsScheduler(t *testing.T) {
	kb, _ := NewKnowledgeBase(KBConfig{})
	rng := rand.New(rand.NewPCG(9, 10))
	w, r := testPatterns[0], testPatterns[1] // strided writes, then reads
	var ids [2]int
	for iter := range 6 {
		for k, p := range []workloadPeriod{w, r} {
			m := kb.Observe(SeriesOf(p.requests(rng, iter)))
			ids[k] = m.ID
			kb.Credit(m.ID, "TO-agg", map[int]float64{0: 90, 1: 40}[k])
			kb.Credit(m.ID, "SJF", map[int]float64{0: 60, 1: 70}[k])
		}
	}
	// The last period was the read pattern: the write pattern comes next.
	if next, ok := kb.Predict(); !ok || next != ids[0] {
		t.Fatalf("after the reads: predicted %d (%v), want the writes' %d", next, ok, ids[0])
	}
	if s, ok := kb.Advise(); !ok || s != "TO-agg" {
		t.Errorf("advice %q (%v), want TO-agg, the writes' best", s, ok)
	}
	kb.Observe(SeriesOf(w.requests(rng, 7)))
	if s, _ := kb.Advise(); s != "SJF" {
		t.Errorf("after the writes: advice %q, want SJF, the reads' best", s)
	}
	// Saved and restored, it predicts the same.
	b, err := json.Marshal(kb)
	if err != nil {
		t.Fatal(err)
	}
	kb2, _ := NewKnowledgeBase(KBConfig{})
	if err := json.Unmarshal(b, kb2); err != nil {
		t.Fatal(err)
	}
	if s, _ := kb2.Advise(); s != "SJF" || kb2.Len() != kb.Len() {
		t.Errorf("restored: advice %q with %d patterns, want SJF with %d", s, kb2.Len(), kb.Len())
	}
}

func TestShortSeriesIgnored(t *testing.T) {
	kb, _ := NewKnowledgeBase(KBConfig{})
	if m := kb.Observe(SeriesOf(make([]Request, 5))); m.ID != -1 || kb.Len() != 0 {
		t.Errorf("a 4-point series: %+v, %d patterns; want ignored", m, kb.Len())
	}
}

// FuzzKnowledgeBaseJSON: a saved knowledge base from anywhere is refused
// or restored into one that works.
func FuzzKnowledgeBaseJSON(f *testing.F) {
	kb, _ := NewKnowledgeBase(KBConfig{})
	rng := rand.New(rand.NewPCG(1, 1))
	for i, p := range testPatterns[:3] {
		m := kb.Observe(SeriesOf(p.requests(rng, i)))
		kb.Credit(m.ID, "SJF", 10)
	}
	b, _ := json.Marshal(kb)
	f.Add(b)
	f.Add([]byte(`{"patterns":[],"last":-1}`))
	f.Add([]byte(`{"patterns":[{"id":0}],"transitions":{"0":{"5":1}},"last":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		kb, _ := NewKnowledgeBase(KBConfig{})
		if err := json.Unmarshal(b, kb); err != nil {
			return
		}
		kb.Predict()
		kb.Advise()
		kb.Observe(SeriesOf(testPatterns[0].requests(rand.New(rand.NewPCG(2, 2)), 0)))
	})
}

// periodKind is a random application pattern as one I/O node sees it:
// a share seq of its requests follow the previous one, the others jump
// by about 2^mag requests, backwards with probability back.
type periodKind struct{ seq, mag, back float64 }

func randomKind(rng *rand.Rand) periodKind {
	return periodKind{seq: rng.Float64(), mag: 1 + 19*rng.Float64(), back: rng.Float64()}
}

// period is one period of k: reqs writes of 32 KiB to one file.
func (k periodKind) period(rng *rand.Rand, reqs int) Series {
	const size = 32 << 10
	s := Series{Requests: reqs, Writes: reqs, Files: 1, Bytes: int64(reqs) * size}
	for range reqs - 1 {
		d := float64(size)
		if rng.Float64() >= k.seq {
			d *= math.Round(math.Exp2(k.mag + 0.5*rng.NormFloat64()))
			if rng.Float64() < k.back {
				d = -d
			}
		}
		s.Points = append(s.Points, d)
	}
	return s
}

// knownPatterns is a knowledge base of n patterns stored as they come
// (no matching): periods of random application patterns of 512 requests
// that all pass the count filter, so that every one is a candidate.
func knownPatterns(tb testing.TB, rng *rand.Rand, cfg KBConfig, n int) *KnowledgeBase {
	cfg.MaxPatterns = max(cfg.MaxPatterns, n+1)
	kb, err := NewKnowledgeBase(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		s := randomKind(rng).period(rng, 512)
		kb.patterns = append(kb.patterns, &Pattern{ID: i, Series: s, Shape: Shape(s, kb.cfg.Points)})
		kb.nextID = i + 1
	}
	return kb
}

// The search with lower bounds and early abandoning finds what comparing
// every pattern finds: the same pattern, the same similarity, on random
// periods (some near a known pattern, some not) and on the simulator's
// kind of series (the repeated application patterns).
func TestSearchEqualsExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	found, periods := 0, 0
	for _, tc := range []struct {
		cfg KBConfig
		n   int
	}{{KBConfig{Points: 64}, 150}, {KBConfig{Points: 512}, 150}, {KBConfig{Points: 128, Threshold: 90}, 10}, {KBConfig{Points: 512, Threshold: 95}, 10}} {
		cfg, pts := tc.cfg, tc.cfg.Points
		kb := knownPatterns(t, rng, cfg, tc.n)
		for _, w := range testPatterns {
			for iter := range 5 {
				s := SeriesOf(w.requests(rng, iter))
				s.Requests, s.Reads, s.Writes, s.Files = 512, 0, 512, 1
				kb.patterns = append(kb.patterns, &Pattern{ID: kb.nextID, Series: s, Shape: Shape(s, pts)})
				kb.nextID++
			}
		}
		for k := range 60 {
			var s Series
			if k%2 == 0 { // a new random pattern
				s = randomKind(rng).period(rng, 512)
			} else {
				w := testPatterns[rng.IntN(len(testPatterns))]
				s = SeriesOf(w.requests(rng, 10+k))
				s.Requests, s.Reads, s.Writes, s.Files = 512, 0, 512, 1
			}
			sh := Shape(s, pts)
			got, want := kb.search(s, sh, kb.candidates(s, sh)), kb.searchAll(s, sh)
			if got.best != want.best || got.sim != want.sim {
				t.Fatalf("%+v, period %d: search found %d (similarity %v), every pattern compared %d (%v)", pts, k, got.best, got.sim, want.best, want.sim)
			}
			periods++
			if got.best >= 0 {
				found++
			}
		}
	}
	t.Logf("%d of %d periods matched a pattern, as the exhaustive search", found, periods)
	if found < periods/10 || found > periods*9/10 {
		t.Errorf("%d of %d periods matched: the test should see both matches and misses", found, periods)
	}
}

// BenchmarkMatch1000 matches one period of 512 requests against a
// knowledge base of 1,000 patterns that all pass the count filter, as
// Observe does: the shape computed, the candidates listed (the lower
// bound rules out those it can) and the best found (FastDTW, abandoned
// once it cannot win). points is the series' length compared
// (KBConfig.Points: 128 by default, 512 the driver's whole series);
// kinds=random are 1,000 random application patterns, kinds=one 1,000
// periods of one pattern (all alike: the worst case, which a knowledge
// base built by Observe does not reach, as it joins or merges them).
func BenchmarkMatch1000(b *testing.B) {
	for _, one := range []bool{false, true} {
		for _, pts := range []int{128, 512} {
			b.Run(fmt.Sprintf("kinds=%s/points=%d", map[bool]string{false: "random", true: "one"}[one], pts), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(3, 4))
				var kb *KnowledgeBase
				kind := randomKind(rng)
				if one {
					kb, _ = NewKnowledgeBase(KBConfig{Points: pts, MaxPatterns: 1001})
					for i := range 1000 {
						s := kind.period(rng, 512)
						kb.patterns = append(kb.patterns, &Pattern{ID: i, Series: s, Shape: Shape(s, pts)})
					}
				} else {
					kb = knownPatterns(b, rng, KBConfig{Points: pts}, 1000)
				}
				var periods []Series
				for range 64 {
					k := kind
					if !one {
						k = randomKind(rng)
					}
					periods = append(periods, k.period(rng, 512))
				}
				matched, compared := 0, 0
				b.ReportAllocs()
				k := 0
				for b.Loop() {
					s := periods[k%len(periods)]
					k++
					sh := Shape(s, pts)
					c := kb.candidates(s, sh)
					if kb.search(s, sh, c).best >= 0 {
						matched++
					}
					compared += len(c)
				}
				b.ReportMetric(float64(matched)/float64(k), "matched/op")
				b.ReportMetric(float64(compared)/float64(k), "candidates/op")
			})
		}
	}
}

// The knowledge base stays within MaxPatterns: past it, the pattern seen
// longest ago goes, with its transitions; a period similar to two
// patterns merges them (their sightings and rewards summed).
func TestKnowledgeBaseIsBounded(t *testing.T) {
	kb, err := NewKnowledgeBase(KBConfig{MaxPatterns: 4})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 40 {
		for _, p := range testPatterns {
			kb.Observe(SeriesOf(p.requests(rng, iter)))
			if kb.Len() > 4 {
				t.Fatalf("%d patterns, want at most 4", kb.Len())
			}
		}
	}
	// Recently seen patterns stay; transitions name only known ones.
	for from, to := range kb.next {
		if kb.Pattern(from) == nil {
			t.Errorf("transitions from evicted pattern %d", from)
		}
		for id := range to {
			if kb.Pattern(id) == nil {
				t.Errorf("transition %d -> evicted %d", from, id)
			}
		}
	}
	b, _ := json.Marshal(kb)
	kb2, _ := NewKnowledgeBase(KBConfig{MaxPatterns: 4})
	if err := json.Unmarshal(b, kb2); err != nil {
		t.Fatalf("a bounded knowledge base does not restore: %v", err)
	}

	// Merging: two patterns stored apart (a strict threshold), then a
	// period similar to both at a looser one.
	a := Series{Requests: 8, Writes: 8, Files: 1, Points: []float64{1, 1, 1, 1, 1, 1, 1}}
	c := Series{Requests: 8, Writes: 8, Files: 1, Points: []float64{1, 1, 1, 1, 1, 1, 1.3}}
	mid := Series{Requests: 8, Writes: 8, Files: 1, Points: []float64{1, 1, 1, 1, 1, 1, 1.1}}
	kb, _ = NewKnowledgeBase(KBConfig{Threshold: 99})
	ma, mc := kb.Observe(a), kb.Observe(c)
	_ = kb.Credit(ma.ID, "sjf", 10)
	_ = kb.Credit(mc.ID, "sjf", 30)
	if kb.Len() != 2 {
		t.Fatalf("%d patterns, want 2", kb.Len())
	}
	kb.cfg.Threshold = 95
	m := kb.Observe(mid)
	if kb.Len() != 1 || len(m.Merged) != 1 {
		t.Fatalf("after a period similar to both: %d patterns, merged %v; want 1 and one merged", kb.Len(), m.Merged)
	}
	p := kb.Pattern(m.ID)
	if p.Seen != 3 || p.Perf["sjf"] != (Perf{Sum: 40, N: 2}) {
		t.Errorf("merged pattern seen %d, sjf %+v; want 3 and {40 2}", p.Seen, p.Perf["sjf"])
	}
	if next, ok := kb.Predict(); !ok || next != m.ID {
		t.Errorf("predicted %d (%v), want the merged %d (every transition ends there)", next, ok, m.ID)
	}
	// A period between two patterns that are not alike joins one and
	// merges neither: shapes 1 and 2.2 in their last point (similarity
	// 91.4), the period's 1.6 (95.7 from both), threshold 95.
	kb, _ = NewKnowledgeBase(KBConfig{Threshold: 95})
	last := func(shape float64) Series {
		return Series{Requests: 8, Writes: 8, Files: 1, Points: []float64{1, 1, 1, 1, 1, 1, math.Exp2(shape) - 1}}
	}
	kb.Observe(last(1))
	kb.Observe(last(2.2))
	if m := kb.Observe(last(1.6)); kb.Len() != 2 || len(m.Merged) != 0 || m.New {
		t.Errorf("a period between two patterns not alike: %+v, %d patterns; want joined, none merged, 2 patterns", m, kb.Len())
	}
}

// A knowledge base saved after many periods restores (shapes shortened
// from uneven groups stay sorted) and matches as the one saved did.
func TestKnowledgeBaseRestoresAndMatchesAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	kb, _ := NewKnowledgeBase(KBConfig{})
	kinds := make([]periodKind, 40)
	for i := range kinds {
		kinds[i] = randomKind(rng)
	}
	for range 300 {
		kb.Observe(kinds[rng.IntN(len(kinds))].period(rng, 200+rng.IntN(300)))
	}
	b, err := json.Marshal(kb)
	if err != nil {
		t.Fatal(err)
	}
	kb2, _ := NewKnowledgeBase(KBConfig{})
	if err := json.Unmarshal(b, kb2); err != nil {
		t.Fatalf("a saved knowledge base of %d patterns does not restore: %v", kb.Len(), err)
	}
	for range 50 {
		s := kinds[rng.IntN(len(kinds))].period(rng, 200+rng.IntN(300))
		if m, m2 := kb.Observe(s), kb2.Observe(s); m.ID != m2.ID || m.Similarity != m2.Similarity || m.New != m2.New {
			t.Fatalf("saved: %+v, restored: %+v", m, m2)
		}
	}
}

// A shape is sorted and as long as asked, whatever the series.
func TestShapeSortedProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pts := rapid.SliceOfN(rapid.Float64Range(-1e12, 1e12), 1, 600).Draw(t, "points")
		n := rapid.IntRange(1, 200).Draw(t, "n")
		s := Series{Requests: len(pts) + 1, Bytes: rapid.Int64Range(0, 1<<40).Draw(t, "bytes"), Points: pts}
		sh := Shape(s, n)
		if len(sh) != min(n, len(pts)) || !slices.IsSorted(sh) {
			t.Fatalf("shape of %d points shortened to %d: %d points, sorted %v", len(pts), n, len(sh), slices.IsSorted(sh))
		}
	})
}
