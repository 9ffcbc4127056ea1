package eval

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/labels"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Phase is one phase of an application on the wall clock, named as the
// Council should label it: "CLASS op" (class FPP, SC or SS; op read or
// write), e.g. "SS write".
type Phase struct {
	Name       string
	Start, End time.Time
	// Bytes the phase moved (0: not known). With it, a node-second that
	// overlaps two phases is attributed to the one that moved more bytes
	// in it, at each phase's mean rate, not to the longer overlap.
	Bytes int64
	// Nodes is, when the phase file has a node column, each I/O node's
	// part of the phase by node index (its processes' end and bytes): a
	// node-second is then attributed by that node's own part. Zero
	// entries: not given.
	Nodes []PhaseNode
}

// PhaseNode is one I/O node's part of a phase (Phase.Nodes): when its last
// process ended and the bytes they moved, and, when the phase file gives
// the node several lines, each line's end and bytes (Parts: one per
// process, each moving its bytes at an even rate from the phase's start).
type PhaseNode struct {
	End   time.Time
	Bytes int64
	Parts []PhasePart
}

// PhasePart is one line of an I/O node's part of a phase: a process, or a
// group of processes that ended together.
type PhasePart struct {
	End   time.Time
	Bytes int64
}

// ErrBadLabels is returned for a malformed phase file or decision log.
var ErrBadLabels = errors.New("eval labels")

// ReadPhases reads a phase file: CSV with the header "phase,start,end",
// one line per phase, times in RFC 3339 (e.g. from "date --rfc-3339=ns"
// around each run of the application), and optionally a fourth column
// "bytes", the bytes the phase moved, and a fifth, "node". A phase's name
// is "CLASS op". Lines with a node index (the column empty on the phase's
// own line) give one I/O node's part of the phase just before them (same
// name and start): when that node's processes ended, and their bytes; a
// node with several lines has one per process (or group of processes),
// each line its end and bytes.
func ReadPhases(r io.Reader) ([]Phase, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: phases: header: %w", ErrBadLabels, err)
	}
	if len(head) < 3 || len(head) > 5 || strings.TrimPrefix(head[0], "\ufeff") != "phase" || head[1] != "start" || head[2] != "end" ||
		(len(head) >= 4 && head[3] != "bytes") || (len(head) == 5 && head[4] != "node") {
		return nil, fmt.Errorf("%w: phases: header %q, want phase,start,end[,bytes[,node]]", ErrBadLabels, strings.Join(head, ","))
	}
	var out []Phase
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: phases: %w", ErrBadLabels, err)
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%w: phases line %d: %d fields, want %d as in the header", ErrBadLabels, line, len(rec), len(head))
		}
		p := Phase{Name: rec[0]}
		if len(head) >= 4 {
			b, err := strconv.ParseInt(strings.TrimSpace(rec[3]), 10, 64)
			if err != nil || b < 0 {
				return nil, fmt.Errorf("%w: phases line %d, column bytes: %q is not a byte count", ErrBadLabels, line, rec[3])
			}
			p.Bytes = b
		}
		if err := checkPhaseName(p.Name); err != nil {
			return nil, fmt.Errorf("%w: phases line %d: %w", ErrBadLabels, line, err)
		}
		for i, dst := range []*time.Time{&p.Start, &p.End} {
			t, err := parseWall(rec[1+i])
			if err != nil {
				return nil, fmt.Errorf("%w: phases line %d, column %s: %w", ErrBadLabels, line, head[1+i], err)
			}
			*dst = t
		}
		if !p.End.After(p.Start) {
			return nil, fmt.Errorf("%w: phases line %d: end %v is not after start %v", ErrBadLabels, line, p.End, p.Start)
		}
		if len(head) == 5 && strings.TrimSpace(rec[4]) != "" {
			node, err := strconv.Atoi(strings.TrimSpace(rec[4]))
			if err != nil || node < 0 || node >= maxPhaseNodes {
				return nil, fmt.Errorf("%w: phases line %d, column node: %q is not a node index (0 to %d)", ErrBadLabels, line, rec[4], maxPhaseNodes-1)
			}
			if len(out) == 0 || out[len(out)-1].Name != p.Name || !out[len(out)-1].Start.Equal(p.Start) {
				return nil, fmt.Errorf("%w: phases line %d: node %d's part of %s comes after no line of that phase starting at %s", ErrBadLabels, line, node, p.Name, rec[1])
			}
			last := &out[len(out)-1]
			if p.End.After(last.End) {
				return nil, fmt.Errorf("%w: phases line %d: node %d ends after its phase", ErrBadLabels, line, node)
			}
			for len(last.Nodes) <= node {
				last.Nodes = append(last.Nodes, PhaseNode{})
			}
			n := &last.Nodes[node]
			if len(n.Parts) >= maxPhaseParts {
				return nil, fmt.Errorf("%w: phases line %d: node %d has more than %d lines in one phase", ErrBadLabels, line, node, maxPhaseParts)
			}
			if p.End.After(n.End) {
				n.End = p.End
			}
			n.Bytes += p.Bytes
			n.Parts = append(n.Parts, PhasePart{End: p.End, Bytes: p.Bytes})
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: phases: no phase after the header", ErrBadLabels)
	}
	return out, nil
}

