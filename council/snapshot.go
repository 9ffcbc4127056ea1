package council

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/adaptio/adaptio/bandit"
)

// snapshot is the persisted learned state, versioned.
type snapshot struct {
	V       int             `json:"v"`
	Round   uint64          `json:"round"`
	Window  time.Duration   `json:"win_ns"`
	Policy  string          `json:"policy"`
	Windows []time.Duration `json:"windows_ns"`
	Bandits json.RawMessage `json:"bandits"`
	// Next is the plan's count of context transitions (absent in
	// snapshots of Councils that made no plan).
	Next map[string]map[string]int `json:"next,omitempty"`
	// The operator's state: pinned windows by context, the guardrail's
	// fallbacks, shadow mode (absent: none, off).
	Pins      map[string]time.Duration `json:"pins,omitempty"`
	Fallbacks []Fallback               `json:"fallbacks,omitempty"`
	Shadow    bool                     `json:"shadow,omitempty"`
}

// Snapshot returns the learned state (round counter, window in force, every
// context's policy) as versioned JSON. The open round is not included.
func (c *Council) Snapshot() ([]byte, error) {
	b, err := c.bands.MarshalJSON()
	if err != nil {
		return nil, err
	}
	s := snapshot{V: 1, Round: c.round, Window: c.window, Policy: c.cfg.Policy, Windows: c.cfg.Windows, Bandits: b, Next: c.next, Shadow: c.shadow}
	if len(c.pins) > 0 {
		s.Pins = c.pins
	}
	s.Fallbacks = c.Operator().Fallbacks
	return json.Marshal(s)
}

// Restore replaces the learned state with a Snapshot's. The snapshot must
// come from a Council with the same policy and windows (ErrSnapshot); on
// error the state is unchanged.
func (c *Council) Restore(data []byte) error {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.V != 1 {
		return fmt.Errorf("%w: version %d", ErrSnapshot, s.V)
	}
	if s.Policy != c.cfg.Policy || !slices.Equal(s.Windows, c.cfg.Windows) {
		return fmt.Errorf("%w: learned with policy %q over windows %v, configured %q over %v (configure policy %q and those windows to continue it, or start afresh)",
			ErrSnapshot, s.Policy, s.Windows, c.cfg.Policy, c.cfg.Windows, s.Policy)
	}
	if c.arm(s.Window) < 0 {
		return fmt.Errorf("%w: window %v not among windows", ErrSnapshot, s.Window)
	}
	bands, err := bandit.NewContextual(c.cfg.Policy, len(c.cfg.Windows), c.cfg.Options)
	if err != nil {
		return err
	}
	if err := bands.UnmarshalJSON(s.Bandits); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	for _, ctx := range bands.Contexts() {
		if p := bands.Policy(ctx); p.Arms() != len(c.cfg.Windows) {
			return fmt.Errorf("%w: context %q has %d arms, want %d", ErrSnapshot, ctx, p.Arms(), len(c.cfg.Windows))
		}
	}
	if s.Next == nil {
		s.Next = map[string]map[string]int{}
	}
	pins, fallbacks, err := c.restoreOperator(s.Pins, s.Fallbacks)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	c.bands, c.round, c.window, c.next = bands, s.Round, s.Window, s.Next
	c.pins, c.fallbacks = pins, fallbacks
	c.shadow = s.Shadow || c.cfg.Shadow
	return nil
}
