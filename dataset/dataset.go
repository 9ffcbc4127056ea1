// Package dataset reads and writes the experiment dataset: per-second
// observations of every I/O node in every experiment (the papers' "over one
// million observations") and a per-experiment summary. The simulator writes
// it; detection training and the offline evaluations read it.
//
// Files in a dataset directory:
//
//	observations.csv  one Row per I/O node per second
//	summary.csv       one Experiment per (scenario, scheduler, window, repetition)
//
// A grid may repeat every experiment with different seeds; a trailing
// column "rep" then says which repetition a row comes from. Files without
// it (one repetition) read as repetition 0.
package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// File names inside a dataset directory.
const (
	ObservationsFile = "observations.csv"
	SummaryFile      = "summary.csv"
)

// Errors.
var (
	// ErrFormat is wrapped by every decoding error.
	ErrFormat = errors.New("dataset: bad format")
	// ErrNoRepColumn: a row of a repetition other than 0 was written with a
	// Writer without the rep column (see Writer.IncludeRep).
	ErrNoRepColumn = errors.New("dataset: repetition > 0 needs the rep column (Writer.IncludeRep)")
)

// Run identifies one experiment: a scenario under a scheduler (and window
// for TWINS), in one repetition.
type Run struct {
	Scenario  workload.Scenario
	Scheduler string        // "twins", "fifo", "hbrr", ...
	Window    time.Duration // TWINS window; 0 for other schedulers
	// Rep numbers the repetitions of the same experiment with different
	// seeds (0: the first, and the only one of a grid without repetitions).
	Rep int
}

// Key is a stable identifier such as "128p-shared-strided-read-32k-4ion/twins-1ms";
// repetitions after the first end in "/rep<N>" (".../twins-1ms/rep2").
func (r Run) Key() string {
	k := r.Scenario.String() + "/" + r.Scheduler
	if r.Window > 0 {
		k += "-" + r.Window.String()
	}
	if r.Rep != 0 {
		k += "/rep" + strconv.Itoa(r.Rep)
	}
	return k
}

// Base returns the run without its repetition number: its Key is shared by
// every repetition of one experiment.
func (r Run) Base() Run { r.Rep = 0; return r }

// Row is one I/O node's observation for one second of one experiment.
type Row struct {
	Run
	Second int // interval index from the experiment's start
	Obs    access.Observation
	Class  access.Class // ground-truth label from the scenario's pattern
}

// Experiment is one experiment's outcome.
type Experiment struct {
	Run
	Makespan  time.Duration
	Bandwidth float64 // bytes per second over the makespan
	Bytes     int64
}

var obsHeader = []string{
	"scenario", "processes", "layout", "spatiality", "op", "request_size", "total_bytes", "io_nodes",
	"scheduler", "window_ns", "second", "node", "data_servers", "clients", "procs_seen", "obs_op",
	"file_handles", "req_avg", "req_min", "req_max", "offset_dist", "proc_offset_dist", "file_sharers", "bandwidth",
	"bytes", "requests", "class",
}

// optionalObsColumns may be absent from older files; an absent column
// reads as 0. proc_offset_dist and file_sharers are always written, rep
// only by a Writer with IncludeRep.
var optionalObsColumns = map[string]bool{"proc_offset_dist": true, "file_sharers": true, repColumn: true}

var sumHeader = []string{
	"scenario", "processes", "layout", "spatiality", "op", "request_size", "total_bytes", "io_nodes",
	"scheduler", "window_ns", "makespan_ns", "bandwidth", "bytes",
}

var optionalSumColumns = map[string]bool{repColumn: true}

// repColumn is the trailing column of files with repetitions.
const repColumn = "rep"

func runFields(r Run) []string {
	s := r.Scenario
	return []string{
		s.String(), strconv.Itoa(s.Processes), s.Layout.String(), s.Spatiality.String(), s.Op.String(),
		strconv.FormatInt(s.RequestSize, 10), strconv.FormatInt(s.TotalBytes, 10), strconv.Itoa(s.IONodes),
		r.Scheduler, strconv.FormatInt(int64(r.Window), 10),
	}
}

