package pfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/adaptio/adaptio/dataserver"
	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/pfs/pfsclient"
)

// DefaultServers is the number of data servers of the papers' PVFS
// deployment (Bez et al., FGCS 2020, V-A).
const DefaultServers = 4

// ClusterOptions configure N data servers started together.
type ClusterOptions struct {
	Servers int    // number of data servers; 0: DefaultServers
	Dir     string // server i stores its files in Dir/server-i
	// Host is the listen host ("" : 127.0.0.1). With BasePort 0 each server
	// takes a free port; otherwise server i listens on BasePort+i.
	Host     string
	BasePort int
	Disk     string                  // "hdd" (default), "ssd", "array" or "none"
	Model    dataserver.Config       // the data-server model around the device (zero: the simulator's defaults)
	Device   func(i int) disk.Device // optional per-server device (tests); overrides Disk
	Clock    Clock                   // nil: wall clock
	Seed     uint64
	Stripe   int64 // stripe unit of Backend(); 0: 64 KiB

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Cluster is N data servers in one process: the emulated PFS. Lifecycle:
// NewCluster, Start, Ready, Shutdown.
type Cluster struct {
	opts ClusterOptions

	mu      sync.Mutex
	servers []*Server
	started bool
}

// NewCluster validates opts and creates the servers (not yet listening).
func NewCluster(opts ClusterOptions) (*Cluster, error) {
	if opts.Servers == 0 {
		opts.Servers = DefaultServers
	}
	if opts.Servers < 0 || opts.Servers > 1024 {
		return nil, fmt.Errorf("%w: %d data servers", ErrBadOptions, opts.Servers)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("%w: no storage directory", ErrBadOptions)
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.BasePort < 0 || opts.BasePort+opts.Servers > 65536 {
		return nil, fmt.Errorf("%w: base port %d for %d servers", ErrBadOptions, opts.BasePort, opts.Servers)
	}
	c := &Cluster{opts: opts}
	for i := range opts.Servers {
		port := 0
		if opts.BasePort != 0 {
			port = opts.BasePort + i
		}
		s, err := New(c.serverOptions(i, net.JoinHostPort(opts.Host, strconv.Itoa(port))))
		if err != nil {
			c.Shutdown()
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	return c, nil
}

func (c *Cluster) serverOptions(i int, addr string) Options {
	o := Options{
		ID: i, Addr: addr, Dir: filepath.Join(c.opts.Dir, fmt.Sprintf("server-%d", i)),
		Disk: c.opts.Disk, Model: c.opts.Model, Clock: c.opts.Clock, Seed: c.opts.Seed,
		Logger: c.opts.Logger, Registerer: c.opts.Registerer,
	}
	if c.opts.Device != nil {
		o.Device = c.opts.Device(i)
	}
	return o
}

// Start starts every server.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return ErrStarted
	}
	c.started = true
	for _, s := range c.servers {
		if err := s.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Ready reports whether every server accepts connections, waiting up to
// timeout.
func (c *Cluster) Ready(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, a := range c.Addrs() {
		for ping(ctx, a) != nil {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return true
}

// Addrs returns the servers' addresses in index order.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Addr()
	}
	return out
}

// Server returns data server i.
func (c *Cluster) Server(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Restart shuts data server i down and starts a new one on the same
// address and directory (the files survive; device state does not).
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.servers[i]
	addr := old.Addr()
	if addr == "" {
		addr = old.opts.Addr
	}
	old.Shutdown()
	s, err := New(c.serverOptions(i, addr))
	if err != nil {
		return err
	}
	c.servers[i] = s
	return s.Start()
}

// Backend returns a client of the cluster as I/O node 0 (the caller closes
// it).
func (c *Cluster) Backend() (*pfsclient.Client, error) { return c.NodeBackend(0) }

// NodeBackend returns a client of the cluster that I/O node node uses:
// the servers charge the cost of interleaving I/O nodes between its
// accesses and other nodes' (the caller closes it).
func (c *Cluster) NodeBackend(node int) (*pfsclient.Client, error) {
	return pfsclient.NewClient(pfsclient.ClientOptions{Addrs: c.Addrs(), StripeSize: c.opts.Stripe, Node: node, Logger: c.opts.Logger})
}

// Stats returns every server's counters.
func (c *Cluster) Stats() []Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Stats, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.Stats()
	}
	return out
}

// Shutdown stops every server.
func (c *Cluster) Shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range c.servers {
		wg.Go(s.Shutdown)
	}
	wg.Wait()
}

// Run starts the cluster unless Start was called, serves until ctx ends,
// then shuts it down.
func (c *Cluster) Run(ctx context.Context) error {
	if err := c.Start(); err != nil && !errors.Is(err, ErrStarted) {
		c.Shutdown()
		return err
	}
	if !c.Ready(5 * time.Second) {
		c.Shutdown()
		return errors.New("pfs: data servers not ready after 5 s")
	}
	<-ctx.Done()
	c.Shutdown()
	return nil
}
