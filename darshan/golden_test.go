package darshan_test

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/darshan"
	"github.com/adaptio/adaptio/internal/datadir"
)

// logsDir holds the real Darshan logs (see ../shared/data/README.md).
var logsDir = datadir.Path("darshan")

// logs lists the .darshan files under logsDir, or skips the test.
func logs(t testing.TB) []string {
	out := logsOrNone()
	if len(out) == 0 {
		t.Skipf("no Darshan logs in %s (the shared data set is not beside the repository)", logsDir)
	}
	return out
}

// logsOrNone lists the .darshan files under logsDir.
func logsOrNone() []string {
	var out []string
	filepath.WalkDir(logsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".darshan") {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// goldenName is the golden file of a log: its path under logsDir with /
// as __.
func goldenName(log string) string {
	rel, _ := filepath.Rel(logsDir, log)
	return filepath.Join("testdata", "golden", strings.ReplaceAll(strings.TrimSuffix(rel, ".darshan"), string(filepath.Separator), "__")+".txt.gz")
}

// parserLines prints what darshan-parser prints of a log's job, regions,
// mounts and POSIX, MPI-IO and STDIO records, in its format.
func parserLines(l *darshan.Log) ([]string, error) {
	var out []string
	p := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	p("# darshan log version: %s", l.Version)
	p("# compression method: %s", l.Compression)
	if l.ExeComplete {
		p("# exe: %s", l.Exe)
	} else {
		p("# exe: ") // darshan-parser prints a cut-short line empty
	}
	p("# uid: %d", l.Job.UID)
	p("# jobid: %d", l.Job.JobID)
	p("# start_time: %d", l.Job.Start.Unix())
	p("# end_time: %d", l.Job.End.Unix())
	p("# nprocs: %d", l.Job.Procs)
	for _, kv := range l.Job.Metadata {
		p("# metadata: %s = %s", kv.Key, kv.Value)
	}
	sizes := l.Sizes()
	p("# job data: %d bytes (compressed)", sizes.Job)
	p("# record table: %d bytes (compressed)", sizes.Names)
	for m := range darshan.Module(18) {
		if sizes.Modules[m] > 0 || l.PartialModule(m) {
			p("# %s module: %d bytes (compressed), ver=%d", m, sizes.Modules[m], l.ModuleVersion[m])
		}
	}
	for _, m := range l.Mounts {
		p("# mount entry:\t%s\t%s", m.Path, m.Type)
	}
	for _, m := range []darshan.Module{darshan.POSIX, darshan.MPIIO, darshan.STDIO} {
		for r, err := range l.Records(m) {
			if err != nil {
				return out, err
			}
			name := r.Name
			mnt, fs := l.Mount(name)
			if name == "" {
				name = "<unknown-filename>"
			}
			ints, floats := r.Counters, r.FCounters
			if m == darshan.POSIX {
				ints, floats = utilPOSIX(r, l.ModuleVersion[m], l.Swapped)
			}
			for i, c := range darshan.CounterNames(m) {
				if c == "POSIX_RENAMED_FROM" { // a record id, printed unsigned
					p("%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s", m, r.Rank, r.ID, c, uint64(ints[i]), name, mnt, fs)
					continue
				}
				p("%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s", m, r.Rank, r.ID, c, ints[i], name, mnt, fs)
			}
			for i, c := range darshan.FCounterNames(m) {
				p("%s\t%d\t%d\t%s\t%f\t%s\t%s\t%s", m, r.Rank, r.ID, c, floats[i], name, mnt, fs)
			}
		}
	}
	return out, nil
}

// readGolden reads a golden file's lines.
func readGolden(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("golden file: %v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mountsSorted sorts the mount lines: darshan-util sorts the mount table
// by path length with qsort, which leaves paths of equal length in no
// particular order.
func mountsSorted(lines []string) []string {
	var m, rest []string
	for _, l := range lines {
		if strings.HasPrefix(l, "# mount entry:") {
			m = append(m, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(m)
	return append(rest, m...)
}

// TestGoldenAgainstDarshanParser reads every log of the shared data set
// and prints what darshan-parser prints of it: job, regions, mounts and
// every POSIX, MPI-IO and STDIO counter of every record (for old POSIX
// records, with darshan-util's two conversion defects applied to this
// package's values: quirks_test.go).
//
// The golden files are darshan-parser's output (darshan-util built from
// darshan's source, release 3.5.0's tree, with ./prepare.sh; configure
// --disable-darshan-runtime; make), kept to those lines:
//
//	darshan-parser LOG | grep -E '^(# darshan log version|# compression method|# exe:|# uid|# jobid|# start_time:|# end_time:|# nprocs|# metadata|# mount entry|# job data:|# record table:|# [A-Z0-9_/-]+ module: |POSIX\t|MPI-IO\t|STDIO\t)' | gzip -9n
func TestGoldenAgainstDarshanParser(t *testing.T) {
	for _, path := range logs(t) {
		t.Run(strings.TrimPrefix(path, logsDir+"/"), func(t *testing.T) {
			want := readGolden(t, goldenName(path))
			l, c, err := darshan.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := parserLines(l)
			if err != nil {
				t.Fatal(err)
			}
			got, want = mountsSorted(got), mountsSorted(want)
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, darshan-parser %d", len(got), len(want))
			}
		})
	}
}

// dxtLines prints what darshan-dxt-parser prints of a log's DXT records:
// each record's header lines and one line per segment (Lustre's OST
// lists left out).
func dxtLines(l *darshan.Log) ([]string, error) {
	var out []string
	p := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	for _, m := range []darshan.Module{darshan.DXTPOSIX, darshan.DXTMPIIO} {
		label := map[darshan.Module]string{darshan.DXTPOSIX: "X_POSIX", darshan.DXTMPIIO: "X_MPIIO"}[m]
		for tr, err := range l.Traces(m) {
			if err != nil {
				return out, err
			}
			p("# DXT, file_id: %d, file_name: %s", tr.ID, tr.Name)
			p("# DXT, rank: %d, hostname: %s", tr.Rank, tr.Hostname)
			p("# DXT, write_count: %d, read_count: %d", tr.WriteCount, tr.ReadCount)
			var w, r int
			for s, err := range tr.Segments() {
				if err != nil {
					return out, err
				}
				op, i := "write", w
				if !s.Write {
					op, i = "read", r
					r++
				} else {
					w++
				}
				thread := "N/A"
				if s.HasThread {
					thread = fmt.Sprint(s.Thread)
				}
				p("%s %d %s %d %d %d %.4f %.4f %s", label, tr.Rank, op, i, s.Offset, s.Length, s.Start, s.End, thread)
			}
		}
	}
	return out, nil
}

// TestGoldenDXTAgainstDarshanDXTParser compares every DXT segment of every
// log with darshan-dxt-parser's output (the same darshan-util build),
// with the records of partial modules shown, kept to the record headers
// and segment lines, OST lists removed:
//
//	darshan-dxt-parser --show-incomplete LOG | grep -E '^# DXT, (file_id|rank|write_count)|^ +X_(POSIX|MPIIO) ' | sed -E 's/ +\[[0-9]+\]//g' | gzip -9n
//
// Segment lines are compared field by field (the parser pads them).
func TestGoldenDXTAgainstDarshanDXTParser(t *testing.T) {
	for _, path := range logs(t) {
		t.Run(strings.TrimPrefix(path, logsDir+"/"), func(t *testing.T) {
			want := readGolden(t, strings.TrimSuffix(goldenName(path), ".txt.gz")+".dxt.gz")
			l, c, err := darshan.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := dxtLines(l)
			if err != nil {
				t.Fatal(err)
			}
			for i := range min(len(got), len(want)) {
				g, w := got[i], want[i]
				if !strings.HasPrefix(w, "#") {
					g, w = strings.Join(strings.Fields(g), " "), strings.Join(strings.Fields(w), " ")
				}
				if g != w {
					t.Fatalf("line %d:\n got %q\nwant %q", i+1, g, w)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, darshan-dxt-parser %d", len(got), len(want))
			}
		})
	}
}

// TestGoldenLustreAgainstDarshanParser compares the LUSTRE records of
// every log that has them with darshan-parser's, the counters it prints
// as numbers (the pattern, flags and pool name, which it prints as text,
// left out of the golden file):
//
//	darshan-parser LOG | grep -P '^LUSTRE\t' | grep -v -E '_STRIPE_PATTERN|_FLAGS|_POOL_NAME' | gzip -9n
func TestGoldenLustreAgainstDarshanParser(t *testing.T) {
	n := 0
	for _, path := range logs(t) {
		golden := strings.TrimSuffix(goldenName(path), ".txt.gz") + ".lustre.gz"
		if _, err := os.Stat(golden); err != nil {
			continue
		}
		n++
		t.Run(strings.TrimPrefix(path, logsDir+"/"), func(t *testing.T) {
			want := readGolden(t, golden)
			l, c, err := darshan.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got []string
			for r, err := range l.LustreRecords() {
				if err != nil {
					t.Fatal(err)
				}
				mnt, fs := l.Mount(r.Name)
				p := func(counter string, v int64) {
					got = append(got, fmt.Sprintf("LUSTRE\t%d\t%d\t%s\t%d\t%s\t%s\t%s", r.Rank, r.ID, counter, v, r.Name, mnt, fs))
				}
				p("LUSTRE_NUM_COMPONENTS", int64(len(r.Components)))
				p("LUSTRE_NUM_STRIPES", r.Stripes())
				for i, c := range r.Components {
					k := fmt.Sprintf("LUSTRE_COMP%d_", i+1)
					p(k+"STRIPE_SIZE", c.StripeSize)
					p(k+"STRIPE_COUNT", c.StripeCount)
					p(k+"EXT_START", c.ExtStart)
					p(k+"EXT_END", c.ExtEnd)
					p(k+"MIRROR_ID", c.MirrorID)
					for j, o := range c.OSTs {
						p(fmt.Sprintf("%sOST_ID_%d", k, j), o)
					}
				}
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
					}
				}
				t.Fatalf("%d lines, darshan-parser %d", len(got), len(want))
			}
		})
	}
	if n == 0 {
		t.Fatal("no Lustre golden file matched a log")
	}
}
