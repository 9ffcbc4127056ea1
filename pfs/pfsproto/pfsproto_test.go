package pfsproto_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/adaptio/adaptio/backend"
	"github.com/adaptio/adaptio/pfs/pfsproto"
)

func encode(t testing.TB, r pfsproto.Request) []byte {
	b, err := pfsproto.AppendRequest(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, r.Data...)
}

func TestRequestRoundTrip(t *testing.T) {
	tests := []pfsproto.Request{
		{ID: 1, Op: pfsproto.OpPing},
		{ID: 2, Op: pfsproto.OpRead, Path: "a/b", A: 1 << 40, B: 65536},
		{ID: 1<<64 - 1, Op: pfsproto.OpWrite, Path: "f", A: 7, Data: []byte("hello")},
		{ID: 4, Op: pfsproto.OpTruncate, Path: "dir/x", A: -1},
	}
	var stream []byte
	for _, want := range tests {
		frame := encode(t, want)
		stream = append(stream, frame...)
		got, err := pfsproto.DecodeRequest(frame[pfsproto.LenBytes:])
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Op != want.Op || got.Path != want.Path || got.A != want.A || got.B != want.B || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	r := pfsproto.NewReader(iotest.OneByteReader(bytes.NewReader(stream)), 0)
	for i := range tests {
		body, err := r.Next(nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got, _ := pfsproto.DecodeRequest(body); got.ID != tests[i].ID {
			t.Errorf("frame %d: id %d, want %d", i, got.ID, tests[i].ID)
		}
	}
	if _, err := r.Next(nil); err != io.EOF {
		t.Errorf("after the last frame: got %v, want io.EOF", err)
	}
}

func TestReaderLimits(t *testing.T) {
	big := encode(t, pfsproto.Request{ID: 1, Op: pfsproto.OpWrite, Path: "f", Data: make([]byte, 100)})
	if _, err := pfsproto.NewReader(bytes.NewReader(big), 50).Next(nil); !errors.Is(err, pfsproto.ErrFrameTooLarge) {
		t.Errorf("oversized frame: got %v, want ErrFrameTooLarge", err)
	}
	if _, err := pfsproto.NewReader(bytes.NewReader(big[:20]), 0).Next(nil); !errors.Is(err, pfsproto.ErrMalformed) {
		t.Errorf("truncated frame: got %v, want ErrMalformed", err)
	}
	if _, err := pfsproto.AppendRequest(nil, &pfsproto.Request{Op: pfsproto.OpWrite, Data: make([]byte, pfsproto.MaxData+1)}); !errors.Is(err, pfsproto.ErrFrameTooLarge) {
		t.Errorf("encoding oversized data: got %v, want ErrFrameTooLarge", err)
	}
	bad := encode(t, pfsproto.Request{ID: 1, Op: pfsproto.OpStat, Path: "x"})
	bad[pfsproto.LenBytes+8] = 99
	if _, err := pfsproto.DecodeRequest(bad[pfsproto.LenBytes:]); !errors.Is(err, pfsproto.ErrMalformed) {
		t.Errorf("unknown op: got %v, want ErrMalformed", err)
	}
}

func TestDirRoundTrip(t *testing.T) {
	ents := []backend.FileInfo{
		{Name: "a", Size: 10, Mode: 0o644, ModTime: time.Unix(5, 6)},
		{Name: "sub", Mode: 0o755 | 1<<31, IsDir: true, ModTime: time.Unix(7, 0)},
	}
	got, err := pfsproto.DecodeDir(pfsproto.AppendDir(nil, ents))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, ents, func(a, b backend.FileInfo) bool {
		return a.Name == b.Name && a.Size == b.Size && a.Mode == b.Mode && a.ModTime.Equal(b.ModTime) && a.IsDir == b.IsDir
	}) {
		t.Errorf("got %+v, want %+v", got, ents)
	}
}

// halves returns a reader delivering b in two reads split at the middle.
type halves struct{ parts [][]byte }

func (h *halves) Read(p []byte) (int, error) {
	for len(h.parts) > 0 && len(h.parts[0]) == 0 {
		h.parts = h.parts[1:]
	}
	if len(h.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, h.parts[0])
	h.parts[0] = h.parts[0][n:]
	return n, nil
}

func decodeAll(r io.Reader) (out []string) {
	fr := pfsproto.NewReader(r, 1<<16)
	for {
		body, err := fr.Next(nil)
		if err != nil {
			return append(out, "end")
		}
		if req, err := pfsproto.DecodeRequest(body); err == nil {
			again, err := pfsproto.AppendRequest(nil, &req)
			if err != nil || !bytes.Equal(append(again, req.Data...)[pfsproto.LenBytes:], body) {
				panic("request does not re-encode to its own bytes")
			}
			out = append(out, "req:"+req.Op.String()+":"+req.Path)
		}
		if resp, err := pfsproto.DecodeResponse(body); err == nil {
			out = append(out, "resp")
			if resp.Status == pfsproto.StatusOK {
				if ents, err := pfsproto.DecodeDir(resp.Data); err == nil {
					out = append(out, "dir:"+string(rune('0'+len(ents)%10)))
				}
			}
		}
	}
}

// FuzzDecode feeds each input in two halves and in one piece: the frames
// and messages decoded must be the same, and nothing may panic.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, pfsproto.Request{ID: 9, Op: pfsproto.OpWrite, Path: "d/f", A: 3, Data: []byte("xyz")}))
	f.Add(append(encode(f, pfsproto.Request{ID: 1, Op: pfsproto.OpStat, Path: "f"}), encode(f, pfsproto.Request{ID: 2, Op: pfsproto.OpRead, Path: "g", B: 4})...))
	f.Add(append(pfsproto.AppendResponseHeader(nil, 3, pfsproto.StatusOK, 0, 4+23), pfsproto.AppendDir(nil, []backend.FileInfo{{Name: "ab"}})...))
	f.Add([]byte{0, 0, 0, 1, 0})
	f.Add(append(pfsproto.AppendResponseHeader(nil, 4, pfsproto.StatusNoSpace, 0, 5), "full!"...))
	f.Add(encode(f, pfsproto.Request{ID: 5, Op: pfsproto.OpHello, A: 2, B: pfsproto.Version}))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole := decodeAll(bytes.NewReader(in))
		mid := len(in) / 2
		split := decodeAll(&halves{parts: [][]byte{slices.Clone(in[:mid]), slices.Clone(in[mid:])}})
		if !slices.Equal(whole, split) {
			t.Fatalf("whole: %v, in two halves: %v", whole, split)
		}
	})
}

