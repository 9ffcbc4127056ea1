package locks_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/adaptio/adaptio/fwd/locks"
)

// cells is the naive model's file: bytes 0..14 one cell each, and cell 15
// standing for [15, EOF]. Generated ranges start below 15, so every range
// covers whole cells.
const cells = 16

// model is the naive reference: every owner's lock type on every cell.
type model map[locks.Owner]*[cells]locks.Type

func cellRange(l locks.Lock) (int, int) {
	if l.End == locks.EOF || l.End >= cells-1 {
		return int(l.Start), cells - 1
	}
	return int(l.Start), int(l.End)
}

func (m model) conflicts(l locks.Lock) bool {
	if l.Type == locks.Unlock {
		return false
	}
	s, e := cellRange(l)
	for o, c := range m {
		if o == l.Owner {
			continue
		}
		for i := s; i <= e; i++ {
			if c[i] == locks.Write || (c[i] == locks.Read && l.Type == locks.Write) {
				return true
			}
		}
	}
	return false
}

func (m model) set(l locks.Lock) {
	c := m[l.Owner]
	if c == nil {
		c = new([cells]locks.Type)
		m[l.Owner] = c
	}
	s, e := cellRange(l)
	for i := s; i <= e; i++ {
		c[i] = l.Type
	}
}

// fromTable rebuilds the per-cell view of the table's locks.
func fromTable(t *testing.T, ls []locks.Lock) model {
	m := model{}
	for _, l := range ls {
		c := m[l.Owner]
		if c == nil {
			c = new([cells]locks.Type)
			m[l.Owner] = c
		}
		s, e := cellRange(l)
		for i := s; i <= e; i++ {
			if c[i] != locks.Unlock {
				t.Fatalf("owner %v holds overlapping locks: %v", l.Owner, ls)
			}
			c[i] = l.Type
		}
	}
	return m
}

func (m model) equal(o model) bool {
	var zero [cells]locks.Type
	for own, c := range m {
		oc := o[own]
		if oc == nil {
			oc = &zero
		}
		if *c != *oc {
			return false
		}
	}
	for own, c := range o {
		if m[own] == nil && *c != zero {
			return false
		}
	}
	return true
}

var owners = []locks.Owner{{Session: 1, ID: 1}, {Session: 1, ID: 2}, {Session: 2, ID: 1}}

func genLock(t *rapid.T) locks.Lock {
	o := owners[rapid.IntRange(0, len(owners)-1).Draw(t, "owner")]
	typ := locks.Type(rapid.IntRange(0, 2).Draw(t, "type"))
	s := rapid.Int64Range(0, cells-2).Draw(t, "start")
	var e int64
	if rapid.Bool().Draw(t, "eof") {
		e = locks.EOF
	} else {
		e = rapid.Int64Range(s, cells-2).Draw(t, "end")
	}
	return locks.Lock{Owner: o, Type: typ, Start: s, End: e}
}

