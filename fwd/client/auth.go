package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// ErrAuth is wrapped by the errors of a session the forwarder refused or
// whose forwarder could not prove it holds the token.
var ErrAuth = errors.New("fwd: authentication")

// secure wraps a TCP connection in TLS when Options.TLS asks for it.
func (c *Client) secure(nc net.Conn) (net.Conn, error) {
	if c.opts.TLS == nil || c.network == "unix" {
		return nc, nil
	}
	cfg := c.opts.TLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(c.addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("%w: tls: %v (does the forwarder serve TLS, and does its certificate chain to --tls-ca?)", ErrAuth, err)
	}
	return tc, nil
}

// authenticate proves the token to the forwarder and checks the
// forwarder's proof (fwdproto.Auth), when Options.Token is set.
func (c *Client) authenticate(cc *clientConn) error {
	tok := c.opts.Token
	if len(tok) == 0 {
		return nil
	}
	cn, err := fwdproto.NewNonce()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAuth, err)
	}
	cl, err := cc.do(&fwdproto.Msg{Op: fwdproto.OpAuth, Auth: fwdproto.Auth{Version: fwdproto.AuthVersion, Step: fwdproto.AuthChallenge, Nonce: cn}}, nil)
	var pe *fwdproto.Error
	switch {
	case errors.As(err, &pe) && (pe.Code == fwdproto.CodeNotSupported || pe.Code == fwdproto.CodeBadFrame):
		// CodeBadFrame: a forwarder older than authentication.
		return fmt.Errorf("%w: the forwarder at %s takes no token (%v): connect without --token-file, or start it with --token-file", ErrAuth, c.addr, err)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	a := cl.resp.Auth
	if a.Version != fwdproto.AuthVersion || a.Step != fwdproto.AuthChallenge {
		return fmt.Errorf("%w: the forwarder answered authentication version %d step %d (want %d, %d)", ErrAuth, a.Version, a.Step, fwdproto.AuthVersion, fwdproto.AuthChallenge)
	}
	if !fwdproto.ProofEqual(a.Proof, fwdproto.ServerProof(tok, cn, a.Nonce)) {
		return fmt.Errorf("%w: the forwarder at %s holds another token than --token-file's (or is not the forwarder you meant)", ErrAuth, c.addr)
	}
	if _, err := cc.do(&fwdproto.Msg{Op: fwdproto.OpAuth, Auth: fwdproto.Auth{Version: fwdproto.AuthVersion, Step: fwdproto.AuthProve,
		Proof: fwdproto.ClientProof(tok, cn, a.Nonce)}}, nil); err != nil {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return nil
}

// authHint marks a refusal for want of authentication with ErrAuth.
func authHint(err error) error {
	var pe *fwdproto.Error
	if errors.As(err, &pe) && pe.Code == fwdproto.CodeAuth {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return err
}
