package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/natsnode"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/internal/listen"
)

func newNATSCmd() *cobra.Command {
	var (
		o    natsnode.Options
		keys string
	)
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Run one node of a NATS cluster with JetStream, for the Council's replicated state",
		Long: `nats runs a NATS server with JetStream in this process (the same server the Council
embeds), so that a site can run the NATS cluster the Council needs without installing
nats-server. Three nodes, each given the others' route URLs, form a cluster whose
JetStream keeps the Council's learned state in a KV bucket of 3 replicas (adaptio council
--nats URL,URL,URL --replicas 3): the state stays available while any two nodes run, and a
Council restarted anywhere resumes learning from it.

Without --cluster-listen it runs a single server.

Security. A client or cluster address beyond loopback (anything but 127.0.0.0/8, ::1,
localhost) needs authentication, or the server refuses to start; --insecure starts it
anyway, on a network you trust. Clients authenticate with:
  --keys DIR          the Council group's keyring (adaptio keys init DIR): each key connects
                      with its role's subject permissions under --prefix: the Council's key
                      everything of its group and JetStream, node k's key publishes only
                      <prefix>.report.k and reads decisions, operators publish <prefix>.admin,
                      observers only read decisions and reports
  --user NAME         a user with every right (an administrator; the password comes from
                      $ADAPTIO_NATS_PASSWORD)
  --tls-ca FILE       with --tls-cert and --tls-key: clients must present a certificate
                      signed by this CA (mutual TLS)
Routes between nodes authenticate with --cluster-user (the password from
$ADAPTIO_NATS_CLUSTER_PASSWORD, the same on every node), or with mutual TLS when
--tls-cert, --tls-key and --tls-ca are given (each node's certificate must be valid for
server and client authentication and name the host the others route to): a stranger
cannot join the cluster as a route. See docs/security.md.`,
		Example: `  # on each of three service nodes (n1, n2, n3), with the group's keys and TLS:
  export ADAPTIO_NATS_CLUSTER_PASSWORD=...   # the same on the three nodes
  adaptio nats --name n1 --listen 0.0.0.0:4222 --cluster-listen 0.0.0.0:6222 \
    --routes nats-route://n2:6222,nats-route://n3:6222 --store /var/lib/adaptio/nats \
    --keys /etc/adaptio/keys/keyring.json --cluster-user routes \
    --tls-cert n1.pem --tls-key n1-key.pem --tls-ca ca.pem
  # then, on any node:
  adaptio council --nats tls://n1:4222,tls://n2:4222,tls://n3:4222 --replicas 3 \
    --nkey-seed council.nk --tls-ca ca.pem --tls-cert council.pem --tls-key council-key.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.User != "" {
				if o.Password = os.Getenv("ADAPTIO_NATS_PASSWORD"); o.Password == "" {
					return errors.New("nats: --user needs the password in $ADAPTIO_NATS_PASSWORD")
				}
			}
			if o.ClusterUser != "" {
				if o.ClusterPassword = os.Getenv("ADAPTIO_NATS_CLUSTER_PASSWORD"); o.ClusterPassword == "" {
					return errors.New("nats: --cluster-user needs the routes' password in $ADAPTIO_NATS_CLUSTER_PASSWORD (the same on every node)")
				}
			}
			if keys != "" {
				ring, err := keyring.Load(keys)
				if err != nil {
					return fmt.Errorf("nats: --keys: %w", err)
				}
				o.Keys = ring
			}
			s, err := natsnode.Start(o)
			if err != nil {
				return fmt.Errorf("nats: %w", err)
			}
			defer s.Shutdown()
			out := cmd.OutOrStdout()
			if o.Insecure && listen.Insecure(o.Listen, o.User != "" || o.Keys != nil || o.TLSCA != "") {
				fmt.Fprintf(cmd.ErrOrStderr(), "nats: WARNING: clients on %s are not authenticated (--insecure): anyone who reaches it can publish decisions and read or erase the learned state\n", o.Listen)
			}
			if o.Insecure && o.ClusterListen != "" && listen.Insecure(o.ClusterListen, o.ClusterUser != "" || (o.TLSCA != "" && o.TLSCert != "")) {
				fmt.Fprintf(cmd.ErrOrStderr(), "nats: WARNING: routes on %s are not authenticated (--insecure): anyone who reaches it can join the cluster\n", o.ClusterListen)
			}
			fmt.Fprintf(out, "nats: node %q serving clients on %s", s.Name(), s.ClientURL())
			if o.ClusterListen != "" {
				fmt.Fprintf(out, ", cluster %q routes on %s", s.ClusterName(), o.ClusterListen)
			}
			fmt.Fprintf(out, ", JetStream in %s", o.StoreDir)
			if o.Keys != nil {
				fmt.Fprintf(out, ", keys of group %s (%v)", o.Group.Prefix, o.Keys)
			}
			fmt.Fprintln(out)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "server name, unique in the cluster (required with --cluster-listen)")
	f.StringVar(&o.Cluster, "cluster", natsnode.DefaultCluster, "cluster name, the same on every node")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "host:port for clients (Councils, Announcers); beyond loopback it needs --keys, --user or --tls-ca, or --insecure")
	f.StringVar(&o.ClusterListen, "cluster-listen", "", "host:port the other nodes route to (empty: a single server); beyond loopback it needs --cluster-user or mutual TLS, or --insecure")
	f.StringSliceVar(&o.Routes, "routes", nil, "the other nodes' route URLs, nats-route://host:port (comma-separated)")
	f.StringVar(&o.StoreDir, "store", "adaptio-nats", "JetStream store directory")
	f.BoolVar(&o.Log, "log", false, "print the NATS server's own log")
	f.StringVar(&keys, "keys", "", "the Council group's keyring (a key directory or its keyring.json): every key may connect with its role's subject permissions")
	f.StringVar(&o.Group.Prefix, "prefix", service.DefaultPrefix, "subject prefix of the Council group whose --keys connect (as adaptio council --prefix)")
	f.StringVar(&o.Group.Bucket, "bucket", "", "the Council's JetStream KV bucket the Council key may use (empty: the Council's default for --prefix, adaptio_council_ and the prefix with '.' as '_')")
	f.StringVar(&o.User, "user", "", "a user with every right (the password comes from $ADAPTIO_NATS_PASSWORD)")
	f.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate of this server (clients, and routes with --tls-ca)")
	f.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&o.TLSCA, "tls-ca", "", "PEM CA bundle: clients and the other nodes' routes must present a certificate signed by it (mutual TLS)")
	f.StringVar(&o.ClusterUser, "cluster-user", "", "user name routes authenticate with (the password comes from $ADAPTIO_NATS_CLUSTER_PASSWORD, the same on every node)")
	f.BoolVar(&o.Insecure, "insecure", false, "start even though a client or cluster address beyond loopback has no authentication (a trusted network only)")
	return cmd
}
