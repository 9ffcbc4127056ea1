package council

import (
	"slices"
	"time"
)

// Status is a summary of the learned state, for /status.
type Status struct {
	Round    uint64          `json:"round"`
	Window   time.Duration   `json:"win_ns"`
	Known    int             `json:"known_nodes"`
	Policy   string          `json:"policy"`
	Windows  []time.Duration `json:"windows_ns"`
	Contexts []ContextStatus `json:"contexts"`
	Nodes    []NodeStatus    `json:"nodes"`
	Operator OperatorStatus  `json:"operator"`
	// GroupScheduler is the algorithm of the nodes that follow the group,
	// GroupNodes those nodes ("", none: none follows; Config.Select).
	GroupScheduler string `json:"group_scheduler,omitempty"`
	GroupNodes     []int  `json:"group_nodes,omitempty"`
}

// NodeStatus is what the Council knows of one I/O node.
type NodeStatus struct {
	Node      int    `json:"node"`
	Scheduler string `json:"scheduler,omitempty"` // the algorithm it last reported running ("": never said)
}

// ContextStatus is one bandit context's estimates.
type ContextStatus struct {
	Context string        `json:"context"`
	Values  []float64     `json:"values"`
	Counts  []int64       `json:"counts"`
	Best    time.Duration `json:"best_ns"`
}

// Status returns the current learned state, contexts in sorted order.
func (c *Council) Status() Status {
	st := Status{Round: c.round, Window: c.window, Known: c.Known(), Policy: c.cfg.Policy, Windows: slices.Clone(c.cfg.Windows)}
	for _, ctx := range c.bands.Contexts() {
		p := c.bands.Policy(ctx)
		st.Contexts = append(st.Contexts, ContextStatus{Context: ctx, Values: p.Values(), Counts: p.Counts(), Best: c.cfg.Windows[p.Best()]})
	}
	for _, id := range c.ids {
		st.Nodes = append(st.Nodes, NodeStatus{Node: id, Scheduler: c.nodes[id].scheduler})
	}
	if st.GroupScheduler = c.group.current(); st.GroupScheduler != "" {
		st.GroupNodes = nodeKeys(c.group.follow)
	}
	st.Operator = c.Operator()
	return st
}
