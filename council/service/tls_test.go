package service

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/internal/testpki"
	"github.com/adaptio/adaptio/sched"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	return testpki.Files(t, dir, "council")
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
