package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/natsnode"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/internal/testnet"
)

// writeKeys generates a group of nodes I/O nodes' keys and writes them in a
// new directory.
func writeKeys(t *testing.T, nodes int) (*keyring.Set, string) {
	t.Helper()
	set, err := keyring.Generate(nodes)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "keys")
	if err := set.Write(dir); err != nil {
		t.Fatal(err)
	}
	return set, dir
}

// violations connects with opts and collects the server's asynchronous
// errors.
func violations(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, chan error) {
	t.Helper()
	errs := make(chan error, 8)
	nc := connect(t, url, append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))...)
	return nc, errs
}

func wantViolation(t *testing.T, errs chan error, subject string) {
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

// TestEmbeddedServerKeyringNodeOwnReports: on the Council's embedded
// server with the group's keyring, node 0's key (also listed with
// --allow-nkey) publishes node 0's reports and is refused node 1's; a key
// allowed with --allow-nkey alone keeps the per-group node rights.
func TestEmbeddedServerKeyringNodeOwnReports(t *testing.T) {
	set, dir := writeKeys(t, 2)
	plain, err := nodeKeys(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := startService(t, Options{Core: council.Config{Nodes: 1}, Security: Security{
		NKeySeedFile: filepath.Join(dir, keyring.CouncilSeed), Keys: &set.Ring,
		AllowNKeys: []string{set.Ring.Nodes[0], plain.pub},
	}})
	defer s.Shutdown()
	subj := s.Subjects()
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("anonymous connection accepted")
	}
	obsOpt, err := Security{NKeySeedFile: filepath.Join(dir, keyring.ObserverSeed)}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	dec := listen(t, connect(t, s.ClientURL(), obsOpt...), subj)

	opt, err := Security{NKeySeedFile: filepath.Join(dir, keyring.NodeSeed(0))}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	nc0, errs := violations(t, s.ClientURL(), opt...)
	(&node{id: 1, nc: nc0, subj: subj}).report(t, 0, 1e8)
	if err := nc0.Flush(); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, errs, subj.Report(1))
	(&node{id: 0, nc: nc0, subj: subj}).report(t, 0, 1e8)
	poll.Until(t, "a decision on node 0's own report", 5*time.Second, func() bool { _, n := dec.last(); return n == 1 })
	if st := s.Status(); st.Round != 1 {
		t.Fatalf("round %d, want 1 (node 1's forged report must not count)", st.Round)
	}

	popt, err := Security{NKeySeedFile: plain.seedFile}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	ncp, perrs := violations(t, s.ClientURL(), popt...)
	(&node{id: 1, nc: ncp, subj: subj}).report(t, 0, 1e8)
	if err := ncp.Publish(subj.Decision(), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, perrs, subj.Decision())
	select {
	case err := <-perrs:
		t.Fatalf("a plain --allow-nkey key was refused another node's report: %v", err)
	default:
	}
}

// TestSecuredNATSClusterKeepsDeciding: three "adaptio nats" nodes with
// mutual TLS on clients and routes and the group's keyring; the Council
// connects with its key and certificate, the I/O nodes with theirs. Losing
// a node, the Council keeps deciding and persisting its learned state.
func TestSecuredNATSClusterKeepsDeciding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster; skipped with -short")
	}
	set, dir := writeKeys(t, 2)
	cert, key := writeCert(t, t.TempDir())
	const prefix = "adaptio.secure"
	ports := testnet.FreePorts(t, 6)
	var routes, client []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
		client = append(client, fmt.Sprintf("tls://127.0.0.1:%d", ports[i]))
	}
	url := strings.Join(client, ",")
	base := t.TempDir()
	var opts [3]natsnode.Options
	var nodes [3]*server.Server
	for i := range 3 {
		opts[i] = natsnode.Options{Name: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes, StoreDir: filepath.Join(base, fmt.Sprintf("n%d", i)),
			Keys: &set.Ring, Group: natsnode.Group{Prefix: prefix}, User: "admin", Password: "adm1n",
			TLSCert: cert, TLSKey: key, TLSCA: cert}
		s, err := natsnode.Start(opts[i])
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = s
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			if s != nil {
				s.Shutdown()
			}
		}
	})
	tlsOpts := []nats.Option{nats.RootCAs(cert), nats.ClientCert(cert, key)}
	if _, err := nats.Connect(url, tlsOpts...); err == nil {
		t.Fatal("a client with a certificate but no key or user connected")
	}
	admin := connect(t, url, append(tlsOpts, nats.UserInfo("admin", "adm1n"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "clustered JetStream ready", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})

	sopts := Options{URL: url, Replicas: 3, Prefix: prefix, Seed: 5,
		Core:     council.Config{Nodes: 2, Timeout: 3 * time.Second, Credit: council.CreditRound},
		Security: Security{NKeySeedFile: filepath.Join(dir, keyring.CouncilSeed), TLSCA: cert, TLSCert: cert, TLSKey: key}}
	s1 := startService(t, sopts)
	defer s1.Shutdown()
	dec := listen(t, admin, s1.Subjects())
	var ioNodes []*node
	for k := range 2 {
		o, err := Security{NKeySeedFile: filepath.Join(dir, keyring.NodeSeed(k)), TLSCA: cert, TLSCert: cert, TLSKey: key}.ClientOptions()
		if err != nil {
			t.Fatal(err)
		}
		nc := connect(t, url, append(o, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
		ioNodes = append(ioNodes, &node{id: k, nc: nc, subj: s1.Subjects()})
	}
	persisted := func(round uint64) { t.Helper(); waitPersisted(t, admin, s1.opts.Bucket, round) }
	runRounds(t, ioNodes, dec, 3)
	persisted(3)

	leader := waitReplicated(t, admin, s1.opts.Bucket)
	// Lose a node that does not lead the bucket.
	victim := 2
	for opts[victim].Name == leader {
		victim--
	}
	nodes[victim].Shutdown()
	nodes[victim].WaitForShutdown()
	killed := opts[victim].Name
	nodes[victim] = nil
	poll.Until(t, "connections moved off "+killed, 15*time.Second, func() bool {
		conns := []*nats.Conn{admin, s1.nc}
		for _, n := range ioNodes {
			conns = append(conns, n.nc)
		}
		for _, c := range conns {
			if !c.IsConnected() || c.ConnectedServerName() == killed || c.Flush() != nil {
				return false
			}
		}
		return true
	})
	runRounds(t, ioNodes, dec, 3)
	persisted(6)
}
