package dataset_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/dataset"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

func sampleRun() dataset.Run {
	return dataset.Run{
		Scenario: workload.Scenario{Pattern: workload.Pattern{Processes: 128, Layout: workload.Shared,
			Spatiality: workload.Strided, Op: rw.Read, RequestSize: 32 << 10, TotalBytes: 4 << 30}, IONodes: 4},
		Scheduler: "twins", Window: 2 * time.Millisecond,
	}
}

func TestObservationRoundTrip(t *testing.T) {
	rows := []dataset.Row{
		{Run: sampleRun(), Second: 3, Class: access.SS, Obs: access.Observation{
			Node: 2, Start: 3 * time.Second, Interval: time.Second, DataServers: 4, Clients: 8, Processes: 32,
			Op: rw.Read, FileHandles: 1, ReqAvg: 32768, ReqMin: 32768, ReqMax: 32768, OffsetDist: 65536.5,
			ProcDist: 131072, Sharers: 32, Bandwidth: 1.25e8, Bytes: 125000000, Requests: 3815, Window: 2 * time.Millisecond}},
		{Run: sampleRun(), Second: 4, Class: access.SS, Obs: access.Observation{Node: 2, Start: 4 * time.Second,
			Interval: time.Second, Window: 2 * time.Millisecond}},
	}
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	for _, r := range rows {
		if err := w.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []dataset.Row
	if err := dataset.ReadObservations(&buf, func(r dataset.Row) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got[i], rows[i])
		}
	}
}

// TestReadWithoutNewerFeatures: files written before the sixth feature
// (no proc_offset_dist column) or the seventh (no file_sharers) still read,
// with ProcDist or Sharers 0; a file that has the column but not a number
// in it is refused.
func TestReadWithoutNewerFeatures(t *testing.T) {
	row := dataset.Row{Run: sampleRun(), Second: 1, Class: access.SS, Obs: access.Observation{
		Node: 1, Start: time.Second, Interval: time.Second, Clients: 1, Processes: 2, Op: rw.Read,
		FileHandles: 1, ReqAvg: 10, ReqMin: 10, ReqMax: 10, OffsetDist: 10, ProcDist: 20, Sharers: 2, Requests: 4,
		Window: 2 * time.Millisecond}}
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	if err := w.Row(row); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	head := strings.Split(lines[0], ",")
	for _, tc := range []struct {
		column, value string
		zero          func(*access.Observation)
	}{
		{"proc_offset_dist", "20", func(o *access.Observation) { o.ProcDist = 0 }},
		{"file_sharers", "2", func(o *access.Observation) { o.Sharers = 0 }},
	} {
		rec := strings.Split(lines[1], ",")
		col := slices.Index(head, tc.column)
		if col < 0 || rec[col] != tc.value {
			t.Fatalf("written file lacks %s %s: %q", tc.column, tc.value, buf.String())
		}
		drop := func(s []string) string {
			return strings.Join(append(append([]string(nil), s[:col]...), s[col+1:]...), ",")
		}
		old := drop(head) + "\n" + drop(rec) + "\n"
		var got []dataset.Row
		if err := dataset.ReadObservations(strings.NewReader(old), func(r dataset.Row) error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("reading a file without %s: %v", tc.column, err)
		}
		want := row
		tc.zero(&want.Obs)
		if len(got) != 1 || got[0] != want {
			t.Fatalf("without %s: got %+v\nwant %+v", tc.column, got, want)
		}
		rec[col] = ""
		bad := lines[0] + "\n" + strings.Join(rec, ",") + "\n"
		if err := dataset.ReadObservations(strings.NewReader(bad), func(dataset.Row) error { return nil }); !errors.Is(err, dataset.ErrFormat) {
			t.Fatalf("empty %s: got %v, want ErrFormat", tc.column, err)
		}
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	e := dataset.Experiment{Run: sampleRun(), Makespan: 12345 * time.Millisecond, Bandwidth: 3.5e8, Bytes: 4 << 30}
	f := e
	f.Scheduler, f.Window = "fifo", 0
	var buf bytes.Buffer
	w := dataset.NewSummaryWriter(&buf)
	if err := w.Experiment(e); err != nil {
		t.Fatal(err)
	}
	if err := w.Experiment(f); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	got, err := dataset.ReadSummary(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != e || got[1] != f {
		t.Fatalf("got %+v", got)
	}
	if e.Key() != "128p-shared-strided-read-32k-4ion/twins-2ms" || f.Key() != "128p-shared-strided-read-32k-4ion/fifo" {
		t.Fatalf("keys %q %q", e.Key(), f.Key())
	}
}

func TestReadRejectsBadInput(t *testing.T) {
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	w.Row(dataset.Row{Run: sampleRun(), Class: access.SS})
	w.Flush()
	good := buf.String()
	lines := strings.SplitN(good, "\n", 2)
	tests := map[string]string{
		"empty":          "",
		"missing column": strings.Replace(lines[0], "bandwidth,", "", 1) + "\n",
		"not a number":   lines[0] + "\n" + strings.Replace(lines[1], "128,", "lots,", 1),
		"bad class":      strings.Replace(good, ",SS\n", ",XX\n", 1),
		"bad op":         strings.Replace(good, ",read,", ",erase,", 1),
		"missing offset": strings.Replace(lines[0], ",offset_dist,", ",", 1) + "\n",
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			err := dataset.ReadObservations(strings.NewReader(in), func(dataset.Row) error { return nil })
			if !errors.Is(err, dataset.ErrFormat) {
				t.Fatalf("got %v, want ErrFormat", err)
			}
		})
	}
}

