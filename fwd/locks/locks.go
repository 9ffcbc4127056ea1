package locks

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Kind says which family a lock belongs to. As on a local Linux file
// system, POSIX record locks and flock locks live side by side and never
// conflict with each other.
type Kind uint8

// Lock kinds.
const (
	POSIX Kind = 1 // fcntl record locks: per process, byte ranges
	Flock Kind = 2 // flock(2): per open file, the whole file
)

// Type is a lock's mode.
type Type uint8

// Lock types, as fcntl's F_UNLCK, F_RDLCK and F_WRLCK.
const (
	Unlock Type = 0
	Read   Type = 1 // shared
	Write  Type = 2 // exclusive
)

func (t Type) String() string {
	switch t {
	case Unlock:
		return "unlock"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// EOF is the End of a lock that reaches to the end of the file and past
// it, whatever the file's size (fcntl's l_len 0).
const EOF int64 = math.MaxInt64

// Owner holds locks: a client session of the forwarder (one connection)
// and the owner the client names within it (a process for POSIX locks, an
// open file for flock). Locks of one owner never conflict with each other.
type Owner struct {
	Session uint64
	ID      uint64
}

// Lock is a lock held, or asked for, on the bytes [Start, End] of a file
// (End inclusive; EOF: to the end of the file).
type Lock struct {
	Owner Owner
	Type  Type
	Start int64
	End   int64
	PID   uint32 // the process that set it, as the client reported it (F_GETLK shows it)
}

// Key names one lock space: a file of the forwarder and a kind of lock.
type Key struct {
	File uint64
	Kind Kind
}

// Waiter is a request waiting for its lock (F_SETLKW).
type Waiter struct {
	ID   uint64 // chosen by the caller, unique in the Table
	Key  Key
	Lock Lock
}

// Segment is a range of a file and the strongest lock any owner holds on
// it (Unlock: none).
type Segment struct {
	Start, End int64 // End inclusive
	Type       Type
}

// ErrInvalid is a lock whose range or type is malformed.
var ErrInvalid = errors.New("locks: invalid lock")

// Check validates l: a type among Unlock, Read and Write, and
// 0 <= Start <= End.
func Check(l Lock) error {
	switch {
	case l.Type > Write:
		return fmt.Errorf("%w: type %d", ErrInvalid, l.Type)
	case l.Start < 0 || l.End < l.Start:
		return fmt.Errorf("%w: range [%d, %d]", ErrInvalid, l.Start, l.End)
	}
	return nil
}

// Table holds the locks and waiters of every file. Not safe for concurrent
// use; the zero value is not usable (NewTable).
type Table struct {
	files   map[Key][]Lock   // per key, sorted by (Start, Owner)
	waiters map[Key][]Waiter // per key, in arrival order
	byID    map[uint64]Key
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{files: map[Key][]Lock{}, waiters: map[Key][]Waiter{}, byID: map[uint64]Key{}}
}

func overlaps(a, b Lock) bool { return a.Start <= b.End && b.Start <= a.End }

func conflicts(held, want Lock) bool {
	return held.Owner != want.Owner && overlaps(held, want) && (held.Type == Write || want.Type == Write)
}

// Test returns the first lock (by start, then owner) of another owner that
// keeps want from being granted; ok is false when there is none (an
// Unlock never conflicts).
func (t *Table) Test(k Key, want Lock) (Lock, bool) {
	if want.Type == Unlock {
		return Lock{}, false
	}
	for _, h := range t.files[k] {
		if conflicts(h, want) {
			return h, true
		}
	}
	return Lock{}, false
}

// Set applies l for its owner as fcntl F_SETLK does: the owner's locks
// on l's range are replaced (split where they extend beyond it, so a lock
// is upgraded, downgraded or released in part), l is added unless it is an
// Unlock, and the owner's adjacent or overlapping locks of one type merge.
// If another owner's lock conflicts, nothing changes and Set returns it
// with ok false. l must pass Check (Set panics otherwise).
func (t *Table) Set(k Key, l Lock) (conflict Lock, ok bool) {
	if err := Check(l); err != nil {
		panic(err)
	}
	if c, bad := t.Test(k, l); bad {
		return c, false
	}
	old := t.files[k]
	next := make([]Lock, 0, len(old)+2)
	var mine []Lock
	for _, h := range old {
		if h.Owner != l.Owner {
			next = append(next, h)
			continue
		}
		if !overlaps(h, l) {
			mine = append(mine, h)
			continue
		}
		if h.Start < l.Start {
			p := h
			p.End = l.Start - 1
			mine = append(mine, p)
		}
		if h.End > l.End {
			p := h
			p.Start = l.End + 1
			mine = append(mine, p)
		}
	}
	if l.Type != Unlock {
		mine = append(mine, l)
	}
	next = append(next, merge(mine)...)
	sortLocks(next)
	if len(next) == 0 {
		delete(t.files, k)
	} else {
		t.files[k] = next
	}
	return Lock{}, true
}

// merge joins one owner's non-overlapping locks that touch and have one
// type.
func merge(ls []Lock) []Lock {
	slices.SortFunc(ls, func(a, b Lock) int { return cmp.Compare(a.Start, b.Start) })
	out := ls[:0]
	for _, l := range ls {
		if n := len(out); n > 0 && out[n-1].Type == l.Type && out[n-1].End != EOF && out[n-1].End+1 >= l.Start {
			out[n-1].End = max(out[n-1].End, l.End)
			out[n-1].PID = l.PID
			continue
		}
		out = append(out, l)
	}
	return out
}

func sortLocks(ls []Lock) {
	slices.SortFunc(ls, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Owner.Session, b.Owner.Session), cmp.Compare(a.Owner.ID, b.Owner.ID))
	})
}

