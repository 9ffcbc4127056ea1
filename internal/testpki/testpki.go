// Package testpki makes the certificates tests need: a self-signed ECDSA
// certificate for 127.0.0.1, usable as a server's, a client's and as its
// own CA, valid for an hour either side of now.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate and its key.
type Cert struct {
	TLS  tls.Certificate // for tls.Config.Certificates
	Pool *x509.CertPool  // holding the certificate, as a CA
	Key  *ecdsa.PrivateKey
}

// New makes a certificate named name (its common name "adaptio-test-" +
// name).
func New(t testing.TB, name string) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "adaptio-test-" + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &Cert{TLS: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, Pool: pool, Key: key}
}

// WriteFiles writes the certificate and its key as PEM files in dir,
// named name-cert.pem and name-key.pem (mode 0600), and returns their
// paths.
func (c *Cert) WriteFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	kder, err := x509.MarshalECPrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+"-cert.pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.TLS.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Files makes a certificate named name and writes it to dir (WriteFiles).
func Files(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	return New(t, name).WriteFiles(t, dir, name)
}
