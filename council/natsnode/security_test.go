package natsnode

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/listen"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/internal/testnet"
	"github.com/adaptio/adaptio/internal/testpki"
)

const prefix = "adaptio.test"

// writeCert writes a self-signed certificate for 127.0.0.1, usable as a
// server and a client certificate and as its own CA, and its key.
func writeCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	return testpki.Files(t, dir, name)
}

func start(t *testing.T, o Options) *server.Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// asKey connects to url with signer's NKey; errs receives the server's
// asynchronous errors (permissions violations).
func asKey(t *testing.T, url string, sg *keyring.Signer, opts ...nats.Option) (*nats.Conn, chan error) {
	t.Helper()
	errs := make(chan error, 16)
	kp := sg.KeyPair()
	opts = append(opts, nats.Nkey(sg.PublicKey(), kp.Sign), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// violation waits for a permissions violation naming subject.
func violation(t *testing.T, errs chan error, subject string) {
	t.Helper()
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), subject) {
			t.Fatalf("got %v, want a permissions violation on %s", err, subject)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no permissions violation for %s", subject)
	}
}

// TestKeysHaveTheirRolesRights: on a server with a group's keyring, node
// 0's key may publish its own reports only (not node 1's, not a
// decision), an observer reads reports and decisions and publishes
// nothing, an operator publishes admin requests only, and the Council
// does everything of its group.
func TestKeysHaveTheirRolesRights(t *testing.T) {
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Keys: &set.Ring, Group: Group{Prefix: prefix}})
	url := s.ClientURL()

	council, _ := asKey(t, url, set.Council)
	got := make(chan string, 16)
	sub, err := council.Subscribe(prefix+".>", func(m *nats.Msg) { got <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := council.Flush(); err != nil {
		t.Fatal(err)
	}
	receive := func(want string) {
		t.Helper()
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("Council received %s, want %s", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Council did not receive %s", want)
		}
	}

	node0, errs := asKey(t, url, set.Nodes[0])
	for _, subj := range []string{prefix + ".report.1", prefix + ".decision"} {
		if err := node0.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
		violation(t, errs, subj)
	}
	if err := node0.Publish(prefix+".report.0", []byte("x")); err != nil {
		t.Fatal(err)
	}
	receive(prefix + ".report.0") // and nothing of the refused ones before it

	obs, oerrs := asKey(t, url, set.Observer)
	osub, err := obs.SubscribeSync(prefix + ".report.*")
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Publish(prefix+".decision", []byte("x")); err != nil {
		t.Fatal(err)
	}
	violation(t, oerrs, prefix+".decision")
	if _, err := obs.SubscribeSync(prefix + ".admin"); err != nil {
		t.Fatal(err)
	}
	violation(t, oerrs, prefix+".admin")
	if err := node0.Publish(prefix+".report.0", []byte("y")); err != nil {
		t.Fatal(err)
	}
	receive(prefix + ".report.0")
	if _, err := osub.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("observer did not receive a report: %v", err)
	}

	op, perrs := asKey(t, url, set.Operator)
	if err := op.Publish(prefix+".admin", []byte("pin")); err != nil {
		t.Fatal(err)
	}
	receive(prefix + ".admin")
	if err := op.Publish(prefix+".decision", []byte("x")); err != nil {
		t.Fatal(err)
	}
	violation(t, perrs, prefix+".decision")

	if err := council.Publish(prefix+".decision", []byte("d")); err != nil {
		t.Fatal(err)
	}
	receive(prefix + ".decision")
}

func TestAnonymousAndUnknownKeysAreRefused(t *testing.T) {
	set, err := keyring.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Keys: &set.Ring, Group: Group{Prefix: prefix},
		User: "admin", Password: "s3cret"})
	if _, err := nats.Connect(s.ClientURL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("anonymous client: %v, want an authorization violation", err)
	}
	if _, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "wrong")); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("wrong password: %v, want an authorization violation", err)
	}
	stranger, err := keyring.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	kp := stranger.Nodes[0].KeyPair()
	if _, err := nats.Connect(s.ClientURL(), nats.Nkey(stranger.Nodes[0].PublicKey(), kp.Sign)); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a key of another keyring: %v, want an authorization violation", err)
	}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("admin", "s3cret"))
	if err != nil {
		t.Fatalf("the administrator: %v", err)
	}
	nc.Close()
}

func TestMutualTLSRequiresAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "server")
	s := start(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", TLSCert: cert, TLSKey: key, TLSCA: cert})
	if _, err := nats.Connect(s.ClientURL(), nats.RootCAs(cert)); err == nil {
		t.Error("a client without a certificate connected")
	}
	ocert, okey := writeCert(t, dir, "other")
	if _, err := nats.Connect(s.ClientURL(), nats.RootCAs(cert), nats.ClientCert(ocert, okey)); err == nil {
		t.Error("a client with a certificate of another CA connected")
	}
	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(cert), nats.ClientCert(cert, key))
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	nc.Close()
}

