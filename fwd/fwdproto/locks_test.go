package fwdproto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func lockMsgs() []Msg {
	return []Msg{
		{Op: OpLock, ID: 3, Handle: 9, Lock: LockArgs{Kind: LockPOSIX, Type: LockWrite, Wait: true, PID: 77, Owner: 1 << 60, Start: 4096, End: 8191}},
		{Op: OpLock, ID: 4, Handle: 9, Lock: LockArgs{Kind: LockFlock, Type: LockUnlock, Owner: 5, Start: 0, End: LockEOF}},
		{Op: OpLock, ID: 5, Handle: 9, Lock: LockArgs{Kind: LockPOSIX, Type: LockCancel, Owner: 5}},
		{Op: OpGetlk, ID: 6, Handle: 9, Lock: LockArgs{Kind: LockPOSIX, Type: LockRead, Owner: 5, Start: 10, End: 20}},
		{Op: OpGetlk, ID: 6, Response: true, Lock: LockArgs{Type: LockWrite, PID: 4242, Start: 0, End: LockEOF}},
		{Op: OpLock, ID: 3, Response: true},
		{Op: OpLock, ID: 3, Response: true, Code: CodeLocked, Err: "held by another client"},
		{Op: OpFallocate, ID: 7, Handle: 9, Mode: 0, Offset: 1 << 20, Length: 1 << 30},
		{Op: OpFallocate, ID: 7, Response: true},
	}
}

func TestLockRoundTrip(t *testing.T) {
	for _, m := range lockMsgs() {
		roundTrip(t, m, 4)
	}
}

// roundTrip encodes m, checks its frame's version, and decodes it back to
// m.
func roundTrip(t *testing.T, m Msg, version byte) {
	t.Helper()
	frame := Append(nil, &m)
	if frame[6] != version {
		t.Errorf("%s frame has version %d, want %d", m.Op, frame[6], version)
	}
	h, n, err := ParseHeader(frame, DefaultMaxFrame)
	if err != nil {
		t.Fatalf("%s: %v", m.Op, err)
	}
	var got Msg
	if err := Decode(h, frame[HeaderSize:HeaderSize+n], &got); err != nil {
		t.Fatalf("%s: %v", m.Op, err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("%s: got %+v, want %+v", m.Op, got, m)
	}
}

// TestVersions: operations of version 3 travel in version 3 frames, so a
// daemon or client of version 3 reads them, and a version 3 frame cannot
// carry an operation of version 4.
func TestVersions(t *testing.T) {
	stat := Append(nil, &Msg{Op: OpStat, ID: 1, Path: "x"})
	if stat[6] != 3 {
		t.Fatalf("stat frame has version %d, want 3", stat[6])
	}
	// A version 4 peer still reads a version 4 frame of an old operation.
	stat[6] = 4
	if _, _, err := ParseHeader(stat, DefaultMaxFrame); err != nil {
		t.Errorf("version 4 stat: %v", err)
	}
	lock := Append(nil, &lockMsgs()[0])
	lock[6] = 3
	if _, _, err := ParseHeader(lock, DefaultMaxFrame); !errors.Is(err, ErrBadOp) {
		t.Errorf("lock in a version 3 frame: %v, want ErrBadOp", err)
	}
	for _, v := range []byte{2, Version + 1} {
		stat[6] = v
		if _, _, err := ParseHeader(stat, DefaultMaxFrame); !errors.Is(err, ErrBadVersion) {
			t.Errorf("version %d: %v, want ErrBadVersion", v, err)
		}
	}
}

func TestLockMalformed(t *testing.T) {
	good := Append(nil, &lockMsgs()[0])
	for name, patch := range map[string]func(p []byte){
		"kind 0":      func(p []byte) { p[16] = 0 },
		"kind 3":      func(p []byte) { p[16] = 3 },
		"type 4":      func(p []byte) { p[17] = 4 },
		"wait 2":      func(p []byte) { p[18] = 2 },
		"start < 0":   func(p []byte) { p[23] = 0x80 },
		"end cut off": nil,
	} {
		p := bytes.Clone(good[HeaderSize:])
		if patch != nil {
			patch(p)
		} else {
			p = p[:len(p)-1]
		}
		h, _, _ := ParseHeader(good, DefaultMaxFrame)
		var m Msg
		if err := Decode(h, p, &m); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzLockFrames decodes arbitrary bytes after version 4's frames, whole
// and in two halves, as FuzzReader does for the others: the same results,
// errors only of this package, and a decoded frame re-encodes to its length.
func FuzzLockFrames(f *testing.F) {
	var all []byte
	for _, m := range lockMsgs() {
		b := Append(nil, &m)
		f.Add(b)
		all = append(all, b...)
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := decodeAll(bytes.NewReader(data))
		mid := len(data) / 2
		split := decodeAll(&halves{parts: [][]byte{bytes.Clone(data[:mid]), bytes.Clone(data[mid:])}})
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("decoding in two halves differs:\nwhole %+v\nsplit %+v", whole, split)
		}
		for _, r := range whole {
			if r.derr != "" && !bytes.Contains([]byte(r.derr), []byte("fwdproto:")) {
				t.Fatalf("unexpected decode error %q", r.derr)
			}
		}
	})
}
