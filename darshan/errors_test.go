package darshan_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/darshan"
)

// readAll reads everything a log holds: every counter record and every
// DXT segment.
func readAll(l *darshan.Log) (records, segments int, err error) {
	for _, m := range []darshan.Module{darshan.POSIX, darshan.MPIIO, darshan.STDIO} {
		for _, err := range l.Records(m) {
			if err != nil {
				return records, segments, err
			}
			records++
		}
	}
	for _, err := range l.LustreRecords() {
		if err != nil {
			return records, segments, err
		}
		records++
	}
	for _, m := range []darshan.Module{darshan.DXTPOSIX, darshan.DXTMPIIO} {
		for tr, err := range l.Traces(m) {
			if err != nil {
				return records, segments, err
			}
			for _, err := range tr.Segments() {
				if err != nil {
					return records, segments, err
				}
				segments++
			}
		}
	}
	return records, segments, nil
}

// A damaged log gets an error that names what is wrong and where, never a
// panic or a silent partial read.
func TestMalformedLogsAreRefusedWithTheRegionAndOffset(t *testing.T) {
	sample := logsDir + "/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Skipf("%s: %v (the shared data set is not beside the repository)", sample, err)
	}
	open := func(b []byte) (*darshan.Log, error) { return darshan.NewLog(bytes.NewReader(b), int64(len(b))) }
	if _, err := open(data); err != nil {
		t.Fatalf("the intact log: %v", err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(data)) }
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "version string"},
		{"unknown version", mutate(func(b []byte) []byte { copy(b, "3.99\x00"); return b }), "format version 3.99"},
		{"not a version", mutate(func(b []byte) []byte { copy(b, "abc\x00"); return b }), "not MAJOR.MINOR"},
		{"bad magic", mutate(func(b []byte) []byte { b[8] ^= 0xff; return b }), "bad magic"},
		{"unknown compression", mutate(func(b []byte) []byte { b[16] = 7; return b }), "compression type 7"},
		{"header cut short", data[:100], "header at byte 0"},
		{"region past the end", data[:len(data)-200], "outside the file"},
		{"job region garbage", mutate(func(b []byte) []byte { copy(b[1328:1340], "garbagegarba"); return b }), "job region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := open(tc.data)
			if err == nil {
				_, _, err = readAll(l)
			}
			if !errors.Is(err, darshan.ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrFormat mentioning %q", err, tc.want)
			}
		})
	}
}

// FuzzLog reads arbitrary bytes as a log, seeded with the real logs of
// the shared data set (those under 64 KiB): whatever the input, an error
// or a full read, never a panic. Every input decompresses regions, so
// bound the minimisation of a new input, or the fuzzer stalls on it:
//
//	go test -run XXX -fuzz FuzzLog -fuzzminimizetime 1s ./darshan
//
// (2026-11-25: 3.0 M inputs in 2 minutes, none failed.)
func FuzzLog(f *testing.F) {
	for _, p := range logsOrNone() {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte("3.41\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := darshan.NewLog(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, darshan.ErrFormat) {
				t.Fatalf("error not wrapping ErrFormat: %v", err)
			}
			return
		}
		readAll(l)
	})
}
