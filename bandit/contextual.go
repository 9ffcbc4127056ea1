package bandit

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Contextual is a contextual bandit (Bez et al., FGCS 2020 section IV): one Policy per
// context key (e.g. access pattern x operation), created on demand with the
// same name, arms and options. Iteration over contexts is sorted, so output
// built from it is deterministic.
//
// Learning is shared across similar contexts when Options.Neighbors > 0 and
// contexts carry feature vectors (PolicyWith): a new context starts from a
// relative prior, the mean over its Neighbors nearest known contexts
// (Euclidean distance between feature vectors; the caller scales features)
// of their estimates divided by their best estimate. See SetPrior. With
// Options.TryFavourites it also first pulls, once each, the prior's
// favourite and each of those contexts' best arms (Share, SetTry).
//
// A Contextual is not safe for concurrent use.
type Contextual struct {
	name     string
	arms     int
	opt      Options
	policies map[string]Policy
	features map[string][]float64
}

// NewContextual returns an empty contextual bandit whose contexts use policy
// name with arms arms and options opt.
func NewContextual(name string, arms int, opt Options) (*Contextual, error) {
	p, err := New(name, arms, opt)
	if err != nil {
		return nil, err
	}
	return &Contextual{name: name, arms: arms, opt: p.(*policy).opt,
		policies: map[string]Policy{}, features: map[string][]float64{}}, nil
}

// Name is the policy name of every context.
func (c *Contextual) Name() string { return c.name }

// Arms is the number of arms of every context.
func (c *Contextual) Arms() int { return c.arms }

// Policy returns the context's policy, creating it (estimates zero, no
// prior) on first use.
func (c *Contextual) Policy(context string) Policy {
	if p, ok := c.policies[context]; ok {
		return p
	}
	p, err := New(c.name, c.arms, c.opt)
	if err != nil {
		panic("bandit: options validated by NewContextual no longer valid: " + err.Error())
	}
	c.policies[context] = p
	return p
}

// PolicyWith is Policy for a context described by a feature vector. The
// features are recorded (for later neighbours) if the context has none; a
// context created here starts from the prior of its Options.Neighbors
// nearest known contexts when sharing is enabled and a neighbour is known.
func (c *Contextual) PolicyWith(context string, features []float64) Policy {
	p, ok := c.policies[context]
	if !ok {
		p = c.Policy(context)
		if c.opt.Neighbors > 0 {
			_ = c.Share(p, features, context) // p is new: cannot fail
		}
	}
	if _, ok := c.features[context]; !ok && features != nil {
		c.features[context] = slices.Clone(features)
	}
	return p
}

// Features returns a copy of the context's feature vector (nil if none).
func (c *Contextual) Features(context string) []float64 {
	return slices.Clone(c.features[context])
}