func f64(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// Writer writes rows or experiments as CSV with a header.
type Writer struct {
	w      *csv.Writer
	header []string
	wrote  bool
	rep    bool
}

// NewObservationWriter returns a Writer for observations.csv rows.
func NewObservationWriter(w io.Writer) *Writer {
	return &Writer{w: csv.NewWriter(w), header: obsHeader}
}

// NewSummaryWriter returns a Writer for summary.csv rows.
func NewSummaryWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w), header: sumHeader} }

// IncludeRep adds the trailing rep column (Run.Rep) to the header and every
// row; call it before the first row. Without it the file has no rep column
// (as files written before repetitions existed) and writing a row with
// Rep != 0 fails with ErrNoRepColumn.
func (w *Writer) IncludeRep() {
	if !w.rep {
		w.rep = true
		w.header = append(w.header[:len(w.header):len(w.header)], repColumn)
	}
}

// WriteHeader writes the header (done automatically before the first row;
// call it explicitly for an empty file).
func (w *Writer) WriteHeader() error {
	if w.wrote {
		return nil
	}
	w.wrote = true
	return w.w.Write(w.header)
}

// withRep appends the rep column to rec when the Writer has it.
func (w *Writer) withRep(rec []string, rep int) []string {
	if w.rep {
		return append(rec, strconv.Itoa(rep))
	}
	return rec
}

// OmitHeader makes the Writer write rows without a header, to append to a
// file that already has one.
func (w *Writer) OmitHeader() { w.wrote = true }

// Row writes one observation row.
func (w *Writer) Row(r Row) error {
	if r.Rep != 0 && !w.rep {
		return fmt.Errorf("%w: rep %d", ErrNoRepColumn, r.Rep)
	}
	if err := w.WriteHeader(); err != nil {
		return err
	}
	o := r.Obs
	rec := append(runFields(r.Run),
		strconv.Itoa(r.Second), strconv.Itoa(o.Node), strconv.Itoa(o.DataServers), strconv.Itoa(o.Clients),
		strconv.Itoa(o.Processes), opString(o.Op), strconv.Itoa(o.FileHandles), f64(o.ReqAvg),
		strconv.FormatInt(o.ReqMin, 10), strconv.FormatInt(o.ReqMax, 10), f64(o.OffsetDist), f64(o.ProcDist), f64(o.Sharers), f64(o.Bandwidth),
		strconv.FormatInt(o.Bytes, 10), strconv.FormatInt(o.Requests, 10), r.Class.String())
	return w.w.Write(w.withRep(rec, r.Rep))
}

// Experiment writes one summary row.
func (w *Writer) Experiment(e Experiment) error {
	if e.Rep != 0 && !w.rep {
		return fmt.Errorf("%w: rep %d", ErrNoRepColumn, e.Rep)
	}
	if err := w.WriteHeader(); err != nil {
		return err
	}
	rec := append(runFields(e.Run), strconv.FormatInt(int64(e.Makespan), 10), f64(e.Bandwidth), strconv.FormatInt(e.Bytes, 10))
	return w.w.Write(w.withRep(rec, e.Rep))
}

// Flush flushes buffered rows and returns any write error.
func (w *Writer) Flush() error { w.w.Flush(); return w.w.Error() }

func opString(o rw.Op) string {
	if !o.Valid() {
		return ""
	}
	return o.String()
}

// fields decodes a record by column name.
type fields struct {
	idx  map[string]int
	rec  []string
	line int
	err  error
}

func (f *fields) str(name string) string {
	i, ok := f.idx[name]
	if !ok || i >= len(f.rec) {
		if f.err == nil {
			f.err = fmt.Errorf("%w: line %d: missing column %q", ErrFormat, f.line, name)
		}
		return ""
	}
	return f.rec[i]
}

func (f *fields) int64(name string) int64 {
	s := f.str(name)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: line %d: column %q: %q is not an integer", ErrFormat, f.line, name, s)
	}
	return v
}

