package fwdproto

import "strings"

// SplitAddr splits a daemon's address as the daemon listens on it and
// clients dial it: "host:port" or "tcp:host:port" (network "tcp"),
// "unix:/path/to/socket" (network "unix"). ok is false when no address
// follows the network.
func SplitAddr(a string) (network, addr string, ok bool) {
	switch {
	case strings.HasPrefix(a, "unix:"):
		network, addr = "unix", strings.TrimPrefix(a, "unix:")
	case strings.HasPrefix(a, "tcp:"):
		network, addr = "tcp", strings.TrimPrefix(a, "tcp:")
	default:
		network, addr = "tcp", a
	}
	return network, addr, addr != ""
}
