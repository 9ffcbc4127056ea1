package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/announce"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/fwd/fwdproto"
	"github.com/adaptio/adaptio/internal/listen"
)

// newKeysCmd is "adaptio keys": the keys that sign the control plane.
func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create and inspect a Council group's signing keys (Council, I/O nodes, operators, observers)",
		Long: `The Council signs its decisions and every I/O node signs its reports with its own
key; each side applies only what the keyring says the sender may send. A key set
is a directory: keyring.json (public keys and roles, for every host) and one seed
file (mode 0600) per key, each for one host only. See docs/security.md.`,
	}
	cmd.AddCommand(newKeysInitCmd(), newKeysShowCmd(), newKeysAddNodeCmd(), newKeysTokenCmd())
	return cmd
}

func newKeysInitCmd() *cobra.Command {
	var nodes int
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Create a new key set for a group of --nodes I/O nodes in DIR",
		Long: `Creates DIR (mode 0700) with keyring.json and the seeds of the Council, of each
I/O node 0..N-1, of one operator and one observer. It never replaces an existing
key file. Then copy to each host only what it needs (printed below).`,
		Example: `  adaptio keys init /etc/adaptio/keys --nodes 4
  adaptio council --keys /etc/adaptio/keys --nodes 4 --listen 0.0.0.0:4222
  adaptio forward --keys /etc/adaptio/keys --node 2 --council nats://council:4222 ...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if nodes < 1 {
				return fmt.Errorf("keys init: --nodes %d: want the number of I/O nodes, at least 1", nodes)
			}
			set, err := keyring.Generate(nodes)
			if err != nil {
				return fmt.Errorf("keys init: %w", err)
			}
			if err := set.Write(args[0]); err != nil {
				return fmt.Errorf("keys init: %w", err)
			}
			printKeyFiles(cmd.OutOrStdout(), args[0], &set.Ring)
			return nil
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 0, "number of I/O nodes (forwarding daemons), numbered 0..N-1 as their --node (required; add more later with adaptio keys add-node)")
	return cmd
}

// printKeyFiles says what each file of a key directory is for and which
// host gets it.
func printKeyFiles(w io.Writer, dir string, r *keyring.Keyring) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "file\tgoes to\twhat it is\n")
	fmt.Fprintf(tw, "%s\tevery host\tthe public keys and their roles (not secret)\n", filepath.Join(dir, keyring.RingFile))
	fmt.Fprintf(tw, "%s\tthe Council's host only\tsigns decisions (adaptio council --keys DIR)\n", filepath.Join(dir, keyring.CouncilSeed))
	for k := range r.Nodes {
		fmt.Fprintf(tw, "%s\tI/O node %d only\tsigns its reports (adaptio forward --keys DIR --node %d)\n", filepath.Join(dir, keyring.NodeSeed(k)), k, k)
	}
	fmt.Fprintf(tw, "%s\tthe operators' host\tsigns pin, release and shadow requests (adaptio council pin --keys DIR)\n", filepath.Join(dir, keyring.OperatorSeed))
	fmt.Fprintf(tw, "%s\tmonitoring\treceives decisions only\n", filepath.Join(dir, keyring.ObserverSeed))
	tw.Flush()
	fmt.Fprintln(w, "Seeds are secret (mode 0600): copy each to its host only, e.g. a directory holding keyring.json and that host's seed.")
}

func newKeysShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show DIR|keyring.json",
		Short: "Print a keyring's roles and public keys",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := keyring.Load(args[0])
			if err != nil {
				return fmt.Errorf("keys show: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "role\tpublic key\n")
			fmt.Fprintf(tw, "council\t%s\n", r.Council)
			for k, n := range r.Nodes {
				fmt.Fprintf(tw, "node %d\t%s\n", k, n)
			}
			for _, o := range r.Operators {
				fmt.Fprintf(tw, "operator\t%s\n", o)
			}
			for _, o := range r.Observers {
				fmt.Fprintf(tw, "observer\t%s\n", o)
			}
			return tw.Flush()
		},
	}
}

func newKeysAddNodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "add-node DIR",
		Short: "Add one I/O node's key to the key set in DIR",
		Long: `Creates the next node's seed (node-K.nk, K = the number of nodes so far) and
rewrites DIR/keyring.json with it. Copy the new keyring.json to every host and
restart the Council (and adaptio nats --keys servers) so that they accept node K.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, sg, err := keyring.AddNode(args[0])
			if err != nil {
				return fmt.Errorf("keys add-node: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %d: %s\nseed %s goes to I/O node %d only; copy %s to every host and restart the Council\n",
				k, sg.PublicKey(), filepath.Join(args[0], keyring.NodeSeed(k)), k, filepath.Join(args[0], keyring.RingFile))
			return nil
		},
	}
}

func newKeysTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "token FILE",
		Short: "Create the forwarders' shared token file (adaptio forward/mount/bench --token-file)",
		Long: `Writes a new token, 32 random bytes in hex, to FILE with mode 0600; it refuses to
replace an existing file. Give the same file to every forwarder (adaptio forward
--token-file FILE) and to the mounts and benchmarks that reach them (--token-file FILE):
each client proves it holds the token, in a challenge and response, before anything
else, and the token itself never travels. It authenticates; only TLS also encrypts
(docs/security.md).`,
		Example: `  adaptio keys token /etc/adaptio/fwd.token`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fwdproto.WriteTokenFile(args[0]); err != nil {
				return fmt.Errorf("keys token: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token written to %s (mode 0600): copy it to every I/O node and compute node, readable by the adaptio processes only\n", args[0])
			return nil
		},
	}
}

