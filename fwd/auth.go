package fwd

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/adaptio/adaptio/fwd/fwdproto"
)

// authTimeout bounds a session's authentication: the TLS handshake, and
// the auth exchange of a daemon with a token.
const authTimeout = 10 * time.Second

// refusals are the reasons a session is refused
// (adaptio_fwd_sessions_refused_total).
var refusals = []string{"unauthenticated", "bad_proof", "protocol", "tls"}

// session is a connection's authentication state. Only the connection's
// reader touches it.
type session struct {
	done        bool // authenticated, or no authentication required
	challenged  bool // step 1 answered
	client, srv [fwdproto.NonceSize]byte
}

// msgAuthRequired is the message a client gets when it sends anything
// before authenticating to a daemon with a token.
const msgAuthRequired = "fwd: forwarder requires authentication: pass --token-file FILE with the forwarder's token (client.Options.Token), or a client certificate (--tls-cert, --tls-key)"

// handshake runs the TLS handshake of a TLS connection (the first read
// would, but a failure is then only a read error) and reports whether the
// session may go on. A verified client certificate authenticates it.
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		if !c.auth.done {
			_ = c.nc.SetReadDeadline(time.Now().Add(authTimeout))
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.refuse("tls", err.Error())
		return false
	}
	if len(tc.ConnectionState().VerifiedChains) > 0 {
		c.auth.done = true // the certificate of a CA the daemon trusts
	}
	if !c.auth.done {
		_ = c.nc.SetReadDeadline(time.Now().Add(authTimeout))
	}
	return true
}

// refuse logs and counts a refused session.
func (c *conn) refuse(reason, detail string) {
	c.d.m.refused.WithLabelValues(reason).Inc()
	c.d.log.Warn("client session refused", "remote", c.nc.RemoteAddr(), "reason", reason, "detail", detail)
}

// authenticate handles a request of a session not yet authenticated; it
// reports whether the session goes on (false: refused, the reply is
// queued and the connection is to be closed).
func (c *conn) authenticate(m *fwdproto.Msg) bool {
	fail := func(reason, msg string) bool {
		c.refuse(reason, msg)
		c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true, Code: fwdproto.CodeAuth, Err: msg}, nil)
		return false
	}
	if m.Op != fwdproto.OpAuth {
		return fail("unauthenticated", msgAuthRequired)
	}
	a := &m.Auth
	if a.Version != fwdproto.AuthVersion {
		return fail("protocol", fmt.Sprintf("fwd: authentication version %d not supported (this forwarder speaks %d): upgrade the client or the forwarder", a.Version, fwdproto.AuthVersion))
	}
	switch {
	case a.Step == fwdproto.AuthChallenge && !c.auth.challenged:
		srv, err := fwdproto.NewNonce()
		if err != nil {
			return fail("protocol", "fwd: no random nonce: "+err.Error())
		}
		c.auth.challenged, c.auth.client, c.auth.srv = true, a.Nonce, srv
		c.send(&fwdproto.Msg{Op: fwdproto.OpAuth, ID: m.ID, Response: true, Auth: fwdproto.Auth{
			Version: fwdproto.AuthVersion, Step: fwdproto.AuthChallenge, Nonce: srv,
			Proof: fwdproto.ServerProof(c.d.opts.Token, a.Nonce, srv)}}, nil)
		return true
	case a.Step == fwdproto.AuthProve && c.auth.challenged:
		if !fwdproto.ProofEqual(a.Proof, fwdproto.ClientProof(c.d.opts.Token, c.auth.client, c.auth.srv)) {
			return fail("bad_proof", "fwd: authentication failed: the client's token is not this forwarder's")
		}
		c.auth.done = true
		if !c.stopping.Load() {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		c.d.log.Debug("client authenticated", "remote", c.nc.RemoteAddr())
		c.send(&fwdproto.Msg{Op: fwdproto.OpAuth, ID: m.ID, Response: true, Auth: fwdproto.Auth{
			Version: fwdproto.AuthVersion, Step: fwdproto.AuthProve}}, nil)
		return true
	}
	return fail("protocol", fmt.Sprintf("fwd: authentication step %d out of order", a.Step))
}

// authAgain answers auth on a session that needs none or has done it.
func (c *conn) authAgain(m *fwdproto.Msg) {
	msg, code := "fwd: this forwarder has no token: connect without one", fwdproto.CodeNotSupported
	if len(c.d.opts.Token) > 0 {
		msg, code = "fwd: the session is authenticated already", fwdproto.CodeBadArgument
	}
	c.send(&fwdproto.Msg{Op: m.Op, ID: m.ID, Response: true, Code: code, Err: msg}, nil)
}
