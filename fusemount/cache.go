package fusemount

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/adaptio/adaptio/fwd/client"
)

// Reads of files open read-only go through the kernel's page cache, with
// close-to-open consistency as NFS gives: the kernel reads ahead in large
// requests (up to Options.MaxWrite) that serve many small reads of one file
// from many processes, and a file read again is served from memory while
// nobody has changed it.
//
// What a reader sees (docs/posix.md, "Consistency of cached reads"):
//   - Writes through this mount: at once. A write, truncate or fallocate
//     here drops the range from the cache of the file's cached opens
//     (notify), and the next open reads the file afresh.
//   - Writes through another mount (another node): at its next open, which
//     asks the forwarder for the file's size and times and keeps the cached
//     pages only when they are unchanged and nothing was written here since
//     they were read; at once after it takes a lock (fcntl or flock) on the
//     file, which drops the file's pages; and, while the file stays open,
//     once the kernel revalidates its attributes (after Options.CacheTimeout)
//     and finds the modification time changed.
//
// Files open for writing (and every file with Options.DirectReads) use
// direct I/O: their reads and writes go to the forwarder as issued, and
// writes to one file from many processes run in parallel.

// version is what the forwarder reports of a file that tells whether its
// content may have changed.
type version struct {
	ino, size    int64
	mtime, ctime time.Time
}

func versionOf(fi client.FileInfo) version {
	return version{ino: int64(fi.Ino), size: fi.Size, mtime: fi.ModTime, ctime: fi.Ctime}
}

// cacheState is a file's page-cache bookkeeping on this mount.
type cacheState struct {
	mu     sync.Mutex
	opens  int     // cached (read-only, not direct) opens
	ver    version // the file's version when its cached pages were read
	valid  bool    // the cached pages, if any, are of ver and nothing wrote since
	notify bool    // a notification may be needed: cached pages may exist
}

// cachedRead reports whether an open with these flags reads through the
// page cache: read-only opens, unless Options.DirectReads.
func (n *node) cachedRead(flags uint32) bool {
	return !n.o.PageCache && !n.o.DirectReads && int(flags)&syscall.O_ACCMODE == syscall.O_RDONLY
}

// openCached is Open's close-to-open check for a cached open: it asks the
// forwarder for the file's version and returns FOPEN_KEEP_CACHE when the
// pages cached here are of that version; otherwise the kernel drops them
// as it opens the file, and the file's attributes are dropped too, so that
// its size is asked for again. The open is counted until closedCached.
func (n *node) openCached() (uint32, syscall.Errno) {
	n.wb.wait(n) // the size must count this mount's writes
	fi, err := n.c.Stat(n.rel(""))
	if err != nil {
		return 0, errno(err)
	}
	v := versionOf(fi)
	cs := &n.cache
	cs.mu.Lock()
	keep := cs.valid && cs.ver == v
	cs.ver, cs.valid, cs.notify = v, true, true
	cs.opens++
	cs.mu.Unlock()
	if !keep {
		n.dropPrefetched(-1, -1)
	}
	n.prefetchOpened(false, fi.Size)
	if keep {
		return fuse.FOPEN_KEEP_CACHE, 0
	}
	n.NotifyContent(-1, 0) // attributes only; the kernel drops the pages itself
	return 0, 0
}

// closedCached ends a cached open; the last one frees the file's
// prefetched blocks.
func (n *node) closedCached() {
	n.cache.mu.Lock()
	n.cache.opens--
	last := n.cache.opens == 0
	n.cache.mu.Unlock()
	if last {
		n.dropPrefetched(-1, -1)
	}
}

// changed records a change of the file's bytes [off, off+size) made through
// this mount (size < 0: to the end of the file): the next open reads the
// file afresh, and while cached opens exist the range is dropped from the
// page cache now. Call it once the change is registered (write-behind
// begun), so that a read filling the range again waits for it.
func (n *node) changed(off, size int64) {
	if size < 0 {
		n.dropPrefetched(off, -1)
	} else {
		n.dropPrefetched(off, off+size)
	}
	cs := &n.cache
	cs.mu.Lock()
	cs.valid = false
	drop := cs.opens > 0
	cs.mu.Unlock()
	if drop {
		if size < 0 {
			size = 0 // to the end
		}
		n.NotifyContent(off, size)
	}
}

// locked drops the file's cached pages and attributes once this mount holds
// a lock on it: what another node wrote before releasing the lock is read
// from the forwarder, as NFS revalidates a file at a lock.
func (n *node) locked() {
	cs := &n.cache
	cs.mu.Lock()
	cs.valid = false
	drop := cs.notify
	cs.mu.Unlock()
	n.dropPrefetched(-1, -1)
	if drop {
		n.NotifyContent(0, 0)
	}
}

// setReadahead sets the kernel's readahead for the mount at dir (the FUSE
// connection's backing device, /sys/class/bdi/MAJOR:MINOR/read_ahead_kb) to
// kib: the kernel offers FUSE 128 KiB, less than the requests the mount
// takes. Writing it needs root. The device is read from
// /proc/self/mountinfo, not with a stat of dir, which would cache the
// root's attributes (and hide, for their lifetime, a mount whose server
// died: cleanStale).
func setReadahead(dir string, kib int) error {
	dev, ok := mountField(dir, 2)
	if !ok {
		return fmt.Errorf("fusemount: %s not found in /proc/self/mountinfo", dir)
	}
	return os.WriteFile("/sys/class/bdi/"+dev+"/read_ahead_kb", []byte(fmt.Sprint(kib)), 0)
}