// TestRepColumn: a Writer with IncludeRep writes a trailing rep column and
// rows read back with their repetition; a Writer without it writes the
// columns of files from before repetitions (read as rep 0) and refuses a
// row of another repetition; a negative rep is refused.
func TestRepColumn(t *testing.T) {
	row := dataset.Row{Run: sampleRun(), Second: 2, Class: access.SS, Obs: access.Observation{Node: 1, Start: 2 * time.Second,
		Interval: time.Second, Window: 2 * time.Millisecond}}
	exp := dataset.Experiment{Run: sampleRun(), Makespan: time.Second, Bandwidth: 2, Bytes: 2}
	for _, rep := range []int{0, 1, 7} {
		t.Run(fmt.Sprint("rep", rep), func(t *testing.T) {
			r, e := row, exp
			r.Rep, e.Rep = rep, rep
			var ob, sb bytes.Buffer
			ow, sw := dataset.NewObservationWriter(&ob), dataset.NewSummaryWriter(&sb)
			ow.IncludeRep()
			sw.IncludeRep()
			if err := ow.Row(r); err != nil {
				t.Fatal(err)
			}
			if err := sw.Experiment(e); err != nil {
				t.Fatal(err)
			}
			ow.Flush()
			sw.Flush()
			if !strings.HasSuffix(strings.SplitN(ob.String(), "\n", 2)[0], ",class,rep") {
				t.Fatalf("header %q does not end in class,rep", strings.SplitN(ob.String(), "\n", 2)[0])
			}
			var got []dataset.Row
			if err := dataset.ReadObservations(&ob, func(r dataset.Row) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != r {
				t.Fatalf("got %+v\nwant %+v", got, r)
			}
			exps, err := dataset.ReadSummary(&sb)
			if err != nil {
				t.Fatal(err)
			}
			if len(exps) != 1 || exps[0] != e {
				t.Fatalf("got %+v, want %+v", exps, e)
			}
			// Without the column.
			ob.Reset()
			plain := dataset.NewObservationWriter(&ob)
			err = plain.Row(r)
			if rep == 0 && err != nil {
				t.Fatalf("rep 0 without the column: %v", err)
			}
			if rep != 0 && !errors.Is(err, dataset.ErrNoRepColumn) {
				t.Fatalf("rep %d without the column: got %v, want ErrNoRepColumn", rep, err)
			}
			if err := dataset.NewSummaryWriter(&sb).Experiment(e); (rep != 0) != errors.Is(err, dataset.ErrNoRepColumn) {
				t.Fatalf("summary rep %d without the column: got %v", rep, err)
			}
		})
	}
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	w.IncludeRep()
	w.Row(row)
	w.Flush()
	bad := strings.Replace(buf.String(), ",SS,0\n", ",SS,-1\n", 1)
	if err := dataset.ReadObservations(strings.NewReader(bad), func(dataset.Row) error { return nil }); !errors.Is(err, dataset.ErrFormat) {
		t.Fatalf("rep -1: got %v, want ErrFormat", err)
	}
}

func TestKeyAndBase(t *testing.T) {
	r := sampleRun()
	r.Rep = 2
	if got, want := r.Key(), "128p-shared-strided-read-32k-4ion/twins-2ms/rep2"; got != want {
		t.Fatalf("Key() = %q, want %q", got, want)
	}
	if got, want := r.Base().Key(), "128p-shared-strided-read-32k-4ion/twins-2ms"; got != want {
		t.Fatalf("Base().Key() = %q, want %q", got, want)
	}
}

func TestMeanOverReps(t *testing.T) {
	a, b := sampleRun(), sampleRun()
	b.Scheduler, b.Window = "fifo", 0
	mk := func(r dataset.Run, rep int, makespan time.Duration) dataset.Experiment {
		r.Rep = rep
		return dataset.Experiment{Run: r, Makespan: makespan, Bytes: 1000, Bandwidth: 1000 / makespan.Seconds()}
	}
	single := []dataset.Experiment{mk(a, 0, 3*time.Second), mk(b, 0, 7*time.Second)}
	if got := dataset.MeanOverReps(single); !slices.Equal(got, single) {
		t.Fatalf("one repetition: got %+v, want unchanged %+v", got, single)
	}
	got := dataset.MeanOverReps([]dataset.Experiment{mk(a, 0, 2*time.Second), mk(b, 0, 7*time.Second), mk(a, 1, 4*time.Second), mk(a, 2, 6*time.Second)})
	want := []dataset.Experiment{{Run: a, Makespan: 4 * time.Second, Bytes: 1000, Bandwidth: 250}, mk(b, 0, 7*time.Second)}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func FuzzReadObservations(f *testing.F) {
	var buf bytes.Buffer
	w := dataset.NewObservationWriter(&buf)
	w.Row(dataset.Row{Run: sampleRun(), Class: access.SS, Obs: access.Observation{Requests: 1, Op: rw.Read, ReqMin: 1, ReqMax: 1, ReqAvg: 1}})
	w.Flush()
	f.Add(buf.String())
	f.Add("scenario\n1\n")
	// The same row as an older file, without proc_offset_dist.
	lines := strings.SplitN(buf.String(), "\n", 3)
	if h := strings.Split(lines[0], ","); len(h) > 21 && h[21] == "proc_offset_dist" {
		r := strings.Split(lines[1], ",")
		f.Add(strings.Join(append(h[:21:21], h[22:]...), ",") + "\n" + strings.Join(append(r[:21:21], r[22:]...), ",") + "\n")
	} else {
		f.Fatalf("proc_offset_dist is not column 21 of %q", lines[0])
	}
	// With the rep column (a grid with repetitions).
	buf.Reset()
	w = dataset.NewObservationWriter(&buf)
	w.IncludeRep()
	r := sampleRun()
	r.Rep = 2
	w.Row(dataset.Row{Run: r, Class: access.SS, Obs: access.Observation{Requests: 1, Op: rw.Read, ReqMin: 1, ReqMax: 1, ReqAvg: 1}})
	w.Flush()
	f.Add(buf.String())
	f.Fuzz(func(t *testing.T, in string) {
		n := 0
		err := dataset.ReadObservations(strings.NewReader(in), func(r dataset.Row) error {
			n++
			if verr := r.Obs.Validate(); verr != nil {
				t.Fatalf("accepted an invalid observation: %v", verr)
			}
			if r.Rep < 0 {
				t.Fatalf("accepted rep %d", r.Rep)
			}
			return nil
		})
		if err != nil && !errors.Is(err, dataset.ErrFormat) {
			t.Fatalf("error not wrapping ErrFormat: %v", err)
		}
	})
}

func FuzzReadSummary(f *testing.F) {
	var buf bytes.Buffer
	w := dataset.NewSummaryWriter(&buf)
	w.Experiment(dataset.Experiment{Run: sampleRun(), Makespan: time.Second, Bandwidth: 1, Bytes: 1})
	w.Flush()
	f.Add(buf.String())
	buf.Reset()
	w = dataset.NewSummaryWriter(&buf)
	w.IncludeRep()
	r := sampleRun()
	r.Rep = 3
	w.Experiment(dataset.Experiment{Run: r, Makespan: time.Second, Bandwidth: 1, Bytes: 1})
	w.Flush()
	f.Add(buf.String())
	f.Fuzz(func(t *testing.T, in string) {
		exps, err := dataset.ReadSummary(strings.NewReader(in))
		if err != nil && !errors.Is(err, dataset.ErrFormat) {
			t.Fatalf("error not wrapping ErrFormat: %v", err)
		}
		for _, e := range exps {
			if e.Rep < 0 {
				t.Fatalf("accepted rep %d", e.Rep)
			}
		}
	})
}

// TestLastIntervalFromSummary: LoadObservations gives the last second of
// each experiment the length its makespan leaves it, and leaves the
// others (and a run absent from the summary, and a makespan of whole
// seconds) at one second.
func TestLastIntervalFromSummary(t *testing.T) {
	dir := t.TempDir()
	a, b := sampleRun(), sampleRun()
	b.Window = 2 * time.Millisecond
	obs := func(r dataset.Run, sec int) dataset.Row {
		return dataset.Row{Run: r, Second: sec, Class: access.SS, Obs: access.Observation{Requests: 1, Op: rw.Read, ReqMin: 1, ReqMax: 1, ReqAvg: 1}}
	}
	var o, s bytes.Buffer
	ow, sw := dataset.NewObservationWriter(&o), dataset.NewSummaryWriter(&s)
	for _, r := range []dataset.Row{obs(a, 0), obs(a, 1), obs(a, 2), obs(b, 0), obs(b, 1)} {
		if err := ow.Row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Experiment(dataset.Experiment{Run: a, Makespan: 2250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ow.Flush()
	sw.Flush()
	if err := os.WriteFile(filepath.Join(dir, dataset.ObservationsFile), o.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(want []time.Duration) {
		t.Helper()
		rows, err := dataset.LoadObservations(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Duration
		for _, r := range rows {
			got = append(got, r.Obs.Interval)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("intervals %v, want %v", got, want)
		}
	}
	check([]time.Duration{time.Second, time.Second, time.Second, time.Second, time.Second}) // no summary.csv
	if err := os.WriteFile(filepath.Join(dir, dataset.SummaryFile), s.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	check([]time.Duration{time.Second, time.Second, 250 * time.Millisecond, time.Second, time.Second})

	rows := []dataset.Row{obs(b, 0), obs(b, 1)}
	rows[0].Obs.Interval, rows[1].Obs.Interval = time.Second, time.Second
	dataset.SetLastIntervals(rows, []dataset.Experiment{{Run: b, Makespan: 2 * time.Second}})
	if rows[1].Obs.Interval != time.Second {
		t.Fatalf("a makespan of whole seconds shortened the last interval to %v", rows[1].Obs.Interval)
	}
}
