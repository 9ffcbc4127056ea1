package natsnode

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/server"
)

// security applies the authentication and TLS options to so.
func (o Options) security(so *server.Options) error {
	if o.User != "" && o.Password == "" {
		return fmt.Errorf("%w: user %q without a password", ErrBadOptions, o.User)
	}
	if o.User == "" && o.Password != "" {
		return fmt.Errorf("%w: password without a user", ErrBadOptions)
	}
	if o.Keys != nil {
		if o.Group.Prefix == "" {
			return fmt.Errorf("%w: keys without the group's subject prefix", ErrBadOptions)
		}
		if err := o.Keys.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrBadOptions, err)
		}
		so.Nkeys = o.Group.Users(o.Keys)
	}
	if o.User != "" {
		// The server takes users and NKey users together only as lists.
		so.Users = []*server.User{{Username: o.User, Password: o.Password}}
	}
	switch {
	case o.TLSCert != "" || o.TLSKey != "":
		cfg, err := ServerTLS(o.TLSCert, o.TLSKey, o.TLSCA)
		if err != nil {
			return err
		}
		so.TLSConfig, so.TLS, so.TLSTimeout = cfg, true, 2
		so.TLSVerify = o.TLSCA != ""
	case o.TLSCA != "":
		return fmt.Errorf("%w: a TLS CA without the server's certificate and key", ErrBadOptions)
	}
	return nil
}

// ServerTLS is the TLS configuration of a server with the PEM certificate
// and key files; with a CA bundle (ca not empty) clients must present a
// certificate signed by it.
func ServerTLS(cert, key, ca string) (*tls.Config, error) {
	if cert == "" || key == "" {
		return nil, fmt.Errorf("%w: TLS needs both a certificate and its key", ErrBadOptions)
	}
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%w: tls certificate: %v", ErrBadOptions, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
	if ca != "" {
		pool, err := CertPool(ca)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// routeTLS is the TLS configuration of routes: each node presents its
// certificate and verifies the other's, both ways, against ca.
func routeTLS(cert, key, ca string) (*tls.Config, error) {
	cfg, err := ServerTLS(cert, key, ca)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = cfg.ClientCAs
	return cfg, nil
}

// CertPool reads a PEM bundle of CA certificates.
func CertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: tls ca: %v", ErrBadOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: tls ca %s: no PEM certificates in it", ErrBadOptions, path)
	}
	return pool, nil
}
