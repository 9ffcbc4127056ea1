package keyring

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/adaptio/adaptio/internal/atomicfile"
)

// Header names that carry a message's signature.
const (
	HeaderKey = "Adaptio-Key" // the signer's public key ("U...")
	HeaderSig = "Adaptio-Sig" // base64url (no padding) ed25519 signature
)

// File names inside a key directory.
const (
	RingFile     = "keyring.json"
	CouncilSeed  = "council.nk"
	OperatorSeed = "operator.nk"
	ObserverSeed = "observer.nk"
)

// NodeSeed is the seed file of I/O node k.
func NodeSeed(k int) string { return "node-" + strconv.Itoa(k) + ".nk" }

// Errors. Reason maps them to metric labels.
var (
	ErrUnsigned  = errors.New("keyring: message is not signed")
	ErrSignature = errors.New("keyring: bad signature")
	ErrRole      = errors.New("keyring: key not allowed for this message")
	ErrRing      = errors.New("keyring: invalid keyring")
)

// Reason returns the metric label of a verification error: "unsigned",
// "signature", "key", or "other".
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnsigned):
		return "unsigned"
	case errors.Is(err, ErrSignature):
		return "signature"
	case errors.Is(err, ErrRole):
		return "key"
	}
	return "other"
}

// Reasons lists every label Reason returns.
var Reasons = []string{"unsigned", "signature", "key", "other"}

// Keyring is the public half of a group's keys: who may sign what.
type Keyring struct {
	V         int      `json:"v"`
	Council   string   `json:"council"`             // the Council's public key
	Nodes     []string `json:"nodes"`               // Nodes[k]: I/O node k's public key
	Operators []string `json:"operators,omitempty"` // may pin, release, switch shadow mode
	Observers []string `json:"observers,omitempty"` // may read status and decisions
}

// Validate checks every key and that no key holds two roles (a node key
// that is also the Council's would let a node decide).
func (r *Keyring) Validate() error {
	if r.V != 1 {
		return fmt.Errorf("%w: version %d (want 1)", ErrRing, r.V)
	}
	seen := map[string]string{}
	check := func(role, k string) error {
		if !nkeys.IsValidPublicUserKey(k) {
			return fmt.Errorf("%w: %s key %q is not an NKey user public key", ErrRing, role, k)
		}
		if prev, dup := seen[k]; dup {
			return fmt.Errorf("%w: one key is both %s and %s", ErrRing, prev, role)
		}
		seen[k] = role
		return nil
	}
	if err := check("council", r.Council); err != nil {
		return err
	}
	for i, k := range r.Nodes {
		if err := check("node "+strconv.Itoa(i), k); err != nil {
			return err
		}
	}
	for _, k := range r.Operators {
		if err := check("operator", k); err != nil {
			return err
		}
	}
	for _, k := range r.Observers {
		if err := check("observer", k); err != nil {
			return err
		}
	}
	return nil
}

// Node returns I/O node k's public key, or "" if k is not registered.
func (r *Keyring) Node(k int) string {
	if k < 0 || k >= len(r.Nodes) {
		return ""
	}
	return r.Nodes[k]
}

// Load reads a keyring from path: a keyring.json file or a key directory
// holding one.
func Load(path string) (*Keyring, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, RingFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w (create one with `adaptio keys init DIR`)", err)
	}
	var r Keyring
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrRing, path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Signer signs messages with one key.
type Signer struct {
	kp  nkeys.KeyPair
	pub string
}

// NewSigner wraps a key pair holding a user seed.
func NewSigner(kp nkeys.KeyPair) (*Signer, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("keyring: %q is not a user key (want a seed starting SU)", pub)
	}
	return &Signer{kp: kp, pub: pub}, nil
}

// ReadSigner reads a seed file ("SU...", as `adaptio keys init` and
// `nk -gen user` write it). It refuses a seed readable by other users.
func ReadSigner(path string) (*Signer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: seed: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keyring: seed %s is readable by other users (mode %v): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: seed: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("keyring: seed %s: %w", path, err)
	}
	return NewSigner(kp)
}

