package fwd_test

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/fwd"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/internal/listen"
	"github.com/adaptio/adaptio/internal/testpki"
)

var testToken = []byte("5f0c6a1e9b2d4c7f8a3e1b6d9c2f4a7e5f0c6a1e9b2d4c7f8a3e1b6d9c2f4a7e")

// loopbackAddr is addr (a daemon listening on every interface) reached
// through 127.0.0.1.
func loopbackAddr(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// roundTrip writes random bytes through c and reads them back.
func roundTrip(t *testing.T, c *client.Client, name string, n int) {
	t.Helper()
	want := make([]byte, n)
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read back other bytes than written")
	}
}

func refused(reg *prometheus.Registry, reason string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "adaptio_fwd_sessions_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// TestTokenRefusesStrangersServesHolders: a forwarder on every interface
// with a token refuses a client without it (both sides say why, the
// refusal is counted) and one with another token, and serves a client
// holding it, over TCP and over its Unix socket with shared memory.
func TestTokenRefusesStrangersServesHolders(t *testing.T) {
	reg := prometheus.NewRegistry()
	sock := filepath.Join(t.TempDir(), "fwd.sock")
	d := startDaemon(t, newPosixDir(t.TempDir()), fwd.Options{Listen: []string{"0.0.0.0:0", "unix:" + sock}, Token: testToken, Registerer: reg})
	addr := loopbackAddr(t, d.Addrs()[0])

	_, err := client.DialOptions(addr, client.Options{})
	if !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), "requires authentication") || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("a client without the token: %v, want an authentication error naming --token-file", err)
	}
	if got := refused(reg, "unauthenticated"); got != 1 {
		t.Errorf("adaptio_fwd_sessions_refused_total{reason=unauthenticated} = %v, want 1", got)
	}
	other := bytes.Repeat([]byte{'x'}, 64)
	if _, err := client.DialOptions(addr, client.Options{Token: other}); !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), "another token") {
		t.Fatalf("a client with another token: %v, want an authentication error", err)
	}

	c, err := client.DialOptions(addr, client.Options{Token: testToken})
	if err != nil {
		t.Fatalf("a client with the token: %v", err)
	}
	defer c.Close()
	roundTrip(t, c, "tcp.dat", 3<<20)

	u, err := client.DialOptions("unix:"+sock, client.Options{Token: testToken})
	if err != nil {
		t.Fatalf("a client with the token on the Unix socket: %v", err)
	}
	defer u.Close()
	if !u.SharedMemory() {
		t.Error("an authenticated Unix client has no shared region")
	}
	roundTrip(t, u, "unix.dat", 1<<20)
	if _, err := client.DialOptions("unix:"+sock, client.Options{}); !errors.Is(err, client.ErrAuth) {
		t.Errorf("a Unix client without the token: %v, want refused (the token guards every listener)", err)
	}
}

// rawAuth speaks the handshake by hand: step 1, then step 2 with proof.
func rawAuth(t *testing.T, addr string, proof func(cn, sn [fwdproto.NonceSize]byte) [32]byte) fwdproto.Msg {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	r := fwdproto.NewReader(nc, fwdproto.DefaultMaxFrame)
	read := func() fwdproto.Msg {
		h, p, err := r.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		var m fwdproto.Msg
		if err := fwdproto.Decode(h, p, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cn := [fwdproto.NonceSize]byte{1, 2, 3}
	if _, err := nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpAuth, ID: 1, Auth: fwdproto.Auth{Version: 1, Step: 1, Nonce: cn}})); err != nil {
		t.Fatal(err)
	}
	ch := read()
	if ch.Code != fwdproto.CodeOK || !fwdproto.ProofEqual(ch.Auth.Proof, fwdproto.ServerProof(testToken, cn, ch.Auth.Nonce)) {
		t.Fatalf("challenge: %+v, want the server's proof of the token", ch)
	}
	if _, err := nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpAuth, ID: 2, Auth: fwdproto.Auth{Version: 1, Step: 2, Proof: proof(cn, ch.Auth.Nonce)}})); err != nil {
		t.Fatal(err)
	}
	res := read()
	if res.Code == fwdproto.CodeOK {
		if _, err := nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpHello, ID: 3, ClientID: 1})); err != nil {
			t.Fatal(err)
		}
		if h := read(); h.Code != fwdproto.CodeOK || h.Op != fwdproto.OpHello {
			t.Fatalf("hello after authentication: %+v", h)
		}
	}
	return res
}

