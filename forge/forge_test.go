package forge

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// sample has the columns in another order than FORGE writes them, an
// extra column, spaces around a value, a read and a direct-access row.
const sample = "operation;bandwidth;request;forwarders;clients;processes;layout;spatiality;odirect\n" +
	"write; 40.0 ;32;1;8;96;1;1;1\n" +
	"write;80.0;32;2;8;96;1;1;1\n" +
	"read;70.5;32;4;8;96;1;1;1\n" +
	"write;10;1024;0;16;192;0;0;1\n"

func TestRead(t *testing.T) {
	rows, err := Read(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Forwarders: 1, Clients: 8, Processes: 96, Layout: 1, Spatiality: 1, RequestKiB: 32, Operation: "write", Bandwidth: 40},
		{Forwarders: 2, Clients: 8, Processes: 96, Layout: 1, Spatiality: 1, RequestKiB: 32, Operation: "write", Bandwidth: 80},
		{Forwarders: 4, Clients: 8, Processes: 96, Layout: 1, Spatiality: 1, RequestKiB: 32, Operation: "read", Bandwidth: 70.5},
		{Forwarders: 0, Clients: 16, Processes: 192, RequestKiB: 1024, Operation: "write", Bandwidth: 10},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows\n%+v\nwant\n%+v", rows, want)
	}
	for i, k := range []string{"c8-p96-shared-strided-32k-write", "c8-p96-shared-strided-32k-write", "c8-p96-shared-strided-32k-read", "c16-p192-fpp-contiguous-1024k-write"} {
		if got := rows[i].ContextKey(); got != k {
			t.Errorf("row %d: ContextKey() = %q, want %q", i, got, k)
		}
	}
	for _, tt := range []struct{ name, in string }{
		{"empty", ""},
		{"missing columns", "forwarders;clients\n1;2\n"},
		{"bandwidth not a number", strings.Replace(sample, " 40.0 ", "x", 1)},
		{"layout 3", strings.Replace(sample, "32;2;8;96;1;1;1", "32;2;8;96;3;1;1", 1)},
		{"negative bandwidth", strings.Replace(sample, "80.0", "-4", 1)},
		{"infinite bandwidth", strings.Replace(sample, "80.0", "+Inf", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == sample {
				t.Fatal("test case did not change the sample")
			}
			if _, err := Read(strings.NewReader(tt.in)); !errors.Is(err, ErrFormat) {
				t.Errorf("Read(%.40q...) = %v, want ErrFormat", tt.in, err)
			}
		})
	}
}

// Write's file reads back as the rows written (bandwidths to three
// decimals), its header naming Columns in order.
func TestWriteReadsBack(t *testing.T) {
	rows, err := Read(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	rows[0].Bandwidth = 40.0004 // written as 40.000
	var b strings.Builder
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(b.String(), "\n"); head != strings.Join(Columns(), ";") {
		t.Errorf("header %q, want %q", head, strings.Join(Columns(), ";"))
	}
	back, err := Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	rows[0].Bandwidth = 40
	if !slices.Equal(back, rows) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, rows)
	}
}

// FORGE files of any machine: direct access (0 forwarders) is a row like
// any other, labelled "direct"; a byte-order mark is skipped; a file with
// commas, or without a header, gets a hint; a bad value names its line and
// column.
func TestReadAnyMachine(t *testing.T) {
	const head = "forwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n"
	rows := "0;8;96;1;0;1024;write;5269\n2;8;96;1;0;1024;write;2249\n"
	got, err := Read(strings.NewReader("\ufeff" + head + rows))
	if err != nil {
		t.Fatalf("BOM and direct access: %v", err)
	}
	if len(got) != 2 || got[0].Forwarders != 0 || got[0].Bandwidth != 5269 || got[1].Forwarders != 2 {
		t.Fatalf("rows %+v, want direct access at 5269 MiB/s, then 2 forwarders", got)
	}
	if a, b := ForwardersLabel(got[0].Forwarders), ForwardersLabel(got[1].Forwarders); a != "direct" || b != "2" {
		t.Errorf("labels %q %q, want direct 2", a, b)
	}
	for _, tt := range []struct {
		name, in, want string
	}{
		{"commas", strings.ReplaceAll(head+rows, ";", ","), "';'-separated"},
		{"tabs", strings.ReplaceAll(head+rows, ";", "\t"), "tabs"},
		{"no header", rows, "not a header"},
		{"negative forwarders", head + "-1;8;96;1;0;1024;write;5\n", "line 2: column forwarders"},
		{"zero processes", head + "1;8;0;1;0;1024;write;5\n", "line 2: column processes"},
		{"not an integer", head + "1;8;96;1;0;1024;write;5\n1;x;96;1;0;1024;write;5\n", `line 3: column clients: "x" is not an integer`},
		{"missing column", "forwarders;clients\n1;2\n", `lacks column "processes"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.in))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read: %v, want ErrFormat mentioning %q", err, tt.want)
			}
		})
	}
}

func TestReadNoRows(t *testing.T) {
	if _, err := Read(strings.NewReader(strings.Join(Columns(), ";") + "\n")); !errors.Is(err, ErrNoRows) {
		t.Errorf("Read(header only) = %v, want ErrNoRows", err)
	}
}

// FuzzRead feeds Read arbitrary bytes: it must return rows or an error,
// never panic, and every row it returns is valid.
func FuzzRead(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("forwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n1;1;1;0;0;1;write;1e300\n"))
	f.Add([]byte("\ufeffforwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n0;8;96;1;0;1024;write;5269\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := Read(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, r := range rows {
			if r.Forwarders < 0 || r.Clients <= 0 || r.Processes <= 0 || r.RequestKiB <= 0 || r.Layout < 0 || r.Layout > 1 ||
				r.Spatiality < 0 || r.Spatiality > 1 || !(r.Bandwidth >= 0) {
				t.Fatalf("invalid row %+v", r)
			}
		}
	})
}