// PublicKey returns the signer's public key ("U...").
func (s *Signer) PublicKey() string { return s.pub }

// Seed returns the signer's seed (for writing it to a file).
func (s *Signer) Seed() ([]byte, error) { return s.kp.Seed() }

// KeyPair returns the signer's key pair (to authenticate to NATS with it).
func (s *Signer) KeyPair() nkeys.KeyPair { return s.kp }

// NATSOption authenticates a NATS connection with the signer's key (the
// server must list its public key as an NKey user).
func (s *Signer) NATSOption() nats.Option { return nats.Nkey(s.pub, s.kp.Sign) }

// signed is what a signature covers: a domain tag, the subject and the
// body, so that a signed message cannot be replayed on another subject.
func signed(subject string, body []byte) []byte {
	b := make([]byte, 0, len("adaptio-sig-v1")+2+len(subject)+len(body))
	b = append(b, "adaptio-sig-v1"...)
	b = append(b, 0)
	b = append(b, subject...)
	b = append(b, 0)
	return append(b, body...)
}

// Sign returns the signature of body on subject.
func (s *Signer) Sign(subject string, body []byte) ([]byte, error) {
	return s.kp.Sign(signed(subject, body))
}

// Header returns the headers that sign body on subject.
func (s *Signer) Header(subject string, body []byte) (nats.Header, error) {
	sig, err := s.Sign(subject, body)
	if err != nil {
		return nil, fmt.Errorf("keyring: sign: %w", err)
	}
	h := nats.Header{}
	h.Set(HeaderKey, s.pub)
	h.Set(HeaderSig, base64.RawURLEncoding.EncodeToString(sig))
	return h, nil
}

// Msg returns a NATS message of body on subject, signed.
func (s *Signer) Msg(subject string, body []byte) (*nats.Msg, error) {
	h, err := s.Header(subject, body)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Data: body, Header: h}, nil
}

