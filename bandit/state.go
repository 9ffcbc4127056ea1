package bandit

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// StateVersion is the version of the JSON written by Marshal and
// Contextual.MarshalJSON; readers refuse any other.
const StateVersion = 1

type stateJSON struct {
	Version     int        `json:"version"`
	Policy      string     `json:"policy"`
	Arms        int        `json:"arms"`
	Options     Options    `json:"options"`
	T           int64      `json:"t"`
	Scale       float64    `json:"scale"`
	State       []armState `json:"state"`
	Prior       []float64  `json:"prior,omitempty"`
	PriorWeight float64    `json:"prior_weight,omitempty"`
	Try         []int      `json:"try,omitempty"`
}

// Marshal encodes a policy of this package, options and estimates, as
// versioned JSON. Unmarshal(Marshal(p)) behaves exactly as p.
func Marshal(p Policy) ([]byte, error) {
	q, ok := p.(*policy)
	if !ok {
		return nil, fmt.Errorf("%w: cannot marshal policy %T", ErrState, p)
	}
	return json.Marshal(stateJSON{
		Version: StateVersion, Policy: q.name, Arms: len(q.arms), Options: q.opt,
		T: q.t, Scale: q.scale, State: q.arms, Prior: q.prior, PriorWeight: q.priorW, Try: q.try,
	})
}

// Unmarshal decodes a policy written by Marshal, refusing another version
// or inconsistent state.
func Unmarshal(data []byte) (Policy, error) {
	var s stateJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	return s.policy()
}

func (s *stateJSON) policy() (Policy, error) {
	if s.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrState, s.Version, StateVersion)
	}
	if s.Arms > 1<<16 {
		return nil, fmt.Errorf("%w: %d arms", ErrState, s.Arms)
	}
	p, err := New(s.Policy, s.Arms, s.Options)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	q := p.(*policy)
	if q.opt != s.Options {
		return nil, fmt.Errorf("%w: options %+v are not complete (want %+v)", ErrState, s.Options, q.opt)
	}
	if len(s.State) != s.Arms {
		return nil, fmt.Errorf("%w: %d arm states for %d arms", ErrState, len(s.State), s.Arms)
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	var n int64
	for i, a := range s.State {
		if a.N < 0 || a.W < 0 || a.V < 0 || bad(a.W) || bad(a.Q) || bad(a.V) || len(a.R) > q.opt.Window {
			return nil, fmt.Errorf("%w: arm %d state %+v", ErrState, i, a)
		}
		for _, r := range a.R {
			if bad(r) {
				return nil, fmt.Errorf("%w: arm %d reward %v", ErrState, i, r)
			}
		}
		if q.opt.Bins > 0 {
			if err := checkHistogram(a.H, a.N, q.opt.Bins); err != nil {
				return nil, fmt.Errorf("%w: arm %d histogram: %v", ErrState, i, err)
			}
		} else if a.H != nil {
			return nil, fmt.Errorf("%w: arm %d has a histogram, the policy keeps none", ErrState, i)
		}
		n += a.N
	}
	if s.T < 0 || n != s.T || s.Scale < 0 || bad(s.Scale) || s.PriorWeight < 0 || bad(s.PriorWeight) {
		return nil, fmt.Errorf("%w: totals t=%d (sum of counts %d), scale %v, prior weight %v", ErrState, s.T, n, s.Scale, s.PriorWeight)
	}
	q.arms, q.t, q.scale = s.State, s.T, s.Scale
	if s.Prior != nil {
		if err := q.setPrior(s.Prior, s.PriorWeight); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrState, err)
		}
		if !slices.ContainsFunc(q.arms, func(a armState) bool { return a.N == 0 }) {
			return nil, fmt.Errorf("%w: a prior although every arm has rewards", ErrState)
		}
	}
	if s.Try != nil {
		if err := q.setTry(s.Try); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrState, err)
		}
		if !slices.ContainsFunc(s.Try, func(a int) bool { return q.arms[a].N == 0 }) {
			return nil, fmt.Errorf("%w: arms to try %v although each has rewards", ErrState, s.Try)
		}
	}
	return q, nil
}
