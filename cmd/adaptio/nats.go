package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/council/natsnode"
)

func newNATSCmd() *cobra.Command {
	var o natsnode.Options
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Run one node of a NATS cluster with JetStream, for the Council's replicated state",
		Long: `nats runs a NATS server with JetStream in this process (the same server the Council
embeds), so that a site can run the NATS cluster the Council needs without installing
nats-server. Three nodes, each given the others' route URLs, form a cluster whose
JetStream keeps the Council's learned state in a KV bucket of 3 replicas (adaptio council
--nats URL,URL,URL --replicas 3): the state stays available while any two nodes run, and a
Council restarted anywhere resumes learning from it.

Without --cluster-listen it runs a single server. Authentication and TLS are not
configured here: keep the nodes on a trusted network, or run nats-server with a
configuration file where they are needed (docs/council.md lists the permissions).`,
		Example: `  # on each of three service nodes (n1, n2, n3):
  adaptio nats --name n1 --listen 0.0.0.0:4222 --cluster-listen 0.0.0.0:6222 \
    --routes nats-route://n2:6222,nats-route://n3:6222 --store /var/lib/adaptio/nats
  # then, on any node:
  adaptio council --nats nats://n1:4222,nats://n2:4222,nats://n3:4222 --replicas 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := natsnode.Start(o)
			if err != nil {
				return fmt.Errorf("nats: %w", err)
			}
			defer s.Shutdown()
			fmt.Fprintf(cmd.OutOrStdout(), "nats: node %q serving clients on %s", s.Name(), s.ClientURL())
			if o.ClusterListen != "" {
				fmt.Fprintf(cmd.OutOrStdout(), ", cluster %q routes on %s", s.ClusterName(), o.ClusterListen)
			}
			fmt.Fprintf(cmd.OutOrStdout(), ", JetStream in %s\n", o.StoreDir)
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "server name, unique in the cluster (required with --cluster-listen)")
	f.StringVar(&o.Cluster, "cluster", natsnode.DefaultCluster, "cluster name, the same on every node")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "host:port for clients (Councils, Announcers)")
	f.StringVar(&o.ClusterListen, "cluster-listen", "", "host:port the other nodes route to (empty: a single server)")
	f.StringSliceVar(&o.Routes, "routes", nil, "the other nodes' route URLs, nats-route://host:port (comma-separated)")
	f.StringVar(&o.StoreDir, "store", "adaptio-nats", "JetStream store directory")
	f.BoolVar(&o.Log, "log", false, "print the NATS server's own log")
	return cmd
}
