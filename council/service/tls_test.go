package service

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/sched"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "adaptio-council-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	s := startService(t, Options{Core: council.Config{Nodes: 1}, Security: Security{TLSCert: cert, TLSKey: key}})
	defer s.Shutdown()
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("plain connection accepted by a TLS server")
	}
	copts, err := Security{TLSCA: cert}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s.ClientURL(), copts...)
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("connection not over TLS: %v", err)
	}
	dec := listen(t, nc, s.Subjects())
	(&node{id: 0, nc: nc, subj: s.Subjects()}).report(t, sched.DefaultWindow, 1e8)
	poll.Until(t, "decision over TLS", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })
}

// TestMutualTLS: with TLSCA the embedded server requires client certificates.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	s := startService(t, Options{Core: council.Config{Nodes: 1}, Security: Security{TLSCert: cert, TLSKey: key, TLSCA: cert}})
	defer s.Shutdown()
	noCert, _ := Security{TLSCA: cert}.ClientOptions()
	if nc, err := nats.Connect(s.ClientURL(), noCert...); err == nil {
		nc.Close()
		t.Fatal("connection without a client certificate accepted")
	}
	withCert, _ := Security{TLSCA: cert, TLSCert: cert, TLSKey: key}.ClientOptions()
	nc := connect(t, s.ClientURL(), withCert...)
	dec := listen(t, nc, s.Subjects())
	(&node{id: 0, nc: nc, subj: s.Subjects()}).report(t, sched.DefaultWindow, 1e8)
	poll.Until(t, "decision over mutual TLS", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })
}
