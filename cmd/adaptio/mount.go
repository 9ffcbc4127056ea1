package main

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd/client"
	"github.com/adaptio/adaptio/workload"
)

// mountConfig is the configuration of "adaptio mount".
type mountConfig struct {
	Forwarder    string
	CacheTimeout time.Duration
	PageCache    bool
	DirectReads  bool
	MaxWrite     string
	WriteBehind  string
	Prefetch     string
	PrefetchFile string
	Reconnect    time.Duration
	NoShm        bool
	NoRing       bool
	RingSpin     time.Duration
	AllowOther   bool
	LocalLocks   bool
	JobEnv       []string
	NoJobs       bool
	Debug        bool
	Tune         tuneConfig
	Auth         fwdAuth // the forwarder's token and TLS
}

func newMountCmd() *cobra.Command {
	cfg := mountConfig{}
	cmd := &cobra.Command{
		Use:   "mount MOUNTPOINT",
		Short: "Mount the forwarder with FUSE for unmodified applications",
		Long: `Mount a forwarding daemon's export at MOUNTPOINT (an existing directory) with
FUSE, so unmodified programs (dd, fio, MPI-IO applications) do their I/O through
the forwarder. Writes, and reads of files open for writing, go to the daemon
as issued (direct I/O, no client page cache), tagged with the calling
process's id. Files open read-only are read through the page cache, the
kernel reading ahead in requests of up to --max-write, with close-to-open
consistency as on NFS: each open checks the file's size and times with the
forwarder, and taking a lock on a file drops its cached pages
(docs/posix.md; --direct-reads reads them as issued too).

The mount sees the reads of a file open read-only by all its processes:
where they form sequential streams (one process's contiguous reads, or
ranks reading one file in turn, 1D-strided), it fetches the blocks ahead of
them from the forwarder, several at once, and answers the kernel's reads
from memory. The blocks are kept to --prefetch bytes for the mount and
--prefetch-file for one file, freed once read or at the file's last close,
and dropped with the page cache (a changed file at open, a write or a lock
through this mount); nothing is prefetched while the file is open for
writing on this mount, for random reads, or for descriptors opened with
O_DIRECT. --prefetch 0 turns it off.

Writes to one file from many processes reach the daemon together: the
kernel's per-file write lock is lifted for writes inside the file's size, and
a write is acknowledged once copied, up to --write-behind bytes in flight for
the whole mount, so extending writes (which the kernel still serialises) do
not wait for the backend one after the other. close(2) and fsync(2) wait for
the file's writes and report their first error, as on any file system with a
write-back cache; reads, stat and truncate wait for the writes they could
see. --write-behind 0 acknowledges each write only once the backend has it.

--tune iopathtune or dqn changes the client's largest request (at most
--max-write) and its requests in flight to the forwarder while the mount
serves, one decision every --tune-interval from the bytes moved and the
write-behind bytes waiting (docs/tuning.md); each change is logged to stderr.

--allow-other lets other users use the mount, the kernel checking their
access against the owners and modes the backend reports; what they create is
given to them on the backend, which needs the daemon to run as root
(docs/posix.md). Without it only the user mounting may enter the mount.

Each process that opens a file is bound to its batch job on the forwarder,
whose QoS rules and per-job metrics then count its requests under that job
(docs/jobs.md): the job is the first of --job-env and SLURM_JOB_ID,
PBS_JOBID, LSB_JOBID, FLUX_JOB_ID set in the process's environment
(/proc/PID/environ), else the job_N component of its Slurm cgroup. It is
read at the process's first open and remembered for up to 4096 processes;
a process with none counts as job unknown. Reading another user's
environment needs root (with --allow-other).

If the forwarder goes away, calls wait up to --reconnect for it to come
back (reads and writes in flight are then sent again); after that wait they
fail with EIO at once while the mount tries the forwarder every 0.5 s in the
background, and work again as soon as it answers. The loss, the giving up and
the reconnection are logged once each to stderr.

A mount point left stale by a mount process that was killed ("transport
endpoint is not connected") is unmounted lazily, with a log line, before
mounting; if that fails the error gives the command to run
(fusermount3 -uz MOUNTPOINT).

As root the mount is made directly (no fusermount needed); otherwise fusermount3
must be installed. Runs until SIGINT/SIGTERM (then unmounts) or until the file
system is unmounted (umount MOUNTPOINT). Nothing is written locally.`,
		Example: `  adaptio mount /mnt/adaptio --forwarder 127.0.0.1:7070
  fio --name=t --directory=/mnt/adaptio --rw=write --bs=1m --size=64m --verify=crc32c`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("mount: want exactly one argument, the mount point (e.g. adaptio mount /mnt/adaptio --forwarder HOST:PORT); got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cfg.Tune.check(); err != nil {
				return fmt.Errorf("mount: %w", err)
			}
			maxWrite, err := workload.ParseSize(cfg.MaxWrite)
			if err != nil {
				return fmt.Errorf("mount: --max-write: %w", err)
			}
			wb := int64(-1)
			if cfg.WriteBehind != "0" {
				if wb, err = workload.ParseSize(cfg.WriteBehind); err != nil {
					return fmt.Errorf("mount: --write-behind: %w", err)
				}
			}
			prefetch, prefetchFile := int64(-1), int64(0)
			if cfg.Prefetch != "0" {
				if prefetch, err = workload.ParseSize(cfg.Prefetch); err != nil {
					return fmt.Errorf("mount: --prefetch: %w", err)
				}
				if prefetchFile, err = workload.ParseSize(cfg.PrefetchFile); err != nil || prefetchFile <= 0 {
					return fmt.Errorf("mount: --prefetch-file %q: want a positive size such as 64MiB", cfg.PrefetchFile)
				}
			}
			shmSize := 0 // the client's default
			if prefetch > 0 && !cfg.DirectReads && !cfg.PageCache {
				// Room for the prefetched blocks beside the requests in flight.
				shmSize = client.DefaultShmSize + int(prefetch)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			token, tlsCfg, err := cfg.Auth.client()
			if err != nil {
				return fmt.Errorf("mount: %w", err)
			}
			c, err := client.DialOptions(cfg.Forwarder, client.Options{Name: "mount", Reconnect: cfg.Reconnect, NoShm: cfg.NoShm, ShmSize: shmSize, NoRing: cfg.NoRing, RingSpin: cfg.RingSpin, Logger: log,
				Token: token, TLS: tlsCfg})
			if err != nil {
				return fmt.Errorf("mount: %w", err)
			}
			defer c.Close()
			m, err := fusemount.Mount(args[0], c, fusemount.Options{
				CacheTimeout: cfg.CacheTimeout, PageCache: cfg.PageCache, DirectReads: cfg.DirectReads, MaxWrite: int(maxWrite), WriteBehind: wb,
				Prefetch: prefetch, PrefetchFile: prefetchFile,
				AllowOther: cfg.AllowOther, LocalLocks: cfg.LocalLocks, Debug: cfg.Debug, Logger: log,
				JobEnv: append(cfg.JobEnv, fusemount.DefaultJobEnv...), NoJobs: cfg.NoJobs,
			})
			if err != nil {
				return fmt.Errorf("mount: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "adaptio mount: %s -> %s (Ctrl-C or umount to stop)\n", args[0], cfg.Forwarder)
			if err := cfg.Tune.start(cmd.Context(), m, log, cmd.ErrOrStderr(), "adaptio mount"); err != nil {
				_ = m.Unmount()
				return fmt.Errorf("mount: %w", err)
			}
			done := make(chan struct{})
			go func() { m.Wait(); close(done) }()
			select {
			case <-done:
				return nil
			case <-cmd.Context().Done():
			}
			for i := 0; ; i++ {
				err := m.Unmount()
				if err == nil {
					break
				}
				if i == 50 {
					return fmt.Errorf("mount: unmount %s: %w (files still open?)", args[0], err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			<-done
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Forwarder, "forwarder", "127.0.0.1:7070", "daemon address: host:port or unix:/path")
	f.DurationVar(&cfg.CacheTimeout, "cache-timeout", time.Second, "how long the kernel caches names and attributes")
	f.BoolVar(&cfg.NoShm, "no-shm", false, "with a unix: forwarder, send data over the socket instead of a shared-memory region")
	f.BoolVar(&cfg.NoRing, "no-ring", false, "with a unix: forwarder, send each request in the shared region as a frame on the socket instead of through the region's submission and completion rings (docs/protocol.md, Rings)")
	f.DurationVar(&cfg.RingSpin, "ring-spin", client.DefaultRingSpin, "least time the completion reaper keeps polling the rings after its last completion before it sleeps: on an idle node 50 sweeps pass in microseconds, and each request would then wait for a wake-up through the socket (negative: sleep after 50 empty sweeps)")
	f.BoolVar(&cfg.PageCache, "page-cache", false, "let the kernel cache the data of every open file, written ones too (writes to one file from many processes are then serialised by the kernel); by default only files open read-only are read through the page cache")
	f.BoolVar(&cfg.DirectReads, "direct-reads", false, "send the reads of files open read-only to the forwarder as issued too, bypassing the page cache and its readahead (by default they are read through the page cache with close-to-open consistency: docs/posix.md)")
	f.StringVar(&cfg.Prefetch, "prefetch", "256MiB", "memory for blocks of files open read-only fetched ahead of their sequential readers, for the whole mount (0: no prefetching; see above)")
	f.StringVar(&cfg.PrefetchFile, "prefetch-file", "64MiB", "of --prefetch, the most one file's blocks may take")
	f.StringVar(&cfg.MaxWrite, "max-write", "1MiB", "largest read or write the kernel sends in one request")
	f.DurationVar(&cfg.Reconnect, "reconnect", client.DefaultReconnect, "how long calls wait for a lost forwarder to come back, counted from the loss, before they fail with EIO (then at once, until a background retry every 0.5 s finds it back); 0: fail at once and for good; reads and writes in flight are sent again")
	f.StringVar(&cfg.WriteBehind, "write-behind", "64MiB", "bytes of writes acknowledged before the forwarder has them (0: none; see above)")
	f.BoolVar(&cfg.LocalLocks, "local-locks", false, "keep fcntl and flock locks in this node's kernel, excluding processes on this node only (default: the forwarder holds them for every node; docs/posix.md)")
	f.BoolVar(&cfg.AllowOther, "allow-other", false, "let other users use the mount, with the kernel checking permissions (allow_other,default_permissions; see above)")
	f.StringSliceVar(&cfg.JobEnv, "job-env", nil, "environment variable naming a process's batch job, looked up before "+strings.Join(fusemount.DefaultJobEnv, ", ")+" (repeatable; see above)")
	f.BoolVar(&cfg.NoJobs, "no-jobs", false, "do not look up the calling processes' jobs: every request counts under job unknown on the forwarder")
	f.BoolVar(&cfg.Debug, "debug", false, "log every FUSE operation to stderr")
	cfg.Auth.clientFlags(f)
	cfg.Tune.flags(f, "the largest request sent to the forwarder and the requests in flight to it")
	return cmd
}