// TestWrongProofAndOldClients: the daemon refuses a wrong proof and
// counts it; a replayed server proof is not a client proof; a client that
// starts with hello, as one without authentication does, gets CodeAuth and
// the connection closes.
func TestWrongProofAndOldClients(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := startDaemon(t, newPosixDir(t.TempDir()), fwd.Options{Listen: []string{"127.0.0.1:0"}, Token: testToken, Registerer: reg})
	if m := rawAuth(t, d.Addr(), func(cn, sn [fwdproto.NonceSize]byte) [32]byte { return fwdproto.ServerProof(testToken, cn, sn) }); m.Code != fwdproto.CodeAuth {
		t.Errorf("the server's own proof sent back: %+v, want CodeAuth", m)
	}
	if got := refused(reg, "bad_proof"); got != 1 {
		t.Errorf("refused{bad_proof} = %v, want 1", got)
	}
	if m := rawAuth(t, d.Addr(), func(cn, sn [fwdproto.NonceSize]byte) [32]byte { return fwdproto.ClientProof(testToken, cn, sn) }); m.Code != fwdproto.CodeOK {
		t.Errorf("the right proof: %+v, want OK", m)
	}

	nc, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpHello, ID: 1, ClientID: 1})); err != nil {
		t.Fatal(err)
	}
	r := fwdproto.NewReader(nc, fwdproto.DefaultMaxFrame)
	h, p, err := r.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	var m fwdproto.Msg
	if err := fwdproto.Decode(h, p, &m); err != nil || m.Code != fwdproto.CodeAuth {
		t.Fatalf("hello first: %+v %v, want CodeAuth", m, err)
	}
	if _, _, err := r.ReadFrame(); !errors.Is(err, io.EOF) {
		t.Errorf("after the refusal: %v, want the connection closed", err)
	}
}

// TestNoTokenForwarder: a loopback forwarder without a token serves
// clients as before; a client with a token is told the forwarder takes
// none.
func TestNoTokenForwarder(t *testing.T) {
	d := startDaemon(t, newPosixDir(t.TempDir()), fwd.Options{Listen: []string{"127.0.0.1:0"}})
	roundTrip(t, dial(t, d.Addr()), "plain.dat", 64<<10)
	if _, err := client.DialOptions(d.Addr(), client.Options{Token: testToken}); !errors.Is(err, client.ErrAuth) || !strings.Contains(err.Error(), "takes no token") {
		t.Fatalf("a token client to a forwarder without one: %v", err)
	}
}

func TestListenPolicy(t *testing.T) {
	be := newPosixDir(t.TempDir())
	ca := newTestCA(t)
	for _, tt := range []struct {
		name string
		o    fwd.Options
		ok   bool
	}{
		{"every interface, no auth", fwd.Options{Listen: []string{"0.0.0.0:0"}}, false},
		{"a routable address among others, no auth", fwd.Options{Listen: []string{"127.0.0.1:0", ":7070"}}, false},
		{"every interface, token", fwd.Options{Listen: []string{"0.0.0.0:0"}, Token: testToken}, true},
		{"every interface, client certificates", fwd.Options{Listen: []string{"0.0.0.0:0"}, TLS: ca.serverTLS(true)}, true},
		{"every interface, TLS without client certificates", fwd.Options{Listen: []string{"0.0.0.0:0"}, TLS: ca.serverTLS(false)}, false},
		{"every interface, insecure", fwd.Options{Listen: []string{"0.0.0.0:0"}, Insecure: true}, true},
		{"loopback and a Unix socket", fwd.Options{Listen: []string{"127.0.0.1:0", "unix:/tmp/x.sock"}}, true},
		{"a short token", fwd.Options{Listen: []string{"127.0.0.1:0"}, Token: []byte("short")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Backend = be
			_, err := fwd.New(tt.o)
			if tt.ok != (err == nil) {
				t.Fatalf("New: %v, want accepted %v", err, tt.ok)
			}
			if err != nil && len(tt.o.Token) == 0 && (!errors.Is(err, listen.ErrUnauthenticated) || !strings.Contains(err.Error(), "--insecure")) {
				t.Fatalf("refusal %q does not say what to do", err)
			}
		})
	}
}

// testCA is a self-signed CA and a certificate it signed for 127.0.0.1.
type testCA struct {
	pool *x509.CertPool
	leaf tls.Certificate
}

func newTestCA(t testing.TB) *testCA {
	c := testpki.New(t, "fwd")
	return &testCA{pool: c.Pool, leaf: c.TLS}
}

