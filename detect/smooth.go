package detect

import (
	"fmt"

	"github.com/adaptio/adaptio/access"
)

// Smoother combines the class probabilities of consecutive intervals of
// each I/O node by an exponential moving average, so one atypical interval
// (a burst of requests from processes that drifted apart, say) does not flip
// the detected pattern. It is a pure state machine: no clock, no goroutines;
// not safe for concurrent use. The papers classify each interval on its
// own; Smoother is an optional step after Model.Detect.
type Smoother struct {
	weight float64                     // weight of the newest interval
	state  map[int][NumClasses]float64 // node -> smoothed probabilities
}

// NewSmoother returns a Smoother giving the newest interval weight w in
// (0, 1] (1: no smoothing; 0.5 halves the weight of each older interval).
func NewSmoother(w float64) (*Smoother, error) {
	if !(w > 0 && w <= 1) {
		return nil, fmt.Errorf("%w: smoothing weight %v, want in (0, 1]", ErrOptions, w)
	}
	return &Smoother{weight: w, state: map[int][NumClasses]float64{}}, nil
}

// Update folds one interval's class probabilities for node (as returned by
// Model.Detect) into its average and returns the smoothed class and
// probabilities. All-zero probabilities (Detect's answer for an idle
// interval) give access.Unknown and leave the average unchanged.
func (s *Smoother) Update(node int, p [NumClasses]float64) (access.Class, [NumClasses]float64) {
	if p == ([NumClasses]float64{}) {
		return access.Unknown, p
	}
	avg, ok := s.state[node]
	if !ok {
		avg = p
	} else {
		for k := range avg {
			avg[k] += s.weight * (p[k] - avg[k])
		}
	}
	s.state[node] = avg
	return argmax(avg), avg
}

// Reset forgets node's history (e.g. when its job changes).
func (s *Smoother) Reset(node int) { delete(s.state, node) }

func argmax(p [NumClasses]float64) access.Class {
	best := 0
	for i := 1; i < NumClasses; i++ {
		if p[i] > p[best] {
			best = i
		}
	}
	return access.Classes[best]
}
