package council

import (
	"time"

	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/rw"
)

// NodeReport is what the Council made of one I/O node's report in a round:
// the decision log's per-node entry.
type NodeReport struct {
	Node    int        `json:"node"`
	Seq     uint64     `json:"seq"`
	Round   uint64     `json:"round"`          // decision in force at the node when it reported
	Reports int        `json:"reports"`        // reports from the node in this round (the latest is shown)
	Late    bool       `json:"late,omitempty"` // observed under a decision older than the last: credited, but neither counted in the round nor voting
	Idle    bool       `json:"idle,omitempty"` // no request received: no pattern, no reward, no vote
	Op      string     `json:"op,omitempty"`
	Pattern string     `json:"pattern,omitempty"` // detected class
	Probs   [3]float64 `json:"probs"`             // class probabilities (FPP, SC, SS)
	Context string     `json:"context,omitempty"` // bandit context: pattern/op, or a mix of jobs' (JobContextMix)
	// From says where Context came from: "" the node's metrics, else the
	// Config.JobContext the report's jobs were read with ("mix" or
	// "dominant"); Jobs are the report's jobs as the Council saw them.
	From      string        `json:"from,omitempty"`
	Jobs      []JobReport   `json:"jobs,omitempty"`
	Bandwidth float64       `json:"bw"`       // bytes per second
	Window    time.Duration `json:"win_ns"`   // window in force during the interval
	Credited  bool          `json:"credited"` // the reward updated (context, window)
	Reward    float64       `json:"reward"`
	Recommend time.Duration `json:"rec_ns,omitempty"` // best window for the node's context by the estimates when the round closed
	// Features are the measured detection features of the report
	// (access.Observation.Features, the first access.NumMeasuredFeatures),
	// so that a run's log can be labelled and trained on (detect's
	// decision-log source).
	Features []float64 `json:"feat,omitempty"`
	Requests int64     `json:"reqs,omitempty"` // requests received in the interval
	// Interval is the length of the interval the report covers (the
	// Announcer's; 1 s by default).
	Interval time.Duration `json:"iv_ns,omitempty"`
	// Sched is the scheduling algorithm the node ran at the end of the
	// interval, as it reported ("": not said).
	Sched string `json:"sched,omitempty"`
}

// Decision is the outcome of one round.
type Decision struct {
	Round   uint64        `json:"round"`
	At      time.Duration `json:"at_ns"`  // when the round closed (the caller's clock)
	Reason  string        `json:"reason"` // "all": every known node reported; "deadline": Timeout passed
	Window  time.Duration `json:"win_ns"` // the window every I/O node applies from now on
	Explore bool          `json:"explore"`
	Prob    float64       `json:"prob"`              // probability the decision rule chose Window
	Context string        `json:"context,omitempty"` // context whose policy governed exploration ("" when nobody voted)
	Voters  int           `json:"voters"`            // nodes that voted (reported I/O with a detected pattern)
	Nodes   []NodeReport  `json:"nodes"`             // one per reporting node, by node index
	Missing []int         `json:"missing,omitempty"` // known nodes that did not report
	Late    []NodeReport  `json:"late,omitempty"`    // late reports received since the previous decision
	// Plan is the window for each direction of requests (reads first),
	// for the context that direction is expected to take next; absent with
	// Config.NoPlan, and for a direction never seen.
	Plan []PlanEntry `json:"plan,omitempty"`
	// Credit is how the round's rewards taught the policies (Config.Credit):
	// "phase", "round" or "node". Logs written before it was recorded
	// credited each node.
	Credit string `json:"credit,omitempty"`
	// Pulls are the rewards credited when the round closed, in the order
	// credited (Credit "phase" and "round"; with "node" each credited node
	// report is a pull of its own), and those set aside (Pull.Skipped).
	Pulls []Pull `json:"pulls,omitempty"`
	// Shadow: the Council was in shadow mode; learning's choices are in
	// Learned (and each plan entry's), the windows in force are Default's
	// or pins'.
	Shadow bool `json:"shadow,omitempty"`
	// Control says why Window is not learning's choice: ControlShadow,
	// ControlPin, ControlGuardrail or ControlShare ("": it is). Learned and
	// LearnedProb are then learning's choice and the probability it had.
	Control     string        `json:"control,omitempty"`
	Learned     time.Duration `json:"learned_ns,omitempty"`
	LearnedProb float64       `json:"learned_prob,omitempty"`
	// Guardrail lists the guardrail's fallbacks (and, with a cool-down,
	// returns to learning) decided when the round closed.
	Guardrail []GuardrailEvent `json:"guardrail,omitempty"`
	// Select is the scheduling algorithm of the nodes that follow the
	// group, and why (nil: no node follows; Config.Select).
	Select *GroupChoice `json:"select,omitempty"`
}

// Pull is one reward a policy was taught.
type Pull struct {
	Context string        `json:"context"`
	Window  time.Duration `json:"win_ns"`
	Reward  float64       `json:"reward"`
	Reports int           `json:"reports"` // node reports merged into it
	// Skipped, when set, says why this pull taught nothing (SkippedOpening).
	Skipped string `json:"skipped,omitempty"`
}

// SkippedOpening is Pull.Skipped of a phase's opening set aside: with
// Config.Credit phase, a pull made only of reports in which the nodes
// turned to a context (the previous phase's tail and the new one's first
// requests in one interval), cut off because the next round went on in
// that context under another window. Alone, such an interval measures the
// turn, not the window: in real demo runs it earned a read window 20 to 60%
// of the context's median reward (the first read phase, which started
// under the write plan's window and turned to its own plan's a round
// later), and that one reward widened the pooled spread that decides
// which windows stay plausible for the whole run. Merged with the rounds
// after it, as when the window holds, it counts as part of the phase.
const SkippedOpening = "a phase's opening interval alone: it measures the turn between phases, not the window"

// Credit modes of Decision.Credit.
const (
	CreditPhase = "phase"
	CreditRound = "round"
	CreditNode  = "node"
)

// PlanEntry is a decision's window for one direction of requests.
type PlanEntry struct {
	Op      string        `json:"op"`      // "read" or "write"
	Context string        `json:"context"` // context expected next for Op
	Window  time.Duration `json:"win_ns"`
	Explore bool          `json:"explore,omitempty"` // Window was drawn to explore Context
	Prob    float64       `json:"prob"`              // probability with which Window was chosen
	// Held: Window is the previous plan's, kept because Context's pull
	// under it is still open (Config.Credit phase); Prob is then 1.
	Held bool `json:"held,omitempty"`
	// Control, Learned and LearnedProb: as Decision's, for this entry.
	Control     string        `json:"control,omitempty"`
	Learned     time.Duration `json:"learned_ns,omitempty"`
	LearnedProb float64       `json:"learned_prob,omitempty"`
}

// PlanWindow returns the plan's window for op (0: none).
func (d Decision) PlanWindow(op rw.Op) time.Duration {
	for _, e := range d.Plan {
		if e.Op == op.String() {
			return e.Window
		}
	}
	return 0
}

// Wire returns the message broadcast for d.
func (d Decision) Wire() councilmsg.Decision {
	w := councilmsg.Decision{Round: d.Round, Window: d.Window, Explore: d.Explore, Prob: d.Prob, Nodes: len(d.Nodes), Reason: d.Reason,
		Plan: rw.Pair[time.Duration]{Read: d.PlanWindow(rw.Read), Write: d.PlanWindow(rw.Write)}}
	if d.Select != nil {
		w.Scheduler = d.Select.Scheduler
	}
	return w
}