// ENOSPC and EDQUOT travel as their own statuses to clients of version 1
// and as StatusError to version 0, and come back out as the errno.
func TestNoSpaceStatuses(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want pfsproto.Status
	}{
		{fmt.Errorf("write: %w", syscall.ENOSPC), pfsproto.StatusNoSpace},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, pfsproto.StatusQuota},
	} {
		st := pfsproto.StatusOf(tt.err)
		if st != tt.want {
			t.Errorf("StatusOf(%v) = %d, want %d", tt.err, st, tt.want)
		}
		if got := st.Sentinel(); !errors.Is(tt.err, got) {
			t.Errorf("status %d stands for %v, which %v does not match", st, got, tt.err)
		}
		if got := pfsproto.StatusFor(st, 0); got != pfsproto.StatusError {
			t.Errorf("status %d for a version-0 client: %d, want StatusError", st, got)
		}
		if got := pfsproto.StatusFor(st, pfsproto.Version); got != st {
			t.Errorf("status %d for a current client: %d", st, got)
		}
		body := pfsproto.AppendResponseHeader(nil, 7, st, 0, 0)[pfsproto.LenBytes:]
		if r, err := pfsproto.DecodeResponse(body); err != nil || r.Status != st {
			t.Errorf("status %d decodes as %d, %v", st, r.Status, err)
		}
	}
	if got := pfsproto.StatusFor(pfsproto.StatusNotExist, 0); got != pfsproto.StatusNotExist {
		t.Errorf("a version-0 status changed for a version-0 client: %d", got)
	}
}