func (f *fields) float(name string) float64 {
	s := f.str(name)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: line %d: column %q: %q is not a number", ErrFormat, f.line, name, s)
	}
	return v
}

func (f *fields) run() Run {
	var r Run
	s := &r.Scenario
	s.Processes = int(f.int64("processes"))
	var err error
	if s.Layout, err = workload.ParseLayout(f.str("layout")); err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: line %d: %w", ErrFormat, f.line, err)
	}
	if s.Spatiality, err = workload.ParseSpatiality(f.str("spatiality")); err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: line %d: %w", ErrFormat, f.line, err)
	}
	if s.Op, err = rw.ParseOp(f.str("op")); err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: line %d: %w", ErrFormat, f.line, err)
	}
	s.RequestSize = f.int64("request_size")
	s.TotalBytes = f.int64("total_bytes")
	s.IONodes = int(f.int64("io_nodes"))
	r.Scheduler = f.str("scheduler")
	r.Window = time.Duration(f.int64("window_ns"))
	if _, ok := f.idx[repColumn]; ok {
		rep := f.int64(repColumn) // older files lack the column: 0
		if (rep < 0 || rep > math.MaxInt32) && f.err == nil {
			f.err = fmt.Errorf("%w: line %d: rep %d out of range", ErrFormat, f.line, rep)
		}
		r.Rep = int(rep)
	}
	return r
}

type reader struct {
	r    *csv.Reader
	idx  map[string]int
	line int
}

func newReader(rd io.Reader, want []string, optional map[string]bool) (*reader, error) {
	r := csv.NewReader(rd)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: reading header: %w", ErrFormat, err)
	}
	idx := map[string]int{}
	for i, h := range head {
		idx[h] = i
	}
	for _, h := range want {
		if _, ok := idx[h]; !ok && !optional[h] {
			return nil, fmt.Errorf("%w: header lacks column %q", ErrFormat, h)
		}
	}
	return &reader{r: r, idx: idx, line: 1}, nil
}

// ReadObservations calls fn for every row of an observations.csv stream.
// fn returning an error stops the read and returns that error.
func ReadObservations(rd io.Reader, fn func(Row) error) error {
	r, err := newReader(rd, obsHeader, optionalObsColumns)
	if err != nil {
		return err
	}
	for {
		rec, err := r.r.Read()
		if err == io.EOF {
			return nil
		}
		r.line++
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrFormat, r.line, err)
		}
		f := fields{idx: r.idx, rec: rec, line: r.line}
		row := Row{Run: f.run(), Second: int(f.int64("second"))}
		o := &row.Obs
		o.Node = int(f.int64("node"))
		o.DataServers = int(f.int64("data_servers"))
		o.Clients = int(f.int64("clients"))
		o.Processes = int(f.int64("procs_seen"))
		if s := f.str("obs_op"); s != "" {
			if o.Op, err = rw.ParseOp(s); err != nil && f.err == nil {
				f.err = fmt.Errorf("%w: line %d: %w", ErrFormat, r.line, err)
			}
		}
		o.FileHandles = int(f.int64("file_handles"))
		o.ReqAvg = f.float("req_avg")
		o.ReqMin = f.int64("req_min")
		o.ReqMax = f.int64("req_max")
		o.OffsetDist = f.float("offset_dist")
		if _, ok := r.idx["proc_offset_dist"]; ok {
			o.ProcDist = f.float("proc_offset_dist") // older files lack it: 0
		}
		if _, ok := r.idx["file_sharers"]; ok {
			o.Sharers = f.float("file_sharers") // likewise
		}
		o.Bandwidth = f.float("bandwidth")
		o.Bytes = f.int64("bytes")
		o.Requests = f.int64("requests")
		o.Interval = time.Second
		o.Start = time.Duration(row.Second) * time.Second
		o.Window = row.Window
		if c := f.str("class"); c != "unknown" {
			if row.Class, err = access.ParseClass(c); err != nil && f.err == nil {
				f.err = fmt.Errorf("%w: line %d: %w", ErrFormat, r.line, err)
			}
		}
		if f.err != nil {
			return f.err
		}
		if err := o.Validate(); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrFormat, r.line, err)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
}

