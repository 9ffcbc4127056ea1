package councilmsg

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/adaptio/adaptio/access"
)

// fastReport decodes the canonical form of a version-1 report (a flat
// object of known keys with number or plain-string values, as AppendReport
// writes it) without reflection. It returns ok=false for anything else —
// unknown or differently cased keys, escapes, nested values, numbers
// encoding/json would refuse for the field — and the caller then decodes
// with encoding/json, so accepted inputs decode exactly as encoding/json
// would decode them.
func fastReport(data []byte) (m reportJSON, ok bool) {
	p := scanner{b: data}
	p.ws()
	if !p.eat('{') {
		return m, false
	}
	p.ws()
	if p.eat('}') {
		return m, p.end()
	}
	for {
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return m, false
		}
		p.ws()
		if !p.eat(':') {
			return m, false
		}
		p.ws()
		if string(key) == "sched" {
			v, ok := p.plainString()
			if !ok || !validScheduler(string(v)) {
				return m, false
			}
			m.Sched = string(v)
		} else if string(key) == "sel" {
			v, ok := p.plainString()
			if !ok || !validSelection(string(v)) {
				return m, false
			}
			m.Sel = string(v)
		} else if string(key) == "op" {
			s, ok := p.plainString()
			if !ok {
				return m, false
			}
			switch string(s) {
			case "read":
				m.Op = "read"
			case "write":
				m.Op = "write"
			case "":
				m.Op = ""
			default:
				return m, false
			}
		} else {
			tok, ok := p.number()
			if !ok || !m.setNumber(key, tok) {
				return m, false
			}
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return m, p.end()
		}
		return m, false
	}
}

func (m *reportJSON) setNumber(key, tok []byte) bool {
	// tok is not modified while parsing and no error (which would keep the
	// string) is retained, so it is viewed as a string without a copy.
	s := unsafe.String(unsafe.SliceData(tok), len(tok))
	var err error
	var v int64
	var u uint64
	switch string(key) {
	case "v", "node", "ds", "cl", "pr", "fh":
		v, err = strconv.ParseInt(s, 10, strconv.IntSize)
		switch string(key) {
		case "v":
			m.V = int(v)
		case "node":
			m.Node = int(v)
		case "ds":
			m.DS = int(v)
		case "cl":
			m.Clients = int(v)
		case "pr":
			m.Procs = int(v)
		case "fh":
			m.FH = int(v)
		}
	case "inst", "seq", "round":
		u, err = strconv.ParseUint(s, 10, 64)
		switch string(key) {
		case "inst":
			m.Instance = u
		case "seq":
			m.Seq = u
		case "round":
			m.Round = u
		}
	case "start_ns", "ivl_ns", "win_ns", "rmin", "rmax", "bytes", "reqs", "obytes", "ospan_ns":
		v, err = strconv.ParseInt(s, 10, 64)
		switch string(key) {
		case "start_ns":
			m.Start = v
		case "ivl_ns":
			m.Interval = v
		case "win_ns":
			m.Window = v
		case "rmin":
			m.ReqMin = v
		case "rmax":
			m.ReqMax = v
		case "bytes":
			m.Bytes = v
		case "reqs":
			m.Reqs = v
		case "obytes":
			m.OBytes = v
		case "ospan_ns":
			m.OSpan = v
		}
	case "ravg", "odist", "pdist", "shr", "bw":
		var f float64
		f, err = strconv.ParseFloat(s, 64)
		switch string(key) {
		case "ravg":
			m.ReqAvg = f
		case "odist":
			m.Dist = f
		case "pdist":
			m.PDist = f
		case "shr":
			m.Sharers = f
		case "bw":
			m.BW = f
		}
	default:
		return false
	}
	return err == nil
}

type scanner struct {
	b []byte
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *scanner) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// plainString reads a string of printable ASCII without escapes.
func (p *scanner) plainString() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// number reads a token following the JSON number grammar.
func (p *scanner) number() ([]byte, bool) {
	start := p.i
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.eat('.') {
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

func (p *scanner) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// toReport converts the wire form to a Report (no validation).
func (m reportJSON) toReport() (Report, error) {
	op, err := parseOp(m.Op)
	if err != nil {
		return Report{}, err
	}
	r := Report{Instance: m.Instance, Seq: m.Seq, Round: m.Round, Obs: access.Observation{
		Node: m.Node, Start: time.Duration(m.Start), Interval: time.Duration(m.Interval),
		DataServers: m.DS, Clients: m.Clients, Processes: m.Procs, Op: op, FileHandles: m.FH,
		ReqAvg: m.ReqAvg, ReqMin: m.ReqMin, ReqMax: m.ReqMax, OffsetDist: m.Dist, ProcDist: m.PDist, Sharers: m.Sharers,
		Bandwidth: m.BW, Bytes: m.Bytes, Requests: m.Reqs, Window: time.Duration(m.Window),
		OpBytes: m.OBytes, OpSpan: time.Duration(m.OSpan),
	}, Scheduler: m.Sched, Selection: m.Sel}
	if r.Jobs, err = toJobs(r.Obs, m.Jobs); err != nil {
		return Report{}, err
	}
	return r, nil
}

// fastDecision decodes the canonical form of a version-1 decision, like
// fastReport (ok=false: decode with encoding/json).
func fastDecision(data []byte) (m decisionJSON, ok bool) {
	p := scanner{b: data}
	p.ws()
	if !p.eat('{') {
		return m, false
	}
	for first := true; ; first = false {
		p.ws()
		if first && p.eat('}') {
			return m, p.end()
		}
		key, ok := p.plainString()
		if !ok {
			return m, false
		}
		p.ws()
		if !p.eat(':') {
			return m, false
		}
		p.ws()
		switch string(key) {
		case "reason":
			s, ok := p.plainString()
			if !ok {
				return m, false
			}
			switch string(s) {
			case "all":
				m.Reason = "all"
			case "deadline":
				m.Reason = "deadline"
			default:
				return m, false
			}
		case "sched":
			s, ok := p.plainString()
			if !ok {
				return m, false
			}
			m.Sched = string(s)
		case "explore":
			switch {
			case p.word("true"):
				m.Explore = true
			case p.word("false"):
				m.Explore = false
			default:
				return m, false
			}
		default:
			tok, ok := p.number()
			if !ok {
				return m, false
			}
			s := unsafe.String(unsafe.SliceData(tok), len(tok))
			var err error
			switch string(key) {
			case "v":
				var v int64
				v, err = strconv.ParseInt(s, 10, strconv.IntSize)
				m.V = int(v)
			case "round":
				m.Round, err = strconv.ParseUint(s, 10, 64)
			case "win_ns":
				m.Window, err = strconv.ParseInt(s, 10, 64)
			case "rd_ns":
				m.Read, err = strconv.ParseInt(s, 10, 64)
			case "wr_ns":
				m.Write, err = strconv.ParseInt(s, 10, 64)
			case "epoch":
				m.Epoch, err = strconv.ParseUint(s, 10, 64)
			case "t_ns":
				m.Time, err = strconv.ParseInt(s, 10, 64)
			case "prob":
				m.Prob, err = strconv.ParseFloat(s, 64)
			case "nodes":
				var v int64
				v, err = strconv.ParseInt(s, 10, strconv.IntSize)
				m.Nodes = int(v)
			default:
				return m, false
			}
			if err != nil {
				return m, false
			}
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return m, p.end()
		}
		return m, false
	}
}

func (p *scanner) word(w string) bool {
	if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
		p.i += len(w)
		return true
	}
	return false
}
