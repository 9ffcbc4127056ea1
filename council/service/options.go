package service

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/natsnode"
)

// DefaultPrefix is the subject prefix of the default Council group.
const DefaultPrefix = "adaptio.default"

// ErrBadOptions is wrapped by every Options validation error.
var ErrBadOptions = errors.New("council/service: invalid options")

// Security holds the NATS authentication and TLS settings. For the embedded
// server they are what it requires of clients; for an external server (URL)
// they are what the Council presents. Empty fields disable the feature.
type Security struct {
	User     string // user name (with Password)
	Password string
	// NKeySeedFile is a file holding an NKey user seed ("SU..."): the Council
	// authenticates with it, and the embedded server accepts its public key.
	NKeySeedFile string
	// AllowNKeys are further NKey user public keys ("U...") the embedded
	// server accepts, with the I/O node's role: they may subscribe to
	// decisions (<prefix>.decision) and replies (_INBOX.>) and publish
	// reports, nothing else, so an I/O node's credentials cannot publish a
	// decision. A key that Keys holds as node k's may publish node k's
	// reports only (<prefix>.report.k); any other key may publish the
	// reports of every node of the group (<prefix>.report.*). The
	// Council's own user and key keep every right.
	AllowNKeys []string
	// Keys is the group's keyring (nil: none). On the embedded server
	// every key in it may connect with its role's rights
	// (natsnode.Group.Permissions): the Council's, node k's (its own
	// reports), the operators' and the observers'.
	Keys *keyring.Keyring
	// TLSCert and TLSKey are PEM files: the embedded server's certificate,
	// or the Council's client certificate for an external server.
	TLSCert, TLSKey string
	// TLSCA is a PEM file of CA certificates: for the embedded server, the
	// CAs client certificates must chain to (mutual TLS); for an external
	// server, the CAs its certificate must chain to.
	TLSCA string
}

// ClientOptions returns the nats.go options that authenticate a client
// (the Council, an Announcer, the bench) with these settings.
func (s Security) ClientOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if s.User != "" {
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	}
	if s.NKeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(s.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed %s: %w", s.NKeySeedFile, err)
		}
		opts = append(opts, o)
	}
	if s.TLSCA != "" {
		opts = append(opts, nats.RootCAs(s.TLSCA))
	}
	if s.TLSCert != "" || s.TLSKey != "" {
		opts = append(opts, nats.ClientCert(s.TLSCert, s.TLSKey))
	}
	return opts, nil
}

// serverOptions applies the settings to an embedded server's options: the
// keyring's keys (Keys) get their roles' rights in the group of subjects
// subj, further keys (AllowNKeys) the I/O node's. (The Council's own
// connection is in-process with every right; the keyring's Council key is
// given the rights of a Council keeping its state in the default bucket.)
func (s Security) serverOptions(o *server.Options, subj councilmsg.Subjects) error {
	if s.User != "" {
		o.Username, o.Password = s.User, s.Password
	}
	g := natsnode.Group{Prefix: subj.Prefix}
	seen := map[string]bool{}
	if s.Keys != nil {
		if err := s.Keys.Validate(); err != nil {
			return err
		}
		for _, u := range g.Users(s.Keys) {
			seen[u.Nkey] = true
			o.Nkeys = append(o.Nkeys, u)
		}
	}
	for _, k := range s.AllowNKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			return fmt.Errorf("%q is not an NKey user public key", k)
		}
		if seen[k] {
			// In the keyring: its role's rights (node k: its own reports).
			if role, _, _ := natsnode.KeyRole(s.Keys, k); role != natsnode.RoleNode {
				return fmt.Errorf("allowed key %s is the keyring's %s key, not a node's", k, role)
			}
			continue
		}
		seen[k] = true
		o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: k, Permissions: g.Permissions(natsnode.RoleNode, -1)})
	}
	var keys []string
	if s.NKeySeedFile != "" {
		seed, err := os.ReadFile(s.NKeySeedFile)
		if err != nil {
			return fmt.Errorf("nkey seed: %w", err)
		}
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
		if err != nil {
			return fmt.Errorf("nkey seed %s: %w", s.NKeySeedFile, err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return err
		}
		keys = append(keys, pub)
	}
	for _, k := range keys {
		if !nkeys.IsValidPublicUserKey(k) {
			return fmt.Errorf("%q is not an NKey user public key", k)
		}
		// The Council's own key has every right on its own server.
		replaced := false
		for _, u := range o.Nkeys {
			if u.Nkey == k {
				u.Permissions, replaced = nil, true
			}
		}
		if !replaced {
			o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: k})
		}
	}
	if s.User != "" && len(o.Nkeys) > 0 {
		// The server takes users and NKey users together only as lists.
		o.Users = []*server.User{{Username: s.User, Password: s.Password}}
		o.Username, o.Password = "", ""
	}
	if s.TLSCert != "" || s.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return fmt.Errorf("tls certificate: %w", err)
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if s.TLSCA != "" {
			pem, err := os.ReadFile(s.TLSCA)
			if err != nil {
				return fmt.Errorf("tls ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("tls ca %s: no certificates", s.TLSCA)
			}
			cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
			o.TLSVerify = true
		}
		o.TLSConfig, o.TLS = cfg, true
		o.TLSTimeout = 2
	} else if s.TLSCA != "" {
		return errors.New("TLSCA without TLSCert/TLSKey for the embedded server")
	}
	return nil
}

