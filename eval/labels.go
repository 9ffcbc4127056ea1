package eval

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/adaptio/adaptio/demo/record"
)

// Phase is one phase of an application on the wall clock, named as the
// Council should label it: "CLASS op" (class FPP, SC or SS; op read or
// write), e.g. "SS write".
type Phase struct {
	Name       string
	Start, End time.Time
}

// ErrBadLabels is returned for a malformed phase file or decision log.
var ErrBadLabels = errors.New("eval labels")

// ReadPhases reads a phase file: CSV with the header "phase,start,end",
// one line per phase, times in RFC 3339 (e.g. from "date --rfc-3339=ns"
// around each run of the application). A phase's name is "CLASS op".
func ReadPhases(r io.Reader) ([]Phase, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 3
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: phases: header: %w", ErrBadLabels, err)
	}
	if strings.TrimPrefix(head[0], "\ufeff") != "phase" || head[1] != "start" || head[2] != "end" {
		return nil, fmt.Errorf("%w: phases: header %q, want phase,start,end", ErrBadLabels, strings.Join(head, ","))
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
		p := Phase{Name: rec[0]}
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
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: phases: no phase after the header", ErrBadLabels)
	}
	return out, nil
}

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
		Node    int    `json:"node"`
		Idle    bool   `json:"idle"`
		Late    bool   `json:"late"`
		Op      string `json:"op"`
		Pattern string `json:"pattern"`
	} `json:"nodes"`
}

// ReadDecisionSeconds reads the Council's decision log (adaptio council
// --decision-log: one JSON line per round) into one record.Second per
// round, T in seconds after start (the round's wall-clock time, its
// "wall" field), each reporting node's detected pattern and operation.
func ReadDecisionSeconds(r io.Reader, start time.Time) ([]record.Second, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []record.Second
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var d loggedRound
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%w: decision log line %d: %w", ErrBadLabels, line, err)
		}
		if d.Wall.IsZero() {
			return nil, fmt.Errorf("%w: decision log line %d has no \"wall\" time (a log written before wall times were logged?)", ErrBadLabels, line)
		}
		s := record.Second{T: d.Wall.Sub(start).Seconds()}
		for _, n := range d.Nodes {
			ns := record.NodeSecond{Node: n.Node}
			if !n.Idle && !n.Late {
				ns.Pattern, ns.Op = n.Pattern, n.Op
			}
			s.Nodes = append(s.Nodes, ns)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: decision log: %w", ErrBadLabels, err)
	}
	return out, nil
}

// LabelAccuracy measures the Council's detection against an application's
// own phases: each round of the decision log stands for the second before
// it, attributed to the phase that overlaps it most (record.LabelAccuracy,
// by time), and each busy node counts as right when its detected pattern
// and operation are the phase's. A round's report describes the interval
// the I/O node closed just before it, so a phase's first and last seconds
// mix with what ran before and after; skip, when positive, leaves out the
// rounds within skip of a phase's start or end (0: none are left out).
func LabelAccuracy(phases []Phase, seconds []record.Second, start time.Time, skip time.Duration) []record.Accuracy {
	rec := record.Recording{}
	for _, p := range phases {
		if !slices.Contains(rec.Meta.Phases, p.Name) {
			rec.Meta.Phases = append(rec.Meta.Phases, p.Name)
		}
		rec.Iterations = append(rec.Iterations, record.Iteration{
			Phase: p.Name, Start: p.Start.Sub(start).Seconds(), Seconds: p.End.Sub(p.Start).Seconds(),
		})
	}
	for _, s := range seconds {
		if skip > 0 && nearEdge(phases, start, s.T, skip) {
			continue
		}
		rec.Seconds = append(rec.Seconds, s)
	}
	return record.LabelAccuracy(rec)
}

// nearEdge reports whether the second ending t (seconds after start)
// overlaps the first or last skip of a phase.
func nearEdge(phases []Phase, start time.Time, t float64, skip time.Duration) bool {
	lo, hi := t-1, t
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