// maxPhaseNodes bounds a phase file's node index (and the memory one line
// can make ReadPhases allocate); maxPhaseParts the lines of one node in one
// phase.
const (
	maxPhaseNodes = 1 << 16
	maxPhaseParts = 1 << 20
)

// parseWall accepts RFC 3339 with or without fractional seconds, and the
// space date(1) puts between date and time with --rfc-3339.
func parseWall(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	return time.Parse(time.RFC3339Nano, s)
}

func checkPhaseName(name string) error {
	class, op, ok := strings.Cut(name, " ")
	if !ok || (class != "FPP" && class != "SC" && class != "SS") || (op != "read" && op != "write") {
		return fmt.Errorf("phase %q: want \"CLASS op\" with CLASS FPP, SC or SS and op read or write", name)
	}
	return nil
}

// loggedRound is the part of a decision-log line that labelling needs.
type loggedRound struct {
	Wall  time.Time `json:"wall"`
	Nodes []struct {
		Node     int           `json:"node"`
		Idle     bool          `json:"idle"`
		Late     bool          `json:"late"`
		Op       string        `json:"op"`
		Pattern  string        `json:"pattern"`
		Window   time.Duration `json:"win_ns"`
		Bytes    float64       `json:"bw"`
		Features []float64     `json:"feat"`
		Requests int64         `json:"reqs"`
		Interval time.Duration `json:"iv_ns"` // 0 in logs written before it was logged: 1 s
	} `json:"nodes"`
}

// interval is the span the round's reports cover: the longest of its
// nodes' intervals, 1 s when the log does not say (the Announcers'
// default).
func (d *loggedRound) interval() time.Duration {
	var iv time.Duration
	for _, n := range d.Nodes {
		iv = max(iv, n.Interval)
	}
	if iv <= 0 {
		return time.Second
	}
	return iv
}

// readRounds calls fn for each round of a decision log, in file order.
func readRounds(r io.Reader, fn func(line int, d *loggedRound) error) error {
	return eachLogLine(r, ErrBadLabels, func(line int, d *loggedRound) error {
		if d.Wall.IsZero() {
			return fmt.Errorf("%w: decision log line %d has no \"wall\" time (a log written before wall times were logged?)", ErrBadLabels, line)
		}
		return fn(line, d)
	})
}

// eachLogLine decodes each non-blank line of a JSON-lines decision log
// into a fresh T and calls fn with it and its line number; decoding and
// reading errors wrap kind and name the line.
func eachLogLine[T any](r io.Reader, kind error, fn func(line int, v *T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%w: decision log line %d: %w", kind, line, err)
		}
		if err := fn(line, &v); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: decision log: %w", kind, err)
	}
	return nil
}