// Verify checks that h carries a valid signature of body on subject and
// returns the signing key. It does not say whether that key may send the
// message: see the Keyring's Verify methods.
func Verify(h nats.Header, subject string, body []byte) (string, error) {
	pub, sig := h.Get(HeaderKey), h.Get(HeaderSig)
	if pub == "" || sig == "" {
		return "", ErrUnsigned
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("%w: key %q", ErrSignature, pub)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return "", fmt.Errorf("%w: malformed", ErrSignature)
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if err := kp.Verify(signed(subject, body), raw); err != nil {
		return "", fmt.Errorf("%w: does not match the message", ErrSignature)
	}
	return pub, nil
}

func (r *Keyring) verifyAs(role string, allowed []string, h nats.Header, subject string, body []byte) error {
	pub, err := Verify(h, subject, body)
	if err != nil {
		return err
	}
	for _, k := range allowed {
		if k != "" && k == pub {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not the %s's key", ErrRole, pub, role)
}

// VerifyCouncil checks that the message was signed by the Council.
func (r *Keyring) VerifyCouncil(h nats.Header, subject string, body []byte) error {
	return r.verifyAs("Council", []string{r.Council}, h, subject, body)
}

// VerifyNode checks that the message was signed by I/O node k's key.
func (r *Keyring) VerifyNode(k int, h nats.Header, subject string, body []byte) error {
	if r.Node(k) == "" {
		if _, err := Verify(h, subject, body); err != nil {
			return err
		}
		return fmt.Errorf("%w: node %d is not registered (the keyring has %d nodes)", ErrRole, k, len(r.Nodes))
	}
	return r.verifyAs("node "+strconv.Itoa(k), []string{r.Nodes[k]}, h, subject, body)
}

// VerifyOperator checks that the message was signed by an operator (the
// Council's own key is an operator too).
func (r *Keyring) VerifyOperator(h nats.Header, subject string, body []byte) error {
	return r.verifyAs("operator", append([]string{r.Council}, r.Operators...), h, subject, body)
}

// Set is a generated group of keys: the keyring and every seed.
type Set struct {
	Ring     Keyring
	Council  *Signer
	Nodes    []*Signer
	Operator *Signer
	Observer *Signer
}

func newUser() (*Signer, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return NewSigner(kp)
}

// Generate makes a new set of keys for a group of nodes I/O nodes, with one
// operator and one observer.
func Generate(nodes int) (*Set, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("%w: %d nodes (want >= 1)", ErrRing, nodes)
	}
	s := &Set{Ring: Keyring{V: 1}}
	var err error
	if s.Council, err = newUser(); err != nil {
		return nil, err
	}
	if s.Operator, err = newUser(); err != nil {
		return nil, err
	}
	if s.Observer, err = newUser(); err != nil {
		return nil, err
	}
	s.Ring.Council = s.Council.PublicKey()
	s.Ring.Operators = []string{s.Operator.PublicKey()}
	s.Ring.Observers = []string{s.Observer.PublicKey()}
	for range nodes {
		n, err := newUser()
		if err != nil {
			return nil, err
		}
		s.Nodes = append(s.Nodes, n)
		s.Ring.Nodes = append(s.Ring.Nodes, n.PublicKey())
	}
	return s, nil
}

// Write stores the set in dir (created 0700 if absent): the keyring and
// each seed, mode 0600. It refuses to overwrite any existing key file, so
// that a site's keys are never replaced by accident.
func (s *Set) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	files := map[string]*Signer{CouncilSeed: s.Council, OperatorSeed: s.Operator, ObserverSeed: s.Observer}
	for k, n := range s.Nodes {
		files[NodeSeed(k)] = n
	}
	names := []string{RingFile}
	for name := range files {
		names = append(names, name)
	}
	for _, name := range names {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("keyring: %s already exists: refusing to replace a key (use another directory, or remove it on purpose)", filepath.Join(dir, name))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keyring: %w", err)
		}
	}
	ring, err := json.MarshalIndent(s.Ring, "", "  ")
	if err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, RingFile), append(ring, '\n'), 0o644); err != nil {
		return err
	}
	for name, sg := range files {
		seed, err := sg.Seed()
		if err != nil {
			return fmt.Errorf("keyring: %w", err)
		}
		if err := writeNew(filepath.Join(dir, name), append(seed, '\n'), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeNew creates path exclusively with mode and writes b, synced.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("keyring: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("keyring: %w", err)
	}
	return f.Close()
}

// String names the roles of the keyring, for logs.
func (r *Keyring) String() string {
	return fmt.Sprintf("council %s, %d nodes, %d operators, %d observers", short(r.Council), len(r.Nodes), len(r.Operators), len(r.Observers))
}

func short(k string) string {
	if len(k) > 12 {
		return k[:12] + "…"
	}
	return strings.Clone(k)
}

// AddNode adds one I/O node to the key directory dir: a new key for node
// len(Nodes), its seed written as NodeSeed(k) (mode 0600), and keyring.json
// replaced whole with the node added. It returns the node's index and key.
// Every host needs the new keyring.json; the Council must be restarted to
// accept the node.
func AddNode(dir string) (int, *Signer, error) {
	r, err := Load(filepath.Join(dir, RingFile))
	if err != nil {
		return 0, nil, err
	}
	n, err := newUser()
	if err != nil {
		return 0, nil, err
	}
	k := len(r.Nodes)
	seed, err := n.Seed()
	if err != nil {
		return 0, nil, fmt.Errorf("keyring: %w", err)
	}
	if err := writeNew(filepath.Join(dir, NodeSeed(k)), append(seed, '\n'), 0o600); err != nil {
		return 0, nil, err
	}
	r.Nodes = append(r.Nodes, n.PublicKey())
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return 0, nil, err
	}
	err = atomicfile.Write(filepath.Join(dir, RingFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("keyring: %w", err)
	}
	return k, n, nil
}
