package fwdproto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

func sampleMsgs() []Msg {
	fi := FileInfo{Name: "a/b", Size: 42, Mode: 0o644, ModTime: time.Unix(0, 1700000000123456789),
		Atime: time.Unix(0, 1700000000000000001), Ctime: time.Unix(0, 1700000000000000002),
		Blocks: 8, Ino: 1 << 40, Nlink: 2, UID: 1000, GID: 100, Rdev: 1<<32 | 0x102}
	return []Msg{
		{Op: OpHello, ID: 1, ClientID: 7, Name: "node7"},
		{Op: OpOpen, ID: 2, Flags: OpenCreate | OpenTruncate, Mode: 0o644, Path: "dir/file"},
		{Op: OpClose, ID: 3, Handle: 9},
		{Op: OpRead, ID: 4, Handle: 9, Offset: 1 << 40, Length: 1 << 20, Process: 3},
		{Op: OpWrite, ID: 5, Handle: 9, Offset: 4096, Process: 3, Data: []byte("hello")},
		{Op: OpFsync, ID: 6, Handle: 9},
		{Op: OpStat, ID: 7, Path: "x"},
		{Op: OpUnlink, ID: 8, Path: "x"},
		{Op: OpTruncate, ID: 9, Path: "x", Length: 100},
		{Op: OpMkdir, ID: 10, Path: "d", Mode: 0o755},
		{Op: OpReadDir, ID: 11, Path: "d"},
		{Op: OpOpen, ID: 2, Response: true, Handle: 5, Info: fi},
		{Op: OpStat, ID: 7, Response: true, Info: FileInfo{Name: "d", IsDir: true, Mode: 0o755}},
		{Op: OpRead, ID: 4, Response: true, Data: []byte("data")},
		{Op: OpWrite, ID: 5, Response: true, N: 5},
		{Op: OpReadDir, ID: 11, Response: true, Entries: []FileInfo{fi, {Name: "e", IsDir: true}}},
		{Op: OpUnlink, ID: 8, Response: true, Code: CodeNotExist, Err: "x: no such file"},
		{Op: OpMkdir, ID: 10, Response: true},
		{Op: OpHello, ID: 1, Response: true, MaxFrame: DefaultMaxFrame, Servers: 4},
		{Op: OpShm, ID: 12, Length: 64 << 20},
		{Op: OpShm, ID: 12, Response: true},
		{Op: OpReadShm, ID: 13, Handle: 9, Offset: 1 << 40, Length: 32 << 10, Process: 3, ShmOff: 1 << 20},
		{Op: OpReadShm, ID: 13, Response: true, N: 100},
		{Op: OpWriteShm, ID: 14, Handle: 9, Offset: 8, Length: 5, Process: 3, ShmOff: 1<<64 - 1},
		{Op: OpWriteShm, ID: 14, Response: true, N: 5},
		{Op: OpRing, ID: 15, ShmOff: 64 << 10, Length: 256},
		{Op: OpRing, ID: 15, Response: true},
		{Op: OpWake},
		{Op: OpWake, Response: true},
		{Op: OpRename, ID: 16, Path: "a", Path2: "b/c"},
		{Op: OpRename, ID: 16, Response: true},
		{Op: OpLink, ID: 17, Path: "a", Path2: "hard"},
		{Op: OpLink, ID: 17, Response: true, Code: CodeCrossDevice, Err: "no"},
		{Op: OpSymlink, ID: 18, Path: "l", Path2: "../t"},
		{Op: OpSymlink, ID: 18, Response: true},
		{Op: OpReadlink, ID: 19, Path: "l"},
		{Op: OpReadlink, ID: 19, Response: true, Path2: "../t"},
		{Op: OpSetattr, ID: 20, Path: "a", Flags: SetMode | SetMtime, Mode: 0o600, UID: 1, GID: 2, Atime: -1, Mtime: 1 << 62},
		{Op: OpSetattr, ID: 20, Response: true},
		{Op: OpStatfs, ID: 21, Path: "."},
		{Op: OpStatfs, ID: 21, Response: true, FS: FS{BlockSize: 4096, Blocks: 1 << 30, Free: 5, Avail: 4, Files: 9, FreeFiles: 8, NameLen: 255}},
		{Op: OpStat, ID: 7, Response: true, Info: FileInfo{Name: "l", Mode: fs.ModeSymlink | 0o777}},
		{Op: OpMknod, ID: 22, Path: "dev/null", Mode: TypeChar | 0o666, Rdev: 0x103},
		{Op: OpMknod, ID: 22, Response: true},
		{Op: OpMknod, ID: 22, Response: true, Code: CodePermission, Err: "mknod dev/null: operation not permitted"},
		{Op: OpStat, ID: 7, Response: true, Info: FileInfo{Name: "fifo", Mode: fs.ModeNamedPipe | 0o644, Ino: 3, Nlink: 1}},
		{Op: OpAuth, ID: 23, Auth: Auth{Version: AuthVersion, Step: AuthChallenge, Nonce: [NonceSize]byte{1, 2, 3}}},
		{Op: OpAuth, ID: 23, Response: true, Auth: Auth{Version: AuthVersion, Step: AuthChallenge, Nonce: [NonceSize]byte{4}, Proof: [32]byte{5, 31: 6}}},
		{Op: OpAuth, ID: 24, Auth: Auth{Version: AuthVersion, Step: AuthProve, Proof: [32]byte{7, 31: 8}}},
		{Op: OpAuth, ID: 24, Response: true, Auth: Auth{Version: AuthVersion, Step: AuthProve}},
		{Op: OpHello, ID: 25, Response: true, Code: CodeAuth, Err: "fwd: forwarder requires authentication"},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, want := range sampleMsgs() {
		t.Run(fmt.Sprintf("%s-resp=%v", want.Op, want.Response), func(t *testing.T) {
			frame := Append(nil, &want)
			r := NewReader(bytes.NewReader(frame), 0)
			h, p, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			var got Msg
			if err := Decode(h, p, &got); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got.Data) == 0 {
				got.Data = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if _, _, err := r.ReadFrame(); err != io.EOF {
				t.Errorf("after the frame: got %v, want io.EOF", err)
			}
		})
	}
}

func TestBadFrames(t *testing.T) {
	good := Append(nil, &Msg{Op: OpStat, ID: 1, Path: "x"})
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"magic", mod(func(b []byte) []byte { b[4] = 0; return b }), ErrBadMagic},
		{"version", mod(func(b []byte) []byte { b[6] = 9; return b }), ErrBadVersion},
		{"op", mod(func(b []byte) []byte { b[7] = 99; return b }), ErrBadOp},
		{"too large", mod(func(b []byte) []byte { b[0] = 0x7f; return b }), ErrTooLarge},
		{"short length", mod(func(b []byte) []byte { b[3] = 3; return b }), ErrShort},
		{"cut", good[:len(good)-1], io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := NewReader(bytes.NewReader(tt.frame), 1<<20).ReadFrame()
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	// Malformed payloads with a valid header.
	payloads := []struct {
		name string
		m    Msg
		cut  int
	}{
		{"stat path cut", Msg{Op: OpStat, Path: "abc"}, 1},
		{"read cut", Msg{Op: OpRead, Handle: 1}, 4},
		{"mknod path cut", Msg{Op: OpMknod, Mode: TypeFIFO | 0o644, Path: "p"}, 1},
	}
	for _, tt := range payloads {
		t.Run(tt.name, func(t *testing.T) {
			f := Append(nil, &tt.m)
			h, _, _ := ParseHeader(f, DefaultMaxFrame)
			var m Msg
			if err := Decode(h, f[HeaderSize:len(f)-tt.cut], &m); !errors.Is(err, ErrMalformed) {
				t.Errorf("got %v, want ErrMalformed", err)
			}
		})
	}
}

func TestUnixType(t *testing.T) {
	for _, m := range []fs.FileMode{0, fs.ModeDir, fs.ModeSymlink, fs.ModeNamedPipe, fs.ModeSocket, fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice} {
		u := UnixType(m | 0o640)
		if got := FileType(u | 0o640); got != m {
			t.Errorf("FileType(UnixType(%v)) = %v", m, got)
		}
	}
	if UnixType(0o644) != TypeRegular || FileType(TypeRegular) != 0 {
		t.Error("a regular file has type S_IFREG and no fs.FileMode type bits")
	}
}

// halves returns its two parts in separate Read calls.
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

type result struct {
	hdr  Header
	msg  Msg
	err  string
	derr string
}

func decodeAll(r io.Reader) []result {
	fr := NewReader(r, 1<<16)
	var out []result
	for i := 0; i < 64; i++ {
		h, p, err := fr.ReadFrame()
		res := result{hdr: h}
		if err != nil {
			res.err = err.Error()
			out = append(out, res)
			return out
		}
		if derr := Decode(h, p, &res.msg); derr != nil {
			res.derr = derr.Error()
		} else {
			// Re-encoding a decoded message gives the same frame.
			again := Append(nil, &res.msg)
			h2, n, err := ParseHeader(again, 1<<30)
			if err != nil || h2 != h || n != len(p) {
				res.derr = fmt.Sprintf("re-encode mismatch: %v %v %d %d", err, h2, n, len(p))
			}
		}
		res.msg.Data = nil
		out = append(out, res)
	}
	return out
}

func FuzzReader(f *testing.F) {
	for _, m := range sampleMsgs() {
		f.Add(Append(nil, &m))
	}
	f.Add(append(Append(nil, &sampleMsgs()[0]), Append(nil, &sampleMsgs()[4])...))
	f.Add([]byte{0, 0, 0, 12, 0xAD, 0xF0, 1, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := decodeAll(bytes.NewReader(data))
		mid := len(data) / 2
		split := decodeAll(&halves{parts: [][]byte{append([]byte(nil), data[:mid]...), append([]byte(nil), data[mid:]...)}})
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("decoding in two halves differs:\nwhole %+v\nsplit %+v", whole, split)
		}
		for _, r := range whole {
			if r.derr != "" && !bytes.Contains([]byte(r.derr), []byte("fwdproto:")) {
				t.Fatalf("unexpected decode error %q", r.derr)
			}
			if len(r.derr) > 16 && r.derr[:16] == "re-encode mismat" {
				t.Fatal(r.derr)
			}
		}
	})
}

func ExampleAppend() {
	frame := Append(nil, &Msg{Op: OpStat, ID: 42, Path: "data/out.0"})
	h, n, _ := ParseHeader(frame, DefaultMaxFrame)
	var m Msg
	_ = Decode(h, frame[HeaderSize:HeaderSize+n], &m)
	fmt.Println(len(frame), m.Op, m.ID, m.Path)
	// Output: 28 stat 42 data/out.0
}
