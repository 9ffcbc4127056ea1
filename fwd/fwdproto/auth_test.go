package fwdproto

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProofs(t *testing.T) {
	tok := []byte("0123456789abcdef0123456789abcdef")
	cn, sn := [NonceSize]byte{1}, [NonceSize]byte{2}
	sp, cp := ServerProof(tok, cn, sn), ClientProof(tok, cn, sn)
	if ProofEqual(sp, cp) {
		t.Error("the server's proof is also the client's: one could be replayed as the other")
	}
	if !ProofEqual(cp, ClientProof(tok, cn, sn)) {
		t.Error("the same inputs give different proofs")
	}
	for name, other := range map[string][32]byte{
		"another token":        ClientProof([]byte("1123456789abcdef0123456789abcdef"), cn, sn),
		"another server nonce": ClientProof(tok, cn, [NonceSize]byte{3}),
		"another client nonce": ClientProof(tok, [NonceSize]byte{3}, sn),
		"nonces swapped":       ClientProof(tok, sn, cn),
	} {
		if ProofEqual(cp, other) {
			t.Errorf("%s gives the same proof", name)
		}
	}
	a, _ := NewNonce()
	b, _ := NewNonce()
	if a == b {
		t.Error("two nonces are equal")
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	if err := WriteTokenFile(p); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokenFile(p); err == nil {
		t.Error("WriteTokenFile replaced an existing token")
	}
	tok, err := ReadTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 {
		t.Errorf("token of %d bytes, want 64 hex digits", len(tok))
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(p); !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a group-readable token: %v, want a refusal saying chmod 600", err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(short); !errors.Is(err, ErrToken) || !strings.Contains(err.Error(), "/dev/urandom") {
		t.Errorf("a short token: %v, want a refusal saying how to make one", err)
	}
}

// FuzzDecodeAuth decodes arbitrary auth payloads, as request and as
// response: the decoder never panics, and what it accepts encodes back to
// the same bytes.
func FuzzDecodeAuth(f *testing.F) {
	for _, m := range sampleMsgs() {
		if m.Op == OpAuth {
			fr := Append(nil, &m)
			f.Add(m.Response, fr[HeaderSize:])
		}
	}
	f.Add(false, []byte{1, 1})
	f.Add(true, []byte{0, 20, 0, 3, 'a', 'b', 'c'})
	f.Add(false, []byte{9, 2, 0})
	f.Fuzz(func(t *testing.T, resp bool, p []byte) {
		typ := uint8(OpAuth)
		if resp {
			typ |= RespFlag
		}
		var m Msg
		if err := Decode(Header{Type: typ, ID: 7}, p, &m); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if got := Append(nil, &m)[HeaderSize:]; !bytes.Equal(got, p) {
			t.Fatalf("re-encoded %x, decoded from %x", got, p)
		}
	})
}