// Options configure a Council service. Zero fields take the defaults listed.
type Options struct {
	// Prefix is the subject prefix of this Council's group of I/O nodes
	// (default DefaultPrefix): reports on <Prefix>.report.<node>, decisions
	// on <Prefix>.decision.
	Prefix string
	// URL of an external NATS server or cluster (with JetStream). Empty:
	// run an embedded server in this process.
	URL string
	// Host and Port the embedded server listens on (default 127.0.0.1 and
	// 4222; Port -1 picks a free port).
	Host string
	Port int
	// StateDir is the embedded server's JetStream directory, where learned
	// state survives restarts. Empty: a temporary directory removed at
	// Shutdown (nothing survives).
	StateDir string
	// Bucket is the JetStream KV bucket holding the learned state (default
	// derived from Prefix: "adaptio_council_" + Prefix with '.' -> '_').
	Bucket string
	// Replicas is the KV bucket's number of copies on a clustered JetStream
	// (1 to 5; default 1). With 3, on a cluster of three NATS nodes
	// (adaptio nats), the learned state survives the loss of any one node.
	// A bucket created earlier keeps the count it was created with unless
	// the cluster can change it.
	Replicas int
	// Security: authentication and TLS.
	Security Security
	// Keys sign decisions and authenticate reports (sign.go; zero: none).
	Keys Keys
	// Admission bounds the reports that reach learning (admit.go; zero
	// fields: the defaults).
	Admission Admission
	// Core configures the learning core (policy, windows, consensus, ...).
	Core council.Config
	// Seed seeds the core's random choices (0: 1).
	Seed uint64
	// HTTPAddr serves /metrics, /status and /healthz ("" : no HTTP;
	// "127.0.0.1:0" picks a free port).
	HTTPAddr string
	// DecisionLog receives one JSON line per round (nil: none). Writes
	// happen after the decision is published.
	DecisionLog io.Writer
	// AuditLog receives one JSON line (AuditEntry) per operator action and
	// guardrail fallback, synced after each when it has a Sync method (an
	// *os.File opened for appending). Nil: none (the actions are still
	// logged).
	AuditLog io.Writer
	// HealthRounds is how far behind /healthz lets things fall before it
	// reports degraded: the learned state last written more than this many
	// rounds ago, or a known I/O node silent for this many of its report
	// intervals (default DefaultHealthRounds).
	HealthRounds int
	// Logger for operational messages (nil: discard).
	Logger *slog.Logger
	// Registerer for the metrics (nil: a private registry, served on /metrics).
	// When it is also a prometheus.Gatherer, /metrics serves it.
	Registerer prometheus.Registerer
	// ReadyTimeout bounds the embedded server's start (default 10 s).
	ReadyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 4222
	}
	if o.Bucket == "" {
		o.Bucket = natsnode.CouncilBucket(o.Prefix)
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	if o.HealthRounds == 0 {
		o.HealthRounds = DefaultHealthRounds
	}
	if o.Keys.Ring != nil && o.Security.Keys == nil {
		o.Security.Keys = o.Keys.Ring
	}
	return o
}

func (o Options) validate() error {
	if err := councilmsg.ValidPrefix(o.Prefix); err != nil {
		return fmt.Errorf("%w: %v", ErrBadOptions, err)
	}
	for _, c := range o.Bucket {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: bucket %q: character %q not allowed", ErrBadOptions, o.Bucket, c)
		}
	}
	if o.Port < -1 || o.Port > 65535 {
		return fmt.Errorf("%w: port %d", ErrBadOptions, o.Port)
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		return fmt.Errorf("%w: %d KV replicas, want 1 to 5 (JetStream's limit)", ErrBadOptions, o.Replicas)
	}
	if o.Security.User == "" && o.Security.Password != "" {
		return fmt.Errorf("%w: password without user", ErrBadOptions)
	}
	if err := o.Keys.validate(); err != nil {
		return err
	}
	return o.Admission.validate()
}