// ReadSummary reads every row of a summary.csv stream.
func ReadSummary(rd io.Reader) ([]Experiment, error) {
	r, err := newReader(rd, sumHeader, optionalSumColumns)
	if err != nil {
		return nil, err
	}
	var out []Experiment
	for {
		rec, err := r.r.Read()
		if err == io.EOF {
			return out, nil
		}
		r.line++
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrFormat, r.line, err)
		}
		f := fields{idx: r.idx, rec: rec, line: r.line}
		e := Experiment{Run: f.run(), Makespan: time.Duration(f.int64("makespan_ns")), Bandwidth: f.float("bandwidth"), Bytes: f.int64("bytes")}
		if f.err != nil {
			return nil, f.err
		}
		out = append(out, e)
	}
}

// LoadObservations reads DIR/observations.csv into memory.
//
// An experiment's last interval ends with it, so it is shorter than a
// second unless the makespan is a whole number of seconds: when DIR holds
// summary.csv, that interval's Obs.Interval is set to its length (the
// makespan past its start; observations.csv records only the second), so
// that readers can tell a partial interval, whose Bandwidth is its bytes over
// a fraction of a second, from a full one. Without summary.csv every
// interval reads as one second.
func LoadObservations(dir string) ([]Row, error) {
	f, err := os.Open(filepath.Join(dir, ObservationsFile))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	var rows []Row
	if err := ReadObservations(f, func(r Row) error { rows = append(rows, r); return nil }); err != nil {
		return nil, err
	}
	exps, err := LoadSummary(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rows, nil
	}
	if err != nil {
		return nil, err
	}
	SetLastIntervals(rows, exps)
	return rows, nil
}

// SetLastIntervals sets the Obs.Interval of each row in the last, partial
// second of its experiment to the part of that second before the
// experiment's makespan (Obs.Bandwidth is left as recorded: the bytes over
// that part). Rows of experiments absent from exps are left unchanged.
func SetLastIntervals(rows []Row, exps []Experiment) {
	makespan := make(map[Run]time.Duration, len(exps))
	for _, e := range exps {
		makespan[e.Run] = e.Makespan
	}
	for i := range rows {
		r := &rows[i]
		m, ok := makespan[r.Run]
		if !ok {
			continue
		}
		start := time.Duration(r.Second) * time.Second
		if part := m - start; part > 0 && part < time.Second {
			r.Obs.Interval = part
		}
	}
}

// LoadSummary reads DIR/summary.csv.
func LoadSummary(dir string) ([]Experiment, error) {
	f, err := os.Open(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	return ReadSummary(f)
}

// MeanOverReps merges the repetitions of every experiment into one
// Experiment with Rep 0: the mean makespan and bytes, and bandwidth = bytes
// / makespan of those means (total bytes over total time). Experiments
// appear in first-seen order; an experiment with one repetition is returned
// unchanged, so a summary without repetitions comes back as it was.
func MeanOverReps(exps []Experiment) []Experiment {
	type acc struct {
		e        Experiment
		n        int
		makespan float64
		bytes    float64
	}
	idx := map[string]int{}
	var accs []acc
	for _, e := range exps {
		k := e.Base().Key()
		i, ok := idx[k]
		if !ok {
			i = len(accs)
			idx[k] = i
			first := e
			first.Rep = 0
			accs = append(accs, acc{e: first})
		}
		a := &accs[i]
		a.n++
		a.makespan += float64(e.Makespan)
		a.bytes += float64(e.Bytes)
	}
	out := make([]Experiment, len(accs))
	for i, a := range accs {
		out[i] = a.e
		if a.n > 1 {
			m := a.makespan / float64(a.n)
			out[i].Makespan = time.Duration(math.Round(m))
			out[i].Bytes = int64(math.Round(a.bytes / float64(a.n)))
			out[i].Bandwidth = 0
			if m > 0 {
				out[i].Bandwidth = a.bytes / float64(a.n) / (m / 1e9)
			}
		}
	}
	return out
}