// Contexts lists the known context keys, sorted.
func (c *Contextual) Contexts() []string {
	out := make([]string, 0, len(c.policies))
	for k := range c.policies {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Prior returns the relative prior for a context with the given features:
// for each arm, the mean over the Options.Neighbors (at least 1) nearest
// contexts other than exclude that have features of the same length and at
// least one reward, of their estimate divided by their best estimate (arms a
// neighbour never tried are skipped; an arm no neighbour tried gets the
// mean of the others). It returns nil when no such context exists.
func (c *Contextual) Prior(features []float64, exclude string) []float64 {
	rel, _ := c.prior(features, exclude)
	return rel
}

// Favourites returns the arms the nearest contexts (as Prior finds them)
// estimate best, one per context, without repeats, in decreasing order of
// Prior; nil when Prior is nil.
func (c *Contextual) Favourites(features []float64, exclude string) []int {
	rel, fav := c.prior(features, exclude)
	if rel == nil {
		return nil
	}
	sort.SliceStable(fav, func(i, j int) bool { return rel[fav[i]] > rel[fav[j]] })
	return fav
}

// Share gives p, a policy of this package without rewards, the prior of
// the context with the given features (Prior; nothing when it has none)
// and, with Options.TryFavourites, the prior's favourite and the nearest
// contexts' Favourites to pull once each first (SetTry).
func (c *Contextual) Share(p Policy, features []float64, exclude string) error {
	rel, fav := c.prior(features, exclude)
	if rel == nil {
		return nil
	}
	if err := SetPrior(p, rel, c.opt.PriorWeight); err != nil {
		return err
	}
	if !c.opt.TryFavourites {
		return nil
	}
	try := []int{argmax(rel)}
	for _, a := range fav {
		if !slices.Contains(try, a) {
			try = append(try, a)
		}
	}
	sort.SliceStable(try, func(i, j int) bool { return rel[try[i]] > rel[try[j]] })
	return SetTry(p, try)
}

// prior is Prior and, for each nearest context used, its best arm
// (without repeats, in order of distance).
func (c *Contextual) prior(features []float64, exclude string) (rel []float64, fav []int) {
	if features == nil {
		return nil, nil
	}
	type cand struct {
		key string
		d   float64
	}
	var cands []cand
	for _, key := range c.Contexts() {
		f, ok := c.features[key]
		if key == exclude || !ok || len(f) != len(features) {
			continue
		}
		if p := c.policies[key]; p.(*policy).t == 0 {
			continue
		}
		var d float64
		for i := range f {
			d += (f[i] - features[i]) * (f[i] - features[i])
		}
		cands = append(cands, cand{key, math.Sqrt(d)})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	k := max(c.opt.Neighbors, 1)
	if len(cands) > k {
		cands = cands[:k]
	}
	sum := make([]float64, c.arms)
	n := make([]float64, c.arms)
	for _, cd := range cands {
		p := c.policies[cd.key]
		v, cnt := p.Values(), p.Counts()
		var top float64
		best := -1
		for a := range v {
			if cnt[a] > 0 && v[a] > top {
				top, best = v[a], a
			}
		}
		if top <= 0 {
			continue
		}
		if !slices.Contains(fav, best) {
			fav = append(fav, best)
		}
		for a := range v {
			if cnt[a] > 0 {
				sum[a] += math.Max(v[a], 0) / top
				n[a]++
			}
		}
	}
	var tot, tn float64
	for a := range sum {
		if n[a] > 0 {
			sum[a] /= n[a]
			tot += sum[a]
			tn++
		}
	}
	if tn == 0 {
		return nil, nil
	}
	for a := range sum {
		if n[a] == 0 {
			sum[a] = tot / tn
		}
	}
	return sum, fav
}

type contextJSON struct {
	Key      string          `json:"key"`
	Features []float64       `json:"features,omitempty"`
	State    json.RawMessage `json:"state"`
}

type contextualJSON struct {
	Version  int           `json:"version"`
	Policy   string        `json:"policy"`
	Arms     int           `json:"arms"`
	Options  Options       `json:"options"`
	Contexts []contextJSON `json:"contexts"`
}

// MarshalJSON encodes every context's policy and features, sorted by key,
// as versioned JSON.
func (c *Contextual) MarshalJSON() ([]byte, error) {
	out := contextualJSON{Version: StateVersion, Policy: c.name, Arms: c.arms, Options: c.opt, Contexts: []contextJSON{}}
	for _, k := range c.Contexts() {
		st, err := Marshal(c.policies[k])
		if err != nil {
			return nil, err
		}
		out.Contexts = append(out.Contexts, contextJSON{Key: k, Features: c.features[k], State: st})
	}
	return json.Marshal(out)
}

// UnmarshalJSON replaces c with the contextual bandit encoded by MarshalJSON.
func (c *Contextual) UnmarshalJSON(data []byte) error {
	var in contextualJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	if in.Version != StateVersion {
		return fmt.Errorf("%w: version %d, this build reads version %d", ErrState, in.Version, StateVersion)
	}
	if in.Arms > 1<<16 {
		return fmt.Errorf("%w: %d arms", ErrState, in.Arms)
	}
	nc, err := NewContextual(in.Policy, in.Arms, in.Options)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrState, err)
	}
	if nc.opt != in.Options {
		return fmt.Errorf("%w: options %+v are not complete", ErrState, in.Options)
	}
	for _, cj := range in.Contexts {
		if _, dup := nc.policies[cj.Key]; dup {
			return fmt.Errorf("%w: context %q twice", ErrState, cj.Key)
		}
		p, err := Unmarshal(cj.State)
		if err != nil {
			return fmt.Errorf("context %q: %w", cj.Key, err)
		}
		if p.Name() != in.Policy || p.Arms() != in.Arms || p.(*policy).opt != nc.opt {
			return fmt.Errorf("%w: context %q has policy %s with %d arms, want %s with %d", ErrState, cj.Key, p.Name(), p.Arms(), in.Policy, in.Arms)
		}
		for _, f := range cj.Features {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("%w: context %q feature %v", ErrState, cj.Key, f)
			}
		}
		nc.policies[cj.Key] = p
		if cj.Features != nil {
			nc.features[cj.Key] = cj.Features
		}
	}
	*c = *nc
	return nil
}
