package cpustat

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

// A /proc/stat of a guest with two virtual CPUs (Linux 6.x).
const sample = `cpu  47218 0 116469 878058 1208 0 1233 8484 0 0
cpu0 23240 0 56742 441112 326 0 580 4331 0 0
cpu1 23977 0 59727 436946 881 0 652 4153 0 0
intr 4324951 0 0 0
ctxt 6244851
btime 1795461546
`

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := Times{Total: 47218 + 116469 + 878058 + 1208 + 1233 + 8484, Steal: 8484}
	if got != want {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
}

// A kernel older than 2.6.11 gives four values and no steal; guest fields
// are not counted again.
func TestParseFieldCounts(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Times
	}{
		{"cpu 1 2 3 4", Times{Total: 10}},
		{"cpu 1 2 3 4 5 6 7", Times{Total: 28}},
		{"cpu 1 2 3 4 5 6 7 8 100 100", Times{Total: 36, Steal: 8}},
	} {
		got, err := Parse(strings.NewReader(tc.line + "\n"))
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"cpu0 1 2 3 4 5 6 7 8\n",           // per-CPU lines only
		"cpu 1 2 3\n",                      // too few values
		"cpu 1 2 x 4 5 6 7 8\n",            // not a number
		"cpu 1 2 -3 4 5 6 7 8\n",           // negative
		"cpu 18446744073709551615 1 0 0\n", // overflows the total
	} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrFormat) {
			t.Errorf("Parse(%q): err %v, want ErrFormat", in, err)
		}
	}
}

func TestStolenSince(t *testing.T) {
	a := Times{Total: 1000, Steal: 10}
	b := Times{Total: 1400, Steal: 110}
	if f, ok := b.StolenSince(a); !ok || math.Abs(f-0.25) > 1e-12 {
		t.Errorf("StolenSince = %v, %v; want 0.25, true", f, ok)
	}
	for _, tc := range []struct{ later, earlier Times }{
		{a, a},                              // no time passed
		{a, b},                              // counters went back
		{Times{Total: 1100, Steal: 200}, a}, // steal beyond the total
		{Times{Total: 1100, Steal: 5}, a},   // steal went back
	} {
		if f, ok := tc.later.StolenSince(tc.earlier); ok {
			t.Errorf("%+v since %+v = %v, want not ok", tc.later, tc.earlier, f)
		}
	}
}

func TestRead(t *testing.T) {
	if _, err := os.Stat(Path); err != nil {
		t.Skipf("%s: %v (not Linux?)", Path, err)
	}
	t0, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if t0.Total == 0 || t0.Steal > t0.Total {
		t.Errorf("Read = %+v", t0)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("cpu 1 2 3 4\n")
	f.Add("cpu 1 2 3 4 5 6 7 8 9 10 11 12\n")
	f.Add("cpu 18446744073709551615 0 0 0 0 0 0 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		if got.Steal > got.Total {
			t.Errorf("Parse(%q) = %+v: steal beyond the total", in, got)
		}
	})
}