func TestListenPolicy(t *testing.T) {
	dir := t.TempDir()
	set, err := keyring.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"all interfaces, no auth", Options{Listen: "0.0.0.0:4222"}, false},
		{"all interfaces, a user", Options{Listen: "0.0.0.0:4222", User: "u", Password: "p"}, true},
		{"all interfaces, keys", Options{Listen: "0.0.0.0:4222", Keys: &set.Ring, Group: Group{Prefix: prefix}}, true},
		{"all interfaces, insecure", Options{Listen: "0.0.0.0:4222", Insecure: true}, true},
		{"loopback", Options{Listen: "127.0.0.1:4222"}, true},
		{"cluster on all interfaces, no route auth", Options{Listen: "127.0.0.1:4222", Name: "n", ClusterListen: "0.0.0.0:6222"}, false},
		{"cluster on all interfaces, route user", Options{Listen: "127.0.0.1:4222", Name: "n", ClusterListen: "0.0.0.0:6222", ClusterUser: "r", ClusterPassword: "p"}, true},
		{"cluster on all interfaces, insecure", Options{Listen: "127.0.0.1:4222", Name: "n", ClusterListen: "0.0.0.0:6222", Insecure: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.StoreDir = dir
			_, err := tt.o.ServerOptions()
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && (!errors.Is(err, listen.ErrUnauthenticated) || !strings.Contains(err.Error(), "--insecure")) {
				t.Fatalf("got %v, want a refusal naming --insecure", err)
			}
		})
	}
}

// routeConnect speaks the route protocol's CONNECT without credentials to
// a cluster port and returns the server's answer.
func routeConnect(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if info, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("route port said %q, %v; want INFO", info, err)
	}
	fmt.Fprintf(c, "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"stranger\",\"cluster\":\"%s\"}\r\nPING\r\n", DefaultCluster)
	line, _ := r.ReadString('\n')
	return line
}

// TestStrangerCannotJoinAsRoute: two nodes sharing the cluster's route
// credentials form a cluster; a node without them, routed to both, is
// never admitted, and a raw route CONNECT without credentials is refused.
func TestStrangerCannotJoinAsRoute(t *testing.T) {
	ports := testnet.FreePorts(t, 6)
	route := func(i int) string { return fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]) }
	node := func(i int, user, pass string, routes ...string) Options {
		return Options{Name: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes, StoreDir: t.TempDir(),
			ClusterUser: user, ClusterPassword: pass}
	}
	stranger := start(t, node(2, "", "", route(0), route(1)))
	n0 := start(t, node(0, "route", "s3cret", route(1)))
	n1 := start(t, node(1, "route", "s3cret", route(0)))
	poll.Until(t, "n0 and n1 routed", 10*time.Second, func() bool { return n0.NumRoutes() > 0 && n1.NumRoutes() > 0 })
	if got := routeConnect(t, fmt.Sprintf("127.0.0.1:%d", ports[3])); !strings.Contains(got, "Authorization Violation") {
		t.Errorf("route CONNECT without credentials: %q, want an authorization violation", got)
	}
	// The stranger started first and retries at once and every second: a
	// second and a half covers several attempts. The nodes holding the
	// credentials never route to it; on its own side a route it solicits
	// is counted from the remote's INFO until the remote refuses its
	// CONNECT, so it may show for an instant but never stays.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		routesToStranger(t, n0, n1)
	}
	poll.Until(t, "the stranger without routes", 5*time.Second, func() bool { return stranger.NumRoutes() == 0 })
	routesToStranger(t, n0, n1)
}

// routesToStranger fails the test if a node routes to the node named n2.
func routesToStranger(t *testing.T, nodes ...*server.Server) {
	t.Helper()
	for _, n := range nodes {
		rz, err := n.Routez(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rz.Routes {
			if r.RemoteName == "n2" {
				t.Fatalf("%s routes to the stranger: a node without the route credentials joined the cluster", n.Name())
			}
		}
	}
}

// TestStrangerCannotJoinWithoutACertificate: routes with mutual TLS admit
// a node whose certificate the CA signed and no other.
func TestStrangerCannotJoinWithoutACertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "cluster")
	ocert, okey := writeCert(t, dir, "stranger")
	ports := testnet.FreePorts(t, 6)
	route := func(i int) string { return fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]) }
	node := func(i int, cert, key string, routes ...string) Options {
		return Options{Name: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes, StoreDir: t.TempDir(),
			TLSCert: cert, TLSKey: key, TLSCA: cert}
	}
	stranger := start(t, node(2, ocert, okey, route(0), route(1)))
	n0 := start(t, node(0, cert, key, route(1)))
	n1 := start(t, node(1, cert, key, route(0)))
	poll.Until(t, "n0 and n1 routed over TLS", 10*time.Second, func() bool { return n0.NumRoutes() > 0 && n1.NumRoutes() > 0 })
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		routesToStranger(t, n0, n1)
	}
	poll.Until(t, "the stranger without routes", 5*time.Second, func() bool { return stranger.NumRoutes() == 0 })
	routesToStranger(t, n0, n1)
}
