// Package natsnode runs one node of a NATS cluster with JetStream in this
// process: what "adaptio nats" runs, so that a site can run the three NATS
// servers that keep the Council's learned state replicated without
// installing nats-server. Three nodes, each routed to the other two, form a
// cluster whose JetStream keeps a KV bucket with 3 replicas available while
// any two of them run (adaptio council --nats URL,URL,URL --replicas 3).
//
// Clients authenticate with a Council group's keyring (Options.Keys: each
// key gets its role's subject permissions, Group.Permissions, which the
// Council's embedded server uses too), a user, or client certificates
// (mutual TLS); routes with their own user or mutual TLS. A listener beyond
// loopback without authentication is refused unless Options.Insecure.
//
//	s, err := natsnode.Start(natsnode.Options{Name: "n1", Listen: ":4222",
//		ClusterListen: ":6222", Routes: []string{"nats-route://n2:6222", "nats-route://n3:6222"},
//		StoreDir: "/var/lib/adaptio/nats"})
//	...
//	defer s.Shutdown()
package natsnode

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/listen"
)

// ErrBadOptions is wrapped by every configuration error.
var ErrBadOptions = errors.New("natsnode: invalid options")

// DefaultCluster is the cluster name when Options.Cluster is empty.
const DefaultCluster = "adaptio"

// Options configure one node. Zero fields take the defaults listed.
type Options struct {
	// Name is the server's name, unique in the cluster (required with
	// ClusterListen: JetStream's replicas are placed by server name).
	Name string
	// Cluster is the cluster's name, the same on every node (default
	// DefaultCluster).
	Cluster string
	// Listen is the client address, host:port (default 127.0.0.1:4222;
	// port 0 picks a free one).
	Listen string
	// ClusterListen is the address other nodes route to, host:port (""
	// runs a single server, no cluster).
	ClusterListen string
	// Routes are the other nodes' route URLs (nats-route://host:port); a
	// node may list itself.
	Routes []string
	// StoreDir is where JetStream keeps its streams (required).
	StoreDir string
	// ReadyTimeout bounds the start (default 10 s).
	ReadyTimeout time.Duration
	// Log enables the server's own log on stderr.
	Log bool

	// Security. A listener beyond loopback (Listen, ClusterListen) needs
	// authentication unless Insecure is set (internal/listen's policy).

	// User and Password: a client with them has every right (an
	// administrator, or a Council without keys).
	User, Password string
	// Keys is a Council group's keyring: each of its keys may connect with
	// its role's permissions in Group (Group.Users).
	Keys *keyring.Keyring
	// Group names the subjects Keys' permissions refer to (Prefix required
	// with Keys).
	Group Group
	// TLSCert and TLSKey are PEM files: the server's certificate, for
	// clients and, with TLSCA, for routes. TLSCA is a PEM CA bundle:
	// clients must present a certificate signed by it (mutual TLS), and so
	// must the other nodes on the routes, whose certificates are verified
	// against it too (give each node a certificate valid for server and
	// client authentication, naming the host the others route to).
	TLSCert, TLSKey, TLSCA string
	// ClusterUser and ClusterPassword authenticate routes: each node
	// accepts a route only with them and presents them on its own routes.
	ClusterUser, ClusterPassword string
	// Insecure lets a listener beyond loopback start without
	// authentication.
	Insecure bool
}

// clientAuth reports whether clients must authenticate.
func (o Options) clientAuth() bool {
	return o.User != "" || o.Keys != nil || o.TLSCA != ""
}

// routeAuth reports whether routes must authenticate.
func (o Options) routeAuth() bool {
	return o.ClusterUser != "" || (o.TLSCA != "" && o.TLSCert != "")
}

func splitHostPort(what, hp string) (string, int, error) {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s %q: %v", ErrBadOptions, what, hp, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%w: %s %q: port must be 0 to 65535", ErrBadOptions, what, hp)
	}
	if port == 0 {
		port = -1 // nats-server: a free port
	}
	return h, port, nil
}

// ServerOptions returns the nats-server options for o, validated.
func (o Options) ServerOptions() (*server.Options, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("%w: no JetStream store directory", ErrBadOptions)
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:4222"
	}
	if o.Cluster == "" {
		o.Cluster = DefaultCluster
	}
	host, port, err := splitHostPort("client address", o.Listen)
	if err != nil {
		return nil, err
	}
	if err := listen.Require("nats --listen", o.Listen, o.clientAuth(), o.Insecure); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	so := &server.Options{
		ServerName: o.Name, Host: host, Port: port, JetStream: true, StoreDir: o.StoreDir,
		NoLog: !o.Log, NoSigs: true, MaxPayload: 1 << 20,
	}
	if o.Log {
		so.Logtime = true
	}
	if err := o.security(so); err != nil {
		return nil, err
	}
	if o.ClusterListen == "" {
		if len(o.Routes) > 0 {
			return nil, fmt.Errorf("%w: routes without a cluster address to listen on", ErrBadOptions)
		}
		if so.ServerName == "" {
			so.ServerName = "adaptio-nats"
		}
		return so, nil
	}
	if o.Name == "" {
		return nil, fmt.Errorf("%w: a clustered node needs a name, unique in the cluster", ErrBadOptions)
	}
	chost, cport, err := splitHostPort("cluster address", o.ClusterListen)
	if err != nil {
		return nil, err
	}
	if cport < 0 {
		return nil, fmt.Errorf("%w: cluster address %q: the other nodes route to it, give its port", ErrBadOptions, o.ClusterListen)
	}
	if err := listen.Require("nats --cluster-listen", o.ClusterListen, o.routeAuth(), o.Insecure); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	so.Cluster = server.ClusterOpts{Name: o.Cluster, Host: chost, Port: cport}
	if o.ClusterUser != "" {
		if o.ClusterPassword == "" {
			return nil, fmt.Errorf("%w: cluster user %q without a password", ErrBadOptions, o.ClusterUser)
		}
		so.Cluster.Username, so.Cluster.Password = o.ClusterUser, o.ClusterPassword
	}
	if o.TLSCA != "" && o.TLSCert != "" {
		cfg, err := routeTLS(o.TLSCert, o.TLSKey, o.TLSCA)
		if err != nil {
			return nil, err
		}
		so.Cluster.TLSConfig, so.Cluster.TLSTimeout = cfg, 2
	}
	for _, r := range o.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Host == "" {
			return nil, fmt.Errorf("%w: route %q: want nats-route://host:port", ErrBadOptions, r)
		}
		if o.ClusterUser != "" && u.User == nil {
			u.User = url.UserPassword(o.ClusterUser, o.ClusterPassword)
		}
		so.Routes = append(so.Routes, u)
	}
	return so, nil
}

// Start starts the node and waits until it accepts client connections.
// (A clustered JetStream serves requests once a majority of the cluster's
// nodes have met; Start does not wait for that.)
func Start(o Options) (*server.Server, error) {
	so, err := o.ServerOptions()
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("natsnode: %w", err)
	}
	if o.Log {
		s.ConfigureLogger()
	}
	s.Start()
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if !s.ReadyForConnections(timeout) {
		s.Shutdown()
		return nil, fmt.Errorf("natsnode: not ready after %v (is %s or %s taken?)", timeout, o.Listen, o.ClusterListen)
	}
	return s, nil
}
