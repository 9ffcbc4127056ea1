package main

import (
	"crypto/tls"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/adaptio/adaptio/council/natsnode"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// fwdAuth is the authentication of the forwarder's data protocol: a
// shared token, TLS, or both (docs/protocol.md, "Authentication").
type fwdAuth struct {
	TokenFile              string
	TLSCert, TLSKey, TLSCA string
	Insecure               bool // forward only
}

const tokenHelp = "file holding the forwarder's shared token (mode 0600, at least 32 bytes; make one with: adaptio keys token FILE)"

// serverFlags registers the forwarder's flags.
func (a *fwdAuth) serverFlags(f *pflag.FlagSet) {
	f.StringVar(&a.TokenFile, "token-file", "", tokenHelp+": every client must prove it holds it (challenge and response, the token never sent) before anything else, on every --listen address")
	f.StringVar(&a.TLSCert, "tls-cert", "", "PEM certificate: serve TCP --listen addresses over TLS (Unix sockets stay plain)")
	f.StringVar(&a.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&a.TLSCA, "tls-ca", "", "PEM CA bundle: with --tls-cert, TCP clients must present a certificate signed by it (mutual TLS), which authenticates them without the token")
	f.BoolVar(&a.Insecure, "insecure", false, "start even though a --listen address beyond loopback has neither --token-file nor --tls-ca (anyone who reaches it can read and write the backend: a trusted network only)")
}

// clientFlags registers a client's flags (mount, bench).
func (a *fwdAuth) clientFlags(f *pflag.FlagSet) {
	f.StringVar(&a.TokenFile, "token-file", "", tokenHelp+": the forwarder's, for a forwarder started with --token-file")
	f.StringVar(&a.TLSCA, "tls-ca", "", "PEM CA bundle: speak TLS to a TCP forwarder and verify its certificate with it")
	f.StringVar(&a.TLSCert, "tls-cert", "", "PEM client certificate, for a forwarder that requires one (with --tls-ca)")
	f.StringVar(&a.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
}

func (a fwdAuth) token() ([]byte, error) {
	if a.TokenFile == "" {
		return nil, nil
	}
	tok, err := fwdproto.ReadTokenFile(a.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	return tok, nil
}

// server returns the forwarder's token and TLS configuration.
func (a fwdAuth) server() ([]byte, *tls.Config, error) {
	tok, err := a.token()
	if err != nil {
		return nil, nil, err
	}
	if a.TLSCert == "" && a.TLSKey == "" {
		if a.TLSCA != "" {
			return nil, nil, fmt.Errorf("--tls-ca needs --tls-cert and --tls-key (the forwarder's certificate)")
		}
		return tok, nil, nil
	}
	cfg, err := natsnode.ServerTLS(a.TLSCert, a.TLSKey, a.TLSCA)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert: %w", err)
	}
	return tok, cfg, nil
}

// client returns a client's token and TLS configuration.
func (a fwdAuth) client() ([]byte, *tls.Config, error) {
	tok, err := a.token()
	if err != nil {
		return nil, nil, err
	}
	if a.TLSCA == "" && a.TLSCert == "" && a.TLSKey == "" {
		return tok, nil, nil
	}
	if a.TLSCA == "" {
		return nil, nil, fmt.Errorf("--tls-cert needs --tls-ca (the CA the forwarder's certificate chains to)")
	}
	pool, err := natsnode.CertPool(a.TLSCA)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca: %w", err)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if a.TLSCert != "" || a.TLSKey != "" {
		kp, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return tok, cfg, nil
}

// embeddedAuth reports whether the Council's embedded NATS server
// requires clients to authenticate with these settings (a --keys flag, if
// the command has one, counts as keys).
func embeddedAuth(cmd *cobra.Command, s service.Security) bool {
	if f := cmd.Flags().Lookup("keys"); f != nil && f.Value.String() != "" {
		return true
	}
	return s.User != "" || s.NKeySeedFile != "" || len(s.AllowNKeys) > 0 || s.Keys != nil ||
		(s.TLSCA != "" && s.TLSCert != "")
}