func (ca *testCA) serverTLS(clientCerts bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12}
	if clientCerts {
		cfg.ClientCAs, cfg.ClientAuth = ca.pool, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// TestMutualTLS: a forwarder requiring client certificates refuses a
// client without one (counted) and serves one with a certificate of its
// CA, without a token.
func TestMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	reg := prometheus.NewRegistry()
	d := startDaemon(t, newPosixDir(t.TempDir()), fwd.Options{Listen: []string{"0.0.0.0:0"}, TLS: ca.serverTLS(true), Registerer: reg})
	addr := loopbackAddr(t, d.Addrs()[0])
	if c, err := client.DialOptions(addr, client.Options{TLS: &tls.Config{RootCAs: ca.pool}}); err == nil {
		c.Close()
		t.Fatal("a client without a certificate was served")
	}
	if _, err := client.DialOptions(addr, client.Options{}); err == nil {
		t.Fatal("a plain TCP client was served by a TLS forwarder")
	}
	var got float64
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if got = refused(reg, "tls"); got >= 2 {
			break
		}
	}
	if got != 2 {
		t.Errorf("refused{tls} = %v, want 2", got)
	}
	c, err := client.DialOptions(addr, client.Options{TLS: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{ca.leaf}}})
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	defer c.Close()
	roundTrip(t, c, "tls.dat", 2<<20)
}

var (
	authFuzzOnce sync.Once
	authFuzzAddr string
)

// FuzzDaemonAuth sends arbitrary bytes, in two writes, to a daemon with a
// token: whatever they hold, the daemon answers nothing but a challenge
// or an error before the client has proven the token, never crashes, and
// keeps serving clients that hold it.
func FuzzDaemonAuth(f *testing.F) {
	for _, m := range []fwdproto.Msg{
		{Op: fwdproto.OpAuth, ID: 1, Auth: fwdproto.Auth{Version: 1, Step: 1}},
		{Op: fwdproto.OpAuth, ID: 2, Auth: fwdproto.Auth{Version: 1, Step: 2}},
		{Op: fwdproto.OpAuth, ID: 3, Auth: fwdproto.Auth{Version: 2, Step: 1}},
		{Op: fwdproto.OpHello, ID: 4, ClientID: 1},
		{Op: fwdproto.OpStat, ID: 5, Path: "."},
	} {
		f.Add(fwdproto.Append(nil, &m))
	}
	ch := fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpAuth, ID: 1, Auth: fwdproto.Auth{Version: 1, Step: 1}})
	f.Add(append(ch, fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpAuth, ID: 2, Auth: fwdproto.Auth{Version: 1, Step: 2}})...))
	f.Add(append(ch, fwdproto.Append(nil, &fwdproto.Msg{Op: fwdproto.OpStat, ID: 2, Path: "."})...))
	f.Fuzz(func(t *testing.T, data []byte) {
		authFuzzOnce.Do(func() {
			// One daemon for the whole run (deliberately not shut down per input).
			d, err := fwd.New(fwd.Options{Backend: newPosixDir(t.TempDir()), Listen: []string{"127.0.0.1:0"}, MaxFrame: 1 << 20, Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			authFuzzAddr = d.Addr()
		})
		nc, err := net.Dial("tcp", authFuzzAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		mid := len(data) / 2
		nc.Write(data[:mid])
		nc.Write(data[mid:])
		nc.(*net.TCPConn).CloseWrite()
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		r := fwdproto.NewReader(nc, fwdproto.DefaultMaxFrame)
		for {
			h, p, err := r.ReadFrame()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("daemon did not close the connection: %v", err)
				}
				break
			}
			var m fwdproto.Msg
			if err := fwdproto.Decode(h, p, &m); err != nil {
				t.Fatalf("daemon sent a malformed frame: %v", err)
			}
			if m.Code == fwdproto.CodeOK && !(m.Op == fwdproto.OpAuth && m.Auth.Step == fwdproto.AuthChallenge) {
				t.Fatalf("daemon answered %v OK to a client that has not proven the token", m.Op)
			}
		}
		c, err := client.DialOptions(authFuzzAddr, client.Options{Token: testToken})
		if err != nil {
			t.Fatalf("daemon stopped accepting: %v", err)
		}
		defer c.Close()
		if _, err := c.Stat("."); err != nil {
			t.Fatalf("daemon stopped serving: %v", err)
		}
	})
}

// BenchmarkDial measures a session's setup over loopback TCP (dial, hello,
// close): without authentication, with the token's challenge and response,
// and with mutual TLS.
func BenchmarkDial(b *testing.B) {
	ca := newTestCA(b)
	for _, bc := range []struct {
		name string
		srv  fwd.Options
		cli  client.Options
	}{
		{"plain", fwd.Options{}, client.Options{}},
		{"token", fwd.Options{Token: testToken}, client.Options{Token: testToken}},
		{"mtls", fwd.Options{TLS: ca.serverTLS(true)}, client.Options{TLS: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{ca.leaf}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.srv.Listen = []string{"127.0.0.1:0"}
			d := startDaemon(b, newPosixDir(b.TempDir()), bc.srv)
			for b.Loop() {
				c, err := client.DialOptions(d.Addr(), bc.cli)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