// Locks returns a copy of the locks held on k, by start then owner.
func (t *Table) Locks(k Key) []Lock { return slices.Clone(t.files[k]) }

// Restore replaces the locks held on k with ls (a copy Locks returned):
// the caller undoes a Set its backend could not follow.
func (t *Table) Restore(k Key, ls []Lock) {
	if len(ls) == 0 {
		delete(t.files, k)
		return
	}
	t.files[k] = slices.Clone(ls)
}

// Held reports whether owner holds any lock on k.
func (t *Table) Held(k Key, o Owner) bool {
	for _, h := range t.files[k] {
		if h.Owner == o {
			return true
		}
	}
	return false
}

// Release drops every lock owner holds on k (a process closed the file,
// or an open file was released) and reports whether it held any.
func (t *Table) Release(k Key, o Owner) bool {
	if !t.Held(k, o) {
		return false
	}
	t.Set(k, Lock{Owner: o, Type: Unlock, Start: 0, End: EOF})
	return true
}

// ReleaseFile drops every lock the owners of session hold on k (the
// session closed its last handle of the file) and reports whether it held
// any.
func (t *Table) ReleaseFile(k Key, session uint64) bool {
	ls := t.files[k]
	kept := slices.DeleteFunc(slices.Clone(ls), func(l Lock) bool { return l.Owner.Session == session })
	if len(kept) == len(ls) {
		return false
	}
	t.Restore(k, kept)
	return true
}

// Coverage returns [start, end] of k cut into segments, each with the
// strongest type any owner holds there (Unlock where nobody does), in
// order and covering the range exactly; adjacent segments differ in type.
// A backend mirroring the table sets each segment's type on its range.
func (t *Table) Coverage(k Key, start, end int64) []Segment {
	held := t.files[k]
	// Boundaries: start, and every lock edge inside (start, end].
	cuts := []int64{start}
	for _, h := range held {
		if h.Start > start && h.Start <= end {
			cuts = append(cuts, h.Start)
		}
		if h.End != EOF && h.End+1 > start && h.End+1 <= end {
			cuts = append(cuts, h.End+1)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var out []Segment
	for i, s := range cuts {
		e := end
		if i+1 < len(cuts) {
			e = cuts[i+1] - 1
		}
		typ := Unlock
		for _, h := range held {
			if h.Start <= s && s <= h.End {
				typ = max(typ, h.Type)
			}
		}
		if n := len(out); n > 0 && out[n-1].Type == typ {
			out[n-1].End = e
			continue
		}
		out = append(out, Segment{Start: s, End: e, Type: typ})
	}
	return out
}

// Wait queues a request for l on k under id (unique among the waiters).
func (t *Table) Wait(k Key, id uint64, l Lock) {
	t.waiters[k] = append(t.waiters[k], Waiter{ID: id, Key: k, Lock: l})
	t.byID[id] = k
}

// Remove takes waiter id off its queue (granted, cancelled or given up)
// and returns it; ok is false if it is not waiting.
func (t *Table) Remove(id uint64) (Waiter, bool) {
	k, ok := t.byID[id]
	if !ok {
		return Waiter{}, false
	}
	delete(t.byID, id)
	ws := t.waiters[k]
	i := slices.IndexFunc(ws, func(w Waiter) bool { return w.ID == id })
	w := ws[i]
	ws = slices.Delete(ws, i, i+1)
	if len(ws) == 0 {
		delete(t.waiters, k)
	} else {
		t.waiters[k] = ws
	}
	return w, true
}

// Waiting returns the waiters of session, in order of key then arrival.
func (t *Table) Waiting(session uint64) []Waiter {
	var out []Waiter
	for _, k := range t.keys(t.waiters) {
		for _, w := range t.waiters[k] {
			if w.Lock.Owner.Session == session {
				out = append(out, w)
			}
		}
	}
	return out
}

// Grantable returns, in arrival order, the waiters of k whose lock no
// held lock conflicts with now. Two of them may conflict with each other:
// the caller Sets them in order, each Set checking again, and Removes those
// granted.
func (t *Table) Grantable(k Key) []Waiter {
	var out []Waiter
	for _, w := range t.waiters[k] {
		if _, bad := t.Test(k, w.Lock); !bad {
			out = append(out, w)
		}
	}
	return out
}

// ReleaseSession drops every lock and waiter of session (its connection
// ended). It returns the keys whose locks changed, sorted, and the waiters
// removed, for the caller to answer.
func (t *Table) ReleaseSession(session uint64) (changed []Key, dropped []Waiter) {
	for _, k := range t.keys(t.files) {
		ls := t.files[k]
		kept := slices.DeleteFunc(slices.Clone(ls), func(l Lock) bool { return l.Owner.Session == session })
		if len(kept) != len(ls) {
			changed = append(changed, k)
			t.Restore(k, kept)
		}
	}
	dropped = t.Waiting(session)
	for _, w := range dropped {
		t.Remove(w.ID)
	}
	return changed, dropped
}

// Files returns the keys with locks held, sorted.
func (t *Table) Files() []Key { return t.keys(t.files) }

func (t *Table) keys(m any) []Key {
	var ks []Key
	switch m := m.(type) {
	case map[Key][]Lock:
		for k := range m {
			ks = append(ks, k)
		}
	case map[Key][]Waiter:
		for k := range m {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b Key) int { return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Kind, b.Kind)) })
	return ks
}
