package keyring_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/adaptio/adaptio/council/keyring"
)

func TestSignVerifyRoles(t *testing.T) {
	set, err := keyring.Generate(3)
	if err != nil {
		t.Fatal(err)
	}
	subj, body := "adaptio.default.decision", []byte(`{"v":1,"round":7}`)
	hc, err := set.Council.Header(subj, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Ring.VerifyCouncil(hc, subj, body); err != nil {
		t.Fatalf("council's own decision refused: %v", err)
	}
	hn, _ := set.Nodes[1].Header(subj, body)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"node key signs a decision", set.Ring.VerifyCouncil(hn, subj, body), keyring.ErrRole},
		{"unsigned", set.Ring.VerifyCouncil(nats.Header{}, subj, body), keyring.ErrUnsigned},
		{"body changed", set.Ring.VerifyCouncil(hc, subj, []byte(`{"v":1,"round":8}`)), keyring.ErrSignature},
		{"subject changed", set.Ring.VerifyCouncil(hc, "adaptio.other.decision", body), keyring.ErrSignature},
		{"node 1 as node 2", set.Ring.VerifyNode(2, hn, subj, body), keyring.ErrRole},
		{"unregistered node", set.Ring.VerifyNode(7, hn, subj, body), keyring.ErrRole},
		{"node as operator", set.Ring.VerifyOperator(hn, subj, body), keyring.ErrRole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("got %v, want %v", tt.err, tt.want)
			}
		})
	}
	if err := set.Ring.VerifyNode(1, hn, subj, body); err != nil {
		t.Fatalf("node 1's own report refused: %v", err)
	}
	ho, _ := set.Operator.Header(subj, body)
	if err := set.Ring.VerifyOperator(ho, subj, body); err != nil {
		t.Fatalf("operator refused: %v", err)
	}
	bad := nats.Header{}
	bad.Set(keyring.HeaderKey, set.Council.PublicKey())
	bad.Set(keyring.HeaderSig, "not-base64!")
	if err := set.Ring.VerifyCouncil(bad, subj, body); !errors.Is(err, keyring.ErrSignature) {
		t.Fatalf("malformed signature: got %v", err)
	}
}

func TestWriteLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
	ring, err := keyring.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ring.Council != set.Ring.Council || len(ring.Nodes) != 2 || ring.Nodes[1] != set.Ring.Nodes[1] {
		t.Fatalf("loaded %+v, want %+v", ring, set.Ring)
	}
	for _, name := range []string{keyring.CouncilSeed, keyring.NodeSeed(0), keyring.NodeSeed(1), keyring.OperatorSeed, keyring.ObserverSeed} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	s, err := keyring.ReadSigner(filepath.Join(dir, keyring.NodeSeed(1)))
	if err != nil {
		t.Fatal(err)
	}
	if s.PublicKey() != ring.Node(1) {
		t.Fatalf("node 1's seed gives %s, keyring says %s", s.PublicKey(), ring.Node(1))
	}
	// Never replaces a site's keys.
	other, _ := keyring.Generate(2)
	if err := other.Write(dir); err == nil {
		t.Fatal("Write over an existing key directory succeeded")
	}
	if again, _ := keyring.Load(dir); again.Council != set.Ring.Council {
		t.Fatal("keys replaced")
	}
	// A seed others can read is refused.
	p := filepath.Join(dir, keyring.OperatorSeed)
	os.Chmod(p, 0o644)
	if _, err := keyring.ReadSigner(p); err == nil {
		t.Fatal("world-readable seed accepted")
	}
}

func TestLoadRefusesBadRings(t *testing.T) {
	set, _ := keyring.Generate(2)
	dup := set.Ring
	dup.Nodes = []string{set.Ring.Council, set.Ring.Nodes[1]}
	for name, body := range map[string]string{
		"not json":      "{",
		"unknown field": `{"v":1,"council":"` + set.Ring.Council + `","nodes":[],"extra":1}`,
		"bad key":       `{"v":1,"council":"Uxyz","nodes":[]}`,
		"version":       `{"v":2,"council":"` + set.Ring.Council + `","nodes":[]}`,
		"council twice": `{"v":1,"council":"` + dup.Council + `","nodes":["` + dup.Nodes[0] + `"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "keyring.json")
			os.WriteFile(p, []byte(body), 0o644)
			if _, err := keyring.Load(p); !errors.Is(err, keyring.ErrRing) {
				t.Fatalf("got %v, want ErrRing", err)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	// A fixed key, so that every fuzzing process knows the same one.
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	node, _ := keyring.NewSigner(kp)
	subj := "adaptio.default.report.0"
	h, _ := node.Header(subj, []byte("x"))
	f.Add(h.Get(keyring.HeaderKey), h.Get(keyring.HeaderSig), []byte("x"))
	f.Add("", "", []byte{})
	f.Add(node.PublicKey(), "AAAA", []byte("{}"))
	f.Fuzz(func(t *testing.T, key, sig string, body []byte) {
		hh := nats.Header{}
		hh.Set(keyring.HeaderKey, key)
		hh.Set(keyring.HeaderSig, sig)
		pub, err := keyring.Verify(hh, subj, body)
		if err == nil && (pub != node.PublicKey() || string(body) != "x") {
			t.Fatalf("forged message verified: key %q body %q", key, body)
		}
	})
}

func TestAddNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
	k, sg, err := keyring.AddNode(dir)
	if err != nil || k != 2 {
		t.Fatalf("AddNode: %d, %v; want node 2", k, err)
	}
	r, err := keyring.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Node(2) != sg.PublicKey() || r.Node(0) != set.Ring.Nodes[0] || r.Council != set.Ring.Council {
		t.Fatalf("keyring after AddNode: %+v", r)
	}
	read, err := keyring.ReadSigner(filepath.Join(dir, keyring.NodeSeed(2)))
	if err != nil || read.PublicKey() != sg.PublicKey() {
		t.Fatalf("node 2's seed: %v", err)
	}
	h, _ := read.Header("p.report.2", []byte("x"))
	if err := r.VerifyNode(2, h, "p.report.2", []byte("x")); err != nil {
		t.Fatalf("node 2's report: %v", err)
	}
}
