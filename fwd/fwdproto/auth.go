package fwdproto

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The authenticated session. A forwarder with a token (Options.Token of
// package fwd, adaptio forward --token-file) accepts nothing but OpAuth
// until the client has proven that it holds the token, without sending it:
//
//	client: auth  {version 1, step 1, client nonce}
//	daemon: ok    {version 1, step 1, server nonce, server proof}
//	client: auth  {version 1, step 2, client proof}
//	daemon: ok    {version 1, step 2}
//	client: hello ... (as without a token)
//
// with proofs HMAC-SHA256(token, label || nonces) (AuthProof): the client
// checks the server's proof before it sends its own, so each side knows
// the other holds the token, and both nonces are fresh random bytes, so a
// recorded session cannot be replayed. The token itself never travels.
// A first frame other than auth is answered with CodeAuth and the
// connection is closed. Without TLS the session is authenticated, not
// encrypted: the data travel in clear.
type Auth struct {
	Version uint8
	Step    uint8
	// Nonce: the client's (step 1 request) or the server's (step 1 response).
	Nonce [NonceSize]byte
	// Proof: the server's (step 1 response) or the client's (step 2 request).
	Proof [sha256.Size]byte
}

// Auth steps and version.
const (
	AuthVersion   uint8 = 1
	AuthChallenge uint8 = 1 // client nonce -> server nonce and proof
	AuthProve     uint8 = 2 // client proof -> ok
	NonceSize           = 32
	// MinToken is the shortest token accepted, in bytes.
	MinToken = 32
)

// Proof labels: a server proof cannot be replayed as a client proof.
const (
	labelServer = "adaptio-fwd-auth-v1 server"
	labelClient = "adaptio-fwd-auth-v1 client"
)

// ServerProof is the server's proof of the token over the two nonces.
func ServerProof(token []byte, client, server [NonceSize]byte) [sha256.Size]byte {
	return proof(token, labelServer, client, server)
}

// ClientProof is the client's proof of the token over the two nonces.
func ClientProof(token []byte, client, server [NonceSize]byte) [sha256.Size]byte {
	return proof(token, labelClient, client, server)
}

func proof(token []byte, label string, client, server [NonceSize]byte) [sha256.Size]byte {
	h := hmac.New(sha256.New, token)
	h.Write([]byte(label))
	h.Write(client[:])
	h.Write(server[:])
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// ProofEqual compares two proofs in constant time.
func ProofEqual(a, b [sha256.Size]byte) bool { return hmac.Equal(a[:], b[:]) }

// NewNonce returns fresh random bytes.
func NewNonce() ([NonceSize]byte, error) {
	var n [NonceSize]byte
	_, err := rand.Read(n[:])
	return n, err
}

// ErrToken is wrapped by token file errors.
var ErrToken = errors.New("fwdproto: token")

// NewToken returns a new token: 32 random bytes, hex-encoded.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// WriteTokenFile writes a new token to path (mode 0600), refusing to
// replace an existing file.
func WriteTokenFile(path string) error {
	tok, err := NewToken()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrToken, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrToken, err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("%w: %v", ErrToken, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%w: %v", ErrToken, err)
	}
	return f.Close()
}

// ReadTokenFile reads a token file: its content, surrounding white space
// removed, is the token (at least MinToken bytes). It refuses a file that
// other users may read or write.
func ReadTokenFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrToken, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is open to other users (mode %v): chmod 600 %s", ErrToken, path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrToken, err)
	}
	tok := []byte(strings.TrimSpace(string(b)))
	if len(tok) < MinToken {
		return nil, fmt.Errorf("%w: %s holds %d bytes, want at least %d (make one with: head -c 32 /dev/urandom | xxd -p -c 64 > FILE; chmod 600 FILE)", ErrToken, path, len(tok), MinToken)
	}
	return tok, nil
}
