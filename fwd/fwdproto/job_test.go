package fwdproto

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func jobMsgs() []Msg {
	return []Msg{
		{Op: OpJob, ID: 8, Process: 4242, Job: "123456"},
		{Op: OpJob, ID: 9, Process: AllProcesses, Job: "ckpt.7"},
		{Op: OpJob, ID: 10, Process: 1, Job: ""},
		{Op: OpJob, ID: 8, Response: true},
		{Op: OpJob, ID: 8, Response: true, Code: CodeBadArgument, Err: "bad job id"},
	}
}

func TestJobRoundTrip(t *testing.T) {
	for _, m := range jobMsgs() {
		roundTrip(t, m, 5)
	}
}

// TestJobVersions: a job request needs a version 5 frame (a daemon of
// version 4 refuses it as an unknown operation), and an overlong job id or
// trailing bytes are malformed.
func TestJobVersions(t *testing.T) {
	frame := Append(nil, &jobMsgs()[0])
	frame[6] = 4
	if _, _, err := ParseHeader(frame, DefaultMaxFrame); !errors.Is(err, ErrBadOp) {
		t.Errorf("job in a version 4 frame: %v, want ErrBadOp", err)
	}
	long := Append(nil, &Msg{Op: OpJob, ID: 1, Job: strings.Repeat("j", MaxJob+1)})
	h, n, err := ParseHeader(long, DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	var m Msg
	if err := Decode(h, long[HeaderSize:HeaderSize+n], &m); !errors.Is(err, ErrMalformed) {
		t.Errorf("a %d-byte job id: %v, want ErrMalformed", MaxJob+1, err)
	}
	frame = Append(nil, &jobMsgs()[0])
	h, n, _ = ParseHeader(frame, DefaultMaxFrame)
	if err := Decode(h, append(frame[HeaderSize:HeaderSize+n:HeaderSize+n], 0), &m); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing byte: %v, want ErrMalformed", err)
	}
}

// FuzzDecodeJob feeds job frames (and mutations) to the frame reader, whole
// and in two halves, as FuzzReader does for the other operations.
func FuzzDecodeJob(f *testing.F) {
	for _, m := range jobMsgs() {
		f.Add(Append(nil, &m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := decodeAll(bytes.NewReader(data))
		mid := len(data) / 2
		split := decodeAll(&halves{parts: [][]byte{append([]byte(nil), data[:mid]...), append([]byte(nil), data[mid:]...)}})
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("decoding in two halves differs:\nwhole %+v\nsplit %+v", whole, split)
		}
		for _, r := range whole {
			if r.derr != "" && !strings.Contains(r.derr, "fwdproto:") {
				t.Fatalf("unexpected decode error %q", r.derr)
			}
			if strings.HasPrefix(r.derr, "re-encode mismat") {
				t.Fatal(r.derr)
			}
		}
	})
}