// keyFiles resolves --keys (a directory, or its keyring.json) into the
// keyring and the path of the seed named seed next to it.
func keyFiles(keys, seed string) (*keyring.Keyring, string, error) {
	r, err := keyring.Load(keys)
	if err != nil {
		return nil, "", err
	}
	dir := keys
	if st, err := os.Stat(keys); err == nil && !st.IsDir() {
		dir = filepath.Dir(keys)
	}
	return r, filepath.Join(dir, seed), nil
}

// urlsLocal reports whether every URL of a comma-separated NATS URL list
// names this host.
func urlsLocal(urls string) bool {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if i := strings.Index(u, "://"); i >= 0 {
			u = u[i+3:]
		}
		if i := strings.LastIndex(u, "@"); i >= 0 {
			u = u[i+1:]
		}
		host := u
		if i := strings.LastIndex(u, ":"); i >= 0 && !strings.HasSuffix(u, "]") {
			host = u[:i]
		}
		if !listen.LocalHost(host) {
			return false
		}
	}
	return true
}

// errUnsigned is the refusal to run an unsigned control plane beyond
// loopback.
var errUnsigned = errors.New("the control plane would be unsigned beyond loopback")

// councilKeys loads "adaptio council --keys" into opts (the keyring: reports
// authenticated; the Council's seed: decisions signed) and, without keys,
// refuses an external NATS beyond loopback unless insecure.
func councilKeys(keys string, opts *service.Options, insecure bool, log *slog.Logger) error {
	if keys == "" {
		if opts.URL != "" && !urlsLocal(opts.URL) && !insecure {
			return fmt.Errorf("%w: --nats %s without --keys: anyone on that NATS could publish decisions every I/O node applies, or reports as any node; create keys (adaptio keys init DIR --nodes N), give the Council --keys DIR and each I/O node --keys DIR --node K, or pass --insecure on a network you trust", errUnsigned, opts.URL)
		}
		log.Warn("decisions and reports are not signed (no --keys): any client of the NATS server can steer the window; see docs/security.md")
		return nil
	}
	ring, seed, err := keyFiles(keys, keyring.CouncilSeed)
	if err != nil {
		return fmt.Errorf("--keys: %w", err)
	}
	sg, err := keyring.ReadSigner(seed)
	if err != nil {
		return fmt.Errorf("--keys: the Council's seed: %w", err)
	}
	opts.Keys = service.Keys{Ring: ring, Signer: sg}
	if opts.URL != "" && opts.Security.User == "" && opts.Security.NKeySeedFile == "" {
		// An external server that admits the keyring (adaptio nats --keys)
		// knows the Council by its key, as the I/O nodes by theirs.
		opts.Security.NKeySeedFile = seed
	}
	log.Info("decisions signed, reports verified", "keyring", ring.String())
	return nil
}

// forwardKeys loads the Announcer's keys of "adaptio forward": --keys DIR
// (DIR/keyring.json and DIR/node-K.nk) or --keyring FILE with --node-seed
// FILE; the node's key signs reports and authenticates to NATS. Without
// keys it refuses a Council beyond loopback unless insecure.
func forwardKeys(cfg forwardConfig, log *slog.Logger) (*keyring.Keyring, *keyring.Signer, error) {
	ringPath, seed := cfg.Keys, ""
	switch {
	case cfg.Keys != "" && (cfg.Keyring != "" || cfg.NodeSeed != ""):
		return nil, nil, errors.New("--keys DIR or --keyring FILE with --node-seed FILE, not both")
	case cfg.Keys != "":
	case cfg.Keyring != "" && cfg.NodeSeed != "":
		ringPath, seed = cfg.Keyring, cfg.NodeSeed
	case cfg.Keyring != "" || cfg.NodeSeed != "":
		return nil, nil, errors.New("--keyring and --node-seed go together (or --keys DIR holding both)")
	default:
		if !urlsLocal(cfg.Council) && !cfg.Auth.Insecure {
			return nil, nil, fmt.Errorf("%w: --council %s without keys: this node would apply any decision anyone on that NATS publishes; give it the group's keys (--keys DIR --node %d, from adaptio keys init), or pass --insecure on a network you trust", errUnsigned, cfg.Council, cfg.Node)
		}
		log.Warn("Council decisions are not authenticated and reports not signed (no --keys): see docs/security.md")
		return nil, nil, nil
	}
	ring, defSeed, err := keyFiles(ringPath, keyring.NodeSeed(cfg.Node))
	if err != nil {
		return nil, nil, err
	}
	if seed == "" {
		seed = defSeed
	}
	if ring.Node(cfg.Node) == "" {
		return nil, nil, fmt.Errorf("node %d is not in the keyring (%d nodes): add it with adaptio keys add-node DIR", cfg.Node, len(ring.Nodes))
	}
	sg, err := keyring.ReadSigner(seed)
	if err != nil {
		return nil, nil, err
	}
	if sg.PublicKey() != ring.Node(cfg.Node) {
		return nil, nil, fmt.Errorf("the seed %s is not node %d's key in the keyring (each node needs its own node-K.nk)", seed, cfg.Node)
	}
	return ring, sg, nil
}

// announceKeys fills the Announcer's options with the node's keys: the
// keyring checks decisions, the seed signs reports and, unless other
// credentials are given, authenticates to NATS.
func announceKeys(o *announce.Options, cfg forwardConfig, ring *keyring.Keyring, sg *keyring.Signer) {
	if ring == nil {
		return
	}
	o.Keyring, o.Signer = ring, sg
	if cfg.CouncilAuth.User == "" && cfg.CouncilAuth.NKeySeedFile == "" {
		o.NATSOptions = append(o.NATSOptions, nats.Option(sg.NATSOption()))
	}
}