// TestTableMatchesReference drives the table and a per-byte reference with
// the same random locks, unlocks, releases and waits, and checks after
// every step that they agree on what was granted and on what each owner
// holds, that each owner's locks are disjoint and merged, and that
// Coverage and Grantable agree with the reference.
func TestTableMatchesReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb := locks.NewTable()
		k := locks.Key{File: 7, Kind: locks.POSIX}
		ref := model{}
		nextID := uint64(1)
		waiting := map[uint64]locks.Lock{}
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0: // an owner releases everything (close)
				o := owners[rapid.IntRange(0, len(owners)-1).Draw(rt, "owner")]
				tb.Release(k, o)
				ref.set(locks.Lock{Owner: o, Type: locks.Unlock, Start: 0, End: locks.EOF})
			case 1: // a session ends
				changed, dropped := tb.ReleaseSession(2)
				for _, w := range dropped {
					if w.Lock.Owner.Session != 2 {
						rt.Fatalf("dropped a waiter of another session: %+v", w)
					}
					delete(waiting, w.ID)
				}
				had := ref[owners[2]] != nil && *ref[owners[2]] != [cells]locks.Type{}
				if had != (len(changed) == 1) {
					rt.Fatalf("ReleaseSession changed %v, reference held locks: %v", changed, had)
				}
				delete(ref, owners[2])
			case 2: // a wait
				l := genLock(rt)
				if l.Type == locks.Unlock {
					l.Type = locks.Write
				}
				tb.Wait(k, nextID, l)
				waiting[nextID] = l
				nextID++
			default:
				l := genLock(rt)
				want := !ref.conflicts(l)
				c, ok := tb.Set(k, l)
				if ok != want {
					rt.Fatalf("Set(%+v) granted %v, reference %v; table %+v", l, ok, want, tb.Locks(k))
				}
				if ok {
					ref.set(l)
				} else if c.Owner == l.Owner || c.Start > l.End || l.Start > c.End || (c.Type != locks.Write && l.Type != locks.Write) {
					rt.Fatalf("Set(%+v) refused for %+v, which does not conflict", l, c)
				}
			}
			got := tb.Locks(k)
			if !fromTable(t, got).equal(ref) {
				rt.Fatalf("table %+v differs from the reference", got)
			}
			// Each owner's locks are merged: no two of one type touch.
			for i, a := range got {
				for _, b := range got[i+1:] {
					if a.Owner == b.Owner && a.Type == b.Type && (a.End != locks.EOF && a.End+1 == b.Start || b.End != locks.EOF && b.End+1 == a.Start) {
						rt.Fatalf("unmerged locks %+v and %+v", a, b)
					}
				}
			}
			// Coverage: the strongest type per cell.
			cov := tb.Coverage(k, 0, locks.EOF)
			if cov[0].Start != 0 || cov[len(cov)-1].End != locks.EOF {
				rt.Fatalf("coverage %+v does not span the file", cov)
			}
			for i := 0; i < cells; i++ {
				want := locks.Unlock
				for _, c := range ref {
					want = max(want, c[i])
				}
				j := slices.IndexFunc(cov, func(s locks.Segment) bool { return s.Start <= int64(i) && int64(i) <= s.End })
				if cov[j].Type != want {
					rt.Fatalf("coverage of byte %d is %v, want %v (%+v)", i, cov[j].Type, want, cov)
				}
			}
			// Grantable: exactly the waiters the reference would grant.
			g := map[uint64]bool{}
			for _, w := range tb.Grantable(k) {
				g[w.ID] = true
			}
			for id, l := range waiting {
				if g[id] == ref.conflicts(l) {
					rt.Fatalf("waiter %d (%+v) grantable %v, reference conflicts %v", id, l, g[id], ref.conflicts(l))
				}
			}
		}
	})
}

func TestSplitAndUpgrade(t *testing.T) {
	tb := locks.NewTable()
	k := locks.Key{File: 1, Kind: locks.POSIX}
	a, b := locks.Owner{Session: 1, ID: 1}, locks.Owner{Session: 2, ID: 1}
	if _, ok := tb.Set(k, locks.Lock{Owner: a, Type: locks.Read, Start: 0, End: locks.EOF}); !ok {
		t.Fatal("first lock refused")
	}
	// Upgrade the middle to write: three locks.
	if _, ok := tb.Set(k, locks.Lock{Owner: a, Type: locks.Write, Start: 10, End: 19}); !ok {
		t.Fatal("upgrade refused")
	}
	want := []locks.Lock{
		{Owner: a, Type: locks.Read, Start: 0, End: 9},
		{Owner: a, Type: locks.Write, Start: 10, End: 19},
		{Owner: a, Type: locks.Read, Start: 20, End: locks.EOF},
	}
	if got := tb.Locks(k); !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Another owner: reads beside the write pass, across it conflict.
	if _, ok := tb.Set(k, locks.Lock{Owner: b, Type: locks.Read, Start: 0, End: 9}); !ok {
		t.Fatal("shared read refused")
	}
	if c, ok := tb.Set(k, locks.Lock{Owner: b, Type: locks.Read, Start: 5, End: 15}); ok || c.Type != locks.Write || c.Start != 10 {
		t.Fatalf("read over a write: ok %v, conflict %+v", ok, c)
	}
	// Downgrade back: one read lock again.
	tb.Set(k, locks.Lock{Owner: a, Type: locks.Read, Start: 10, End: 19})
	if got := tb.Locks(k); len(got) != 2 || got[0].Owner != a || got[0].End != locks.EOF {
		t.Fatalf("after downgrade: %+v", got)
	}
	if !tb.Release(k, a) || tb.Held(k, a) {
		t.Fatal("release")
	}
}
