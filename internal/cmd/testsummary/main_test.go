package main

import (
	"strings"
	"testing"
)

const run = `{"Action":"run","Package":"p/a","Test":"TestFuse"}
{"Action":"output","Package":"p/a","Test":"TestFuse","Output":"=== RUN   TestFuse\n"}
{"Action":"output","Package":"p/a","Test":"TestFuse","Output":"    fuse_test.go:20: fusermount3 not found: install fuse3\n"}
{"Action":"output","Package":"p/a","Test":"TestFuse","Output":"--- SKIP: TestFuse (0.00s)\n"}
{"Action":"skip","Package":"p/a","Test":"TestFuse","Elapsed":0}
{"Action":"pass","Package":"p/a","Elapsed":0.5}
{"Action":"output","Package":"p/b","Test":"TestBad","Output":"    b_test.go:9: got 2, want 3\n"}
{"Action":"fail","Package":"p/b","Test":"TestBad","Elapsed":0.1}
{"Action":"fail","Package":"p/b","Elapsed":0.2}
`

func TestSummaryNamesSkipsWithTheirReasonAndFails(t *testing.T) {
	s, err := read(strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if s.write(&out) {
		t.Error("a run with a failed test reported as passed")
	}
	got := out.String()
	for _, want := range []string{
		"SKIP p/a TestFuse: fuse_test.go:20: fusermount3 not found: install fuse3",
		"1 skipped test(s)",
		"b_test.go:9: got 2, want 3",
		"ok  \tp/a",
		"FAIL\tp/b",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

func TestSummaryPassingRun(t *testing.T) {
	s, err := read(strings.NewReader(`{"Action":"pass","Package":"p/a","Elapsed":1}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if !s.write(&out) || !strings.Contains(out.String(), "no test skipped") {
		t.Errorf("passing run: %q", out.String())
	}
}

func TestSummaryRefusesBrokenEvents(t *testing.T) {
	if _, err := read(strings.NewReader("{\"Action\":\n")); err == nil {
		t.Error("a broken JSON event was accepted")
	}
}
