package qos

import (
	"errors"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/rw"
)

func TestParse(t *testing.T) {
	got, err := Parse(`# site rules
job=ckpt op=write rate=200MiB burst=16MiB
job=analysis weight=3 ; job=* rate=1GB/s
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Job: "ckpt", Op: rw.Write, Rate: 200 << 20, Burst: 16 << 20},
		{Job: "analysis", Weight: 3},
		{Job: "*", Rate: 1e9},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rules, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"rate=1MiB", "line 1: qos: bad rule: \"rate=1MiB\" has no job="},
		{"job=a", "sets neither rate= nor weight="},
		{"job=a rate=12XB", "use a whole number of bytes"},
		{"job=a rate=0", "leave rate out"},
		{"job=a weight=0", "weight=0: use a whole number from 1 to 1000"},
		{"job=a weight=1001", "from 1 to 1000"},
		{"job=a op=stat rate=1M", "op=stat: use read, write or any"},
		{"job=a burst=1M weight=1", "burst without a rate"},
		{"job=a rate=1M rate=2M", "rate= given twice"},
		{"\n\njob=a speed=1M", "line 3: qos: bad rule: unknown field \"speed\""},
		{"job=a rate", "fields are key=value"},
		{"job=a rate=99999999999999999T", "too large"},
	} {
		_, err := Parse(tt.src)
		if err == nil || !errors.Is(err, ErrBadRule) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): got %v, want an ErrBadRule containing %q", tt.src, err, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "10": 10, "1KiB": 1024, "1KB": 1000, "2M": 2 << 20, "3GB/s": 3e9, "5B": 5} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

// FuzzParse checks that Parse never panics, that what it accepts is valid,
// and that Format writes rules Parse reads back unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"job=ckpt op=write rate=200MiB burst=16MiB",
		"job=* weight=2; job=x op=read rate=1G",
		"# comment\njob=a rate=1KB/s\n\n",
		"job==", "job=a rate=-1", "job=a;;weight=5 weight=6", "job=\x00 rate=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		rules, err := Parse(src)
		if err != nil {
			if !errors.Is(err, ErrBadRule) {
				t.Fatalf("error %v does not wrap ErrBadRule", err)
			}
			return
		}
		for _, r := range rules {
			if err := r.Validate(); err != nil {
				t.Fatalf("accepted an invalid rule %+v: %v", r, err)
			}
		}
		again, err := Parse(Format(rules))
		if err != nil {
			t.Fatalf("Format's output %q does not parse: %v", Format(rules), err)
		}
		if len(again) != len(rules) {
			t.Fatalf("round trip: %d rules, want %d", len(again), len(rules))
		}
		for i := range rules {
			if again[i] != rules[i] {
				t.Fatalf("round trip: rule %d is %+v, want %+v", i, again[i], rules[i])
			}
		}
		if _, err := NewGate(Config{Rules: rules}); err != nil {
			t.Fatalf("NewGate refused parsed rules: %v", err)
		}
	})
}
