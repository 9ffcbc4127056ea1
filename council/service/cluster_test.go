package service

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/natsnode"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/internal/testnet"
)

// natsCluster is three NATS nodes with JetStream, each routed to the
// others, as three "adaptio nats" processes run them.
type natsCluster struct {
	t      *testing.T
	opts   [3]natsnode.Options
	nodes  [3]*server.Server
	client []string
}

func startNATSCluster(t *testing.T) *natsCluster {
	t.Helper()
	ports := testnet.FreePorts(t, 6)
	c := &natsCluster{t: t}
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+i]))
		c.client = append(c.client, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	base := t.TempDir()
	for i := range 3 {
		c.opts[i] = natsnode.Options{Name: fmt.Sprintf("n%d", i), Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]),
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", ports[3+i]), Routes: routes, StoreDir: filepath.Join(base, fmt.Sprintf("n%d", i))}
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Shutdown()
			}
		}
	})
	// JetStream answers once the nodes have met and chosen a meta leader.
	nc := connect(t, c.url())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "clustered JetStream ready", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return c
}

func (c *natsCluster) url() string { return strings.Join(c.client, ",") }

func (c *natsCluster) start(i int) {
	c.t.Helper()
	s, err := natsnode.Start(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[i] = s
}

func (c *natsCluster) kill(name string) int {
	c.t.Helper()
	for i, s := range c.nodes {
		if s != nil && c.opts[i].Name == name {
			s.Shutdown()
			s.WaitForShutdown()
			c.nodes[i] = nil
			return i
		}
	}
	c.t.Fatalf("no running NATS node %q", name)
	return -1
}

// streamCluster returns the KV bucket's stream leader and whether every
// replica is current.
func streamCluster(t *testing.T, nc *nats.Conn, bucket string) (leader string, current bool) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return "", false
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil {
		return "", false
	}
	current = len(info.Cluster.Replicas) == 2
	for _, r := range info.Cluster.Replicas {
		current = current && r.Current && !r.Offline
	}
	return info.Cluster.Leader, current
}

// TestNATSClusterKeepsLearningThroughNodeLoss runs the Council on a
// three-node NATS cluster with its learned state in a KV bucket of 3
// replicas: losing a node that does not lead the bucket, then (with the
// first back) the bucket's leader, the Council keeps deciding, the state
// is persisted after every round, and a new Council on the two surviving
// nodes carries every reward over.
func TestNATSClusterKeepsLearningThroughNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node NATS cluster; skipped with -short")
	}
	cl := startNATSCluster(t)
	// Rounds close when both nodes have reported: a 3 s deadline, not the
	// default 500 ms, so that a report delayed by a loaded machine (the
	// suite runs packages side by side) still joins its round, and every
	// round credits one reward, as the final count asserts.
	opts := Options{URL: cl.url(), Replicas: 3, Prefix: "adaptio.cluster", Core: council.Config{Nodes: 2, Timeout: 3 * time.Second, Credit: council.CreditRound}, Seed: 5}
	s1 := startService(t, opts)
	nc := connect(t, cl.url(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	nodes := []*node{{id: 0, nc: nc, subj: s1.Subjects()}, {id: 1, nc: nc, subj: s1.Subjects()}}
	dec := listen(t, nc, s1.Subjects())
	persisted := func(round uint64) { t.Helper(); waitPersisted(t, nc, s1.opts.Bucket, round) }
	runRounds(t, nodes, dec, 5)
	persisted(5)

	leader := waitReplicated(t, nc, s1.opts.Bucket)
	follower := "n0"
	if leader == follower {
		follower = "n1"
	}
	// Reports are core NATS messages: one published while its connection
	// moves to another node is lost, as on a real cluster (the round then
	// closes at its deadline). The test waits for both connections to be
	// back before it reports, so that every round gets its reports.
	reconnected := func(killed string) {
		t.Helper()
		poll.Until(t, "connections moved off "+killed, 15*time.Second, func() bool {
			for _, c := range []*nats.Conn{nc, s1.nc} {
				if !c.IsConnected() || c.ConnectedServerName() == killed || c.Flush() != nil {
					return false
				}
			}
			return true
		})
	}
	i := cl.kill(follower)
	reconnected(follower)
	runRounds(t, nodes, dec, 5)
	persisted(10)

	cl.start(i)
	poll.Until(t, "the restarted node catches up", 30*time.Second, func() bool {
		l, cur := streamCluster(t, nc, s1.opts.Bucket)
		leader = l
		return l != "" && cur
	})
	cl.kill(leader)
	reconnected(leader)
	runRounds(t, nodes, dec, 5)
	persisted(15)
	before := s1.Status()
	s1.Shutdown()

	s2 := startService(t, opts)
	defer s2.Shutdown()
	after := s2.Status()
	if after.Round != 15 || totalCount(after) != totalCount(before) || totalCount(after) != 15 {
		t.Fatalf("new Council on the surviving nodes: round %d, %d rewards; want 15 rounds and the 15 rewards of before (a round credits its nodes' one window once)", after.Round, totalCount(after))
	}
}

// waitPersisted waits until the learned state in bucket is at round.
func waitPersisted(t *testing.T, nc *nats.Conn, bucket string, round uint64) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("round %d persisted", round), 15*time.Second, func() bool {
		return readPersisted(t, nc, bucket).Round == round
	})
}

// waitReplicated waits until bucket is current on its replicas and returns
// the node leading it.
func waitReplicated(t *testing.T, nc *nats.Conn, bucket string) string {
	t.Helper()
	var leader string
	poll.Until(t, "bucket replicated on 3 nodes", 15*time.Second, func() bool {
		l, cur := streamCluster(t, nc, bucket)
		leader = l
		return l != "" && cur
	})
	return leader
}