// ReadDecisionSeconds reads the Council's decision log (adaptio council
// --decision-log: one JSON line per round) into one labels.Second per
// round, T in seconds after start (the round's wall-clock time, its
// "wall" field), each reporting node's detected pattern and operation.
func ReadDecisionSeconds(r io.Reader, start time.Time) ([]labels.Second, error) {
	var out []labels.Second
	err := readRounds(r, func(_ int, d *loggedRound) error {
		s := labels.Second{T: d.Wall.Sub(start).Seconds(), Span: d.interval().Seconds()}
		for _, n := range d.Nodes {
			ns := labels.Label{Node: n.Node}
			if !n.Idle && !n.Late {
				ns.Pattern, ns.Op = n.Pattern, n.Op
			}
			s.Nodes = append(s.Nodes, ns)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// featuresBeforeSharers is how many measured features a decision log
// written before file_sharers (the last measured feature) gives a node:
// they read with the sharers 0.
const featuresBeforeSharers = access.FeatSharers

// LabelledRows returns the decision log's busy node-seconds that lie
// wholly inside a phase, and not within skip of its start or end, as
// dataset rows labelled with the phase's class: the observations a real
// run gives detection to train on (adaptio eval labels --export). Each
// phase is one experiment (Run.Rep is its index in phases; its scenario
// has the phase's layout, spatiality and operation, and the request size
// of its first row). A node-second is the second before its round's wall
// time; rounds logged before node reports carried their features ("feat")
// give no rows.
func LabelledRows(phases []Phase, r io.Reader, skip time.Duration) ([]dataset.Row, error) {
	runs := make([]dataset.Run, len(phases))
	classes := make([]access.Class, len(phases))
	for i, p := range phases {
		class, op, _ := strings.Cut(p.Name, " ")
		c, err := access.ParseClass(class)
		if err != nil {
			return nil, fmt.Errorf("%w: phase %q: %w", ErrBadLabels, p.Name, err)
		}
		o, err := rw.ParseOp(op)
		if err != nil {
			return nil, fmt.Errorf("%w: phase %q: %w", ErrBadLabels, p.Name, err)
		}
		pat := workload.Pattern{Layout: workload.Shared, Spatiality: workload.Contiguous, Op: o}
		switch c {
		case access.FPP:
			pat.Layout = workload.FilePerProcess
		case access.SS:
			pat.Spatiality = workload.Strided
		}
		runs[i] = dataset.Run{Scenario: workload.Scenario{Pattern: pat}, Scheduler: "twins", Rep: i}
		classes[i] = c
	}
	var out []dataset.Row
	seconds := make([]int, len(phases))
	err := readRounds(r, func(line int, d *loggedRound) error {
		hi := d.Wall
		lo := hi.Add(-d.interval())
		k := slices.IndexFunc(phases, func(p Phase) bool {
			return !lo.Before(p.Start.Add(skip)) && !hi.After(p.End.Add(-skip))
		})
		if k < 0 {
			return nil
		}
		seconds[k]++
		for _, n := range d.Nodes {
			if n.Idle || n.Late || len(n.Features) == 0 || n.Requests <= 0 {
				continue
			}
			if len(n.Features) != access.NumMeasuredFeatures && len(n.Features) != featuresBeforeSharers {
				return fmt.Errorf("%w: decision log line %d: node %d has %d features, want %d", ErrBadLabels, line, n.Node, len(n.Features), access.NumMeasuredFeatures)
			}
			op, err := rw.ParseOp(n.Op)
			if err != nil {
				return fmt.Errorf("%w: decision log line %d: node %d: %w", ErrBadLabels, line, n.Node, err)
			}
			var f [access.NumMeasuredFeatures]float64
			copy(f[:], n.Features)
			o := access.Observation{Node: n.Node, Interval: d.interval(), Op: op, FileHandles: int(f[access.FeatFileHandles]),
				ReqAvg: f[access.FeatReqAvg], ReqMin: int64(f[access.FeatReqMin]), ReqMax: int64(f[access.FeatReqMax]),
				OffsetDist: f[access.FeatOffsetDist], ProcDist: f[access.FeatProcDist], Sharers: f[access.FeatSharers], Bandwidth: n.Bytes,
				Bytes: int64(n.Bytes), Requests: n.Requests, Window: n.Window}
			if runs[k].Scenario.RequestSize == 0 {
				runs[k].Scenario.RequestSize = int64(math.Round(f[access.FeatReqAvg]))
			}
			out = append(out, dataset.Row{Run: runs[k], Second: seconds[k] - 1, Obs: o, Class: classes[k]})
		}
		return nil
	})
	return out, err
}

// LabelAccuracy measures the Council's detection against an application's
// own phases: each round of the decision log stands for the second before
// it, attributed to the phase that overlaps it most (labels.Measure,
// by time), and each busy node counts as right when its detected pattern
// and operation are the phase's. A round's report describes the interval
// the I/O node closed just before it, so a phase's first and last seconds
// mix with what ran before and after; skip, when positive, leaves out the
// rounds within skip of a phase's start or end (0: none are left out).
func LabelAccuracy(phases []Phase, seconds []labels.Second, start time.Time, skip time.Duration) []labels.Accuracy {
	var order []string
	var runs []labels.Run
	for _, p := range phases {
		if !slices.Contains(order, p.Name) {
			order = append(order, p.Name)
		}
		r := labels.Run{
			Phase: p.Name, Start: p.Start.Sub(start).Seconds(), Seconds: p.End.Sub(p.Start).Seconds(), Bytes: p.Bytes,
		}
		for _, n := range p.Nodes {
			var s labels.Span
			if !n.End.IsZero() {
				s = labels.Span{Seconds: n.End.Sub(p.Start).Seconds(), Bytes: n.Bytes}
			}
			if len(n.Parts) > 1 {
				for _, part := range n.Parts {
					s.Ends = append(s.Ends, part.End.Sub(p.Start).Seconds())
					s.EndBytes = append(s.EndBytes, part.Bytes)
				}
			}
			r.Nodes = append(r.Nodes, s)
		}
		runs = append(runs, r)
	}
	var kept []labels.Second
	for _, s := range seconds {
		if skip > 0 && nearEdge(phases, start, s, skip) {
			continue
		}
		kept = append(kept, s)
	}
	return labels.Measure(order, runs, kept)
}

// nearEdge reports whether the span of s (seconds after start) overlaps
// the first or last skip of a phase.
func nearEdge(phases []Phase, start time.Time, s labels.Second, skip time.Duration) bool {
	lo, hi := s.Covers()
	for _, p := range phases {
		ps, pe := p.Start.Sub(start).Seconds(), p.End.Sub(start).Seconds()
		if hi <= ps || lo >= pe {
			continue
		}
		if lo < ps+skip.Seconds() || hi > pe-skip.Seconds() {
			return true
		}
	}
	return false
}
