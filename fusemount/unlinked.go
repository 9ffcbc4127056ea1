package fusemount

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// HiddenPrefix begins the names under which the mount keeps a file that was
// unlinked (or replaced by a rename) while open, the NFS client's
// "silly rename": the daemon and its backend address files by name, so the
// name is renamed to HiddenPrefix plus a name unique to the mount, in the
// same directory, and removed when the file's last descriptor on this mount
// is closed. Lookups and listings through the mount never show such names,
// and the mount refuses to create one (EPERM).
//
// If the mount dies with such files open (killed, its node lost), they stay
// on the backend, as .nfsXXXX files do on NFS: remove them on the backend (or
// through another client of the daemon), where no process still uses them.
const HiddenPrefix = ".adaptio-unlinked-"

// hiddenName reports whether name is one of the mount's hidden names.
func hiddenName(name string) bool { return strings.HasPrefix(name, HiddenPrefix) }

// hidden is a name a file is kept under after its own name was removed:
// name in directory dir.
type hidden struct {
	dir  *node
	name string
}

func (h hidden) path() string { return h.dir.rel(h.name) }

// unlinked is the mount's record of its open files and of those among
// them that lost their names. One mutex for the mount serialises opens and
// closes (a counter each), and the renames and removals of hidden names,
// which are rare: an unlink of an open file, its last close, a rmdir
// meeting hidden names.
type unlinked struct {
	root *node
	id   string // random, so that mounts of one export pick different names

	mu    sync.Mutex
	seq   uint64
	files map[string]*node // hidden name -> the file kept under it
}

func newUnlinked() *unlinked {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return &unlinked{id: hex.EncodeToString(b[:]), files: map[string]*node{}}
}

// opened counts an open of n; a failed open is undone with closed.
func (u *unlinked) opened(n *node) {
	u.mu.Lock()
	n.opens++
	u.mu.Unlock()
}

// closed counts a close of n (a FUSE release, or an open that failed); at
// the last one the names n is kept under are removed from the backend.
func (u *unlinked) closed(n *node) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if n.opens--; n.opens > 0 {
		return
	}
	hs := n.hiddenNames()
	for _, h := range hs {
		if err := n.c.Unlink(h.path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			n.o.Logger.Error("removing an unlinked file at its last close failed; it stays on the backend", "file", h.path(), "err", err)
		}
		delete(u.files, h.name)
	}
	if len(hs) > 0 {
		n.hid.Store(nil)
	}
}

// hide keeps ch, the file named name in directory dir, under a hidden name
// if it is open on this mount, before its name is removed (unlink) or
// replaced (rename over it): it renames name to the hidden name on the
// backend, where the daemon's handles of the file follow, and the file is
// addressed by it from then on. It returns the hidden name, or "" if ch is
// not open or the backend cannot rename (the emulated PFS: the name is then
// removed as it always was). ch may be nil (a name the kernel did not look
// up).
func (u *unlinked) hide(dir *node, name string, ch *node) (string, syscall.Errno) {
	if ch == nil {
		return "", 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if ch.opens == 0 {
		return "", 0
	}
	// The writes the mount acknowledged were sent for the old name: the
	// daemon must have them before the file is known by another.
	ch.wb.wait(ch)
	u.seq++
	h := hidden{dir: dir, name: fmt.Sprintf("%s%s-%d", HiddenPrefix, u.id, u.seq)}
	if err := dir.c.Rename(dir.rel(name), h.path()); err != nil {
		if e := errno(err); e != syscall.ENOTSUP {
			return "", e
		}
		return "", 0
	}
	u.files[h.name] = ch
	hs := append(slices.Clip(ch.hiddenNames()), h)
	ch.hid.Store(&hs)
	return h.name, 0
}

// unhide gives ch its name back after a rename that hid it (a rename over
// it) failed; best effort.
func (u *unlinked) unhide(dir *node, name string, ch *node, hname string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var keep []hidden
	for _, h := range ch.hiddenNames() {
		if h.name != hname {
			keep = append(keep, h)
			continue
		}
		if err := ch.c.Rename(h.path(), dir.rel(name)); err != nil {
			ch.o.Logger.Error("a file hidden for a rename over it keeps its hidden name", "file", h.path(), "err", err)
			return
		}
		delete(u.files, hname)
	}
	ch.hid.Store(&keep)
}

// evacuate moves the hidden names in directory p, all of them the mount's
// files still open (or being closed), to the export root, so that the
// directory, empty to its users, can be removed or replaced. It reports
// false, moving nothing, if the directory holds anything else (a visible
// name, or a hidden name of another mount or of a mount that died); true
// if it holds nothing any more (a release removed the last one since).
func (u *unlinked) evacuate(p string) bool {
	c := u.root.c
	u.mu.Lock()
	defer u.mu.Unlock()
	ents, err := c.ReadDir(p)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if u.files[e.Name] == nil {
			return false
		}
	}
	for _, e := range ents {
		n := u.files[e.Name]
		hs := n.hiddenNames()
		moved := make([]hidden, len(hs))
		for i, h := range hs {
			if h.name == e.Name {
				if err := c.Rename(h.path(), u.root.rel(h.name)); err != nil {
					return false
				}
				h.dir = u.root
			}
			moved[i] = h
		}
		n.hid.Store(&moved)
	}
	return true
}

// hiddenNames returns the names n is kept under (none: nil). The slice is
// never modified: changes store a new one.
func (n *node) hiddenNames() []hidden {
	if p := n.hid.Load(); p != nil {
		return *p
	}
	return nil
}
