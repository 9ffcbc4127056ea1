// Package listen holds the listen policy shared by every adaptio server:
// an address reachable only from this host (loopback or a Unix socket)
// may be served without authentication; anything else needs
// authentication, or an explicit --insecure from the operator.
//
//	if err := listen.Require("forward --listen", addr, token != "", insecure); err != nil {
//		return err // names the flags that would make it start
//	}
package listen

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrUnauthenticated is wrapped by Require's refusal.
var ErrUnauthenticated = errors.New("listen: unauthenticated listener beyond loopback")

// Local reports whether addr is reachable only from this host: a Unix
// socket ("unix:/path", or a path starting with /), or host:port whose
// host is a loopback address (127.0.0.0/8, ::1) or "localhost". An empty
// host or an unspecified one (0.0.0.0, ::) listens on every interface and
// is not local; a host name other than localhost is not either (it may
// resolve anywhere). A malformed address is not local.
func Local(addr string) bool {
	if strings.HasPrefix(addr, "unix:") || strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "@") {
		return true
	}
	addr = strings.TrimPrefix(addr, "tcp:")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return LocalHost(host)
}

// LocalHost reports whether host (no port) names only this host: a
// loopback IP address or "localhost".
func LocalHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// Require returns nil when a server may listen on addr: addr is local,
// or the server authenticates its clients, or the operator asked for an
// insecure listener. Otherwise the error names what listens (what, e.g.
// "forward --listen") and the flags to add. The caller should log a
// warning when insecure lets a non-local listener start (see Insecure).
func Require(what, addr string, authenticated, insecure bool) error {
	if authenticated || insecure || Local(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s %s accepts anyone who can reach it without authentication: configure authentication (%s), listen on 127.0.0.1, or pass --insecure on a network you trust", ErrUnauthenticated, what, addr, authHint(what))
}

// Insecure reports whether a listener on addr started only because of
// --insecure: not local and not authenticated (log it at WARN).
func Insecure(addr string, authenticated bool) bool {
	return !authenticated && !Local(addr)
}

// hints are the authentication flags of each command, by the prefix of
// what (the command's name).
var hints = []struct{ prefix, flags string }{
	{"forward", "--token-file FILE, or --tls-cert, --tls-key and --tls-ca for client certificates"},
	{"nats --cluster-listen", "--cluster-user with $ADAPTIO_NATS_CLUSTER_PASSWORD, or --tls-cert, --tls-key and --tls-ca for mutual TLS on the routes"},
	{"nats", "--user with $ADAPTIO_NATS_PASSWORD, --keys DIR, or --tls-ca for client certificates"},
	{"council", "--user with $ADAPTIO_NATS_PASSWORD, --nkey-seed and --allow-nkey, --keys DIR, or --tls-ca for client certificates"},
	{"pfs", "the emulated PFS has no authentication of its own"},
}

func authHint(what string) string {
	for _, h := range hints {
		if strings.HasPrefix(what, h.prefix) {
			return h.flags
		}
	}
	return "the command's authentication flags"
}
