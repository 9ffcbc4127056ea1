package workload_test

import (
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Every byte of every file is covered exactly once by the pattern's requests.
func TestRequestsTileFiles(t *testing.T) {
	for _, l := range []workload.Layout{workload.FilePerProcess, workload.Shared} {
		for _, s := range []workload.Spatiality{workload.Contiguous, workload.Strided} {
			p := workload.Pattern{Processes: 6, Layout: l, Spatiality: s, Op: rw.Write, RequestSize: 8, TotalBytes: 6 * 8 * 5}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			seen := map[[2]int64]bool{}
			for proc := 0; proc < p.Processes; proc++ {
				for i := 0; i < p.RequestsPerProcess(); i++ {
					f, off := p.Request(proc, i)
					if f < 0 || f >= p.Files() || off%p.RequestSize != 0 {
						t.Fatalf("%v: proc %d req %d -> file %d offset %d", p, proc, i, f, off)
					}
					k := [2]int64{int64(f), off}
					if seen[k] {
						t.Fatalf("%v: file %d offset %d requested twice", p, f, off)
					}
					seen[k] = true
				}
			}
			if len(seen) != p.Processes*p.RequestsPerProcess() {
				t.Fatalf("%v: %d distinct requests", p, len(seen))
			}
		}
	}
}

func TestStridedInterleavesProcesses(t *testing.T) {
	p := workload.Pattern{Processes: 4, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Read, RequestSize: 10, TotalBytes: 160}
	for i := 0; i < 2; i++ {
		for proc := 0; proc < 4; proc++ {
			if _, off := p.Request(proc, i); off != int64(i*4+proc)*10 {
				t.Fatalf("proc %d req %d: offset %d", proc, i, off)
			}
		}
	}
	c := p
	c.Spatiality = workload.Contiguous
	if _, off := c.Request(1, 0); off != 40 {
		t.Fatalf("contiguous proc 1 starts at %d, want 40", off)
	}
}

func TestGrid(t *testing.T) {
	g := workload.Grid(false)
	if len(g) != 144 {
		t.Fatalf("grid has %d scenarios, want 144", len(g))
	}
	classes := map[access.Class]int{}
	names := map[string]bool{}
	for _, s := range g {
		if err := s.Validate(); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		classes[s.Class()]++
		names[s.String()] = true
		if s.Layout == workload.FilePerProcess && s.Spatiality == workload.Strided {
			t.Fatalf("grid holds file-per-process strided: %v", s)
		}
	}
	if len(names) != 144 || classes[access.FPP] != 48 || classes[access.SC] != 48 || classes[access.SS] != 48 {
		t.Fatalf("names %d, classes %v", len(names), classes)
	}
	for _, s := range workload.Grid(true) {
		if s.RequestSize != 64<<10 && s.RequestSize != 128<<10 {
			t.Fatalf("validation grid request size %d", s.RequestSize)
		}
	}
}

func TestValidate(t *testing.T) {
	base := workload.Pattern{Processes: 2, Op: rw.Read, RequestSize: 4, TotalBytes: 8}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]workload.Pattern{
		"no processes": {Processes: 0, Op: rw.Read, RequestSize: 4, TotalBytes: 8},
		"no size":      {Processes: 2, Op: rw.Read, RequestSize: 0, TotalBytes: 8},
		"too little":   {Processes: 2, Op: rw.Read, RequestSize: 4, TotalBytes: 7},
		"no op":        {Processes: 2, RequestSize: 4, TotalBytes: 8},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParse(t *testing.T) {
	if l, err := workload.ParseLayout("shared"); err != nil || l != workload.Shared {
		t.Fatal(l, err)
	}
	if s, err := workload.ParseSpatiality("1d-strided"); err != nil || s != workload.Strided {
		t.Fatal(s, err)
	}
	if _, err := workload.ParseLayout("nope"); err == nil {
		t.Fatal("accepted bad layout")
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"4096", 4096, false}, {"32k", 32 << 10, false}, {"32KiB", 32 << 10, false}, {"1MiB", 1 << 20, false},
		{" 64kb ", 64 << 10, false}, {"4g", 4 << 30, false}, {"1t", 1 << 40, false}, {"10B", 10, false},
		{"", 0, true}, {"0", 0, true}, {"-1", 0, true}, {"1x", 0, true}, {"kib", 0, true},
		{"9999999999999t", 0, true},
	}
	for _, tt := range tests {
		got, err := workload.ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestNamesDistinguishTotals(t *testing.T) {
	p := workload.Pattern{Processes: 128, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Read, RequestSize: 32 << 10, TotalBytes: workload.DefaultTotal}
	small := p
	small.TotalBytes = 512 << 20
	if p.String() != "128p-shared-strided-read-32k" || small.String() != "128p-shared-strided-read-32k-512m" {
		t.Fatalf("names %q and %q", p.String(), small.String())
	}
}
