package ionode_test

import (
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/ionode"
)

// Lowering the aggregation limit applies from the next access: the one
// taken before keeps its requests.
func TestSetAggregateAppliesToTheNextAccess(t *testing.T) {
	const k = 32 << 10
	n := node(t, ionode.Config{Aggregate: 16})
	add(t, n, req(1, 0, 1, 0), req(2, 0, 1, k), req(3, 0, 1, 2*k), req(4, 0, 1, 3*k), req(5, 0, 1, 4*k), req(6, 0, 1, 5*k))
	n.SetAggregate(2)
	var got []string
	for {
		_, s := next(t, n)
		if s == "" {
			break
		}
		got = append(got, s)
		if len(got) == 2 {
			n.SetAggregate(0) // counts as 1
		}
	}
	if want := []string{"1+2", "3+4", "5", "6"}; !slices.Equal(got, want) {
		t.Fatalf("accesses %q, want %q", got, want)
	}
	if n.Aggregate() != 1 {
		t.Errorf("Aggregate() = %d after SetAggregate(0), want 1", n.Aggregate())
	}
}

// A per-server limit turned on while accesses are in flight counts them:
// the server's next batch waits until one ends. Raising the limit lets the
// held batches go at once, oldest first.
func TestSetPerServerCountsAccessesAlreadyInFlight(t *testing.T) {
	n := node(t, ionode.Config{})
	add(t, n, req(1, 0, 1, 0), req(2, 0, 2, 0), req(3, 0, 3, 0), req(4, 0, 4, 0))
	a1, s1 := next(t, n)
	_, s2 := next(t, n)
	if s1 != "1" || s2 != "2" {
		t.Fatalf("accesses %q, %q without a limit, want 1, 2", s1, s2)
	}
	n.SetPerServer(2)
	if n.PerServer() != 2 {
		t.Fatalf("PerServer() = %d, want 2", n.PerServer())
	}
	if _, s := next(t, n); s != "" {
		t.Fatalf("access %q with 2 in flight under a limit of 2", s)
	}
	if err := n.Done(1, a1, a1.Length, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, s := next(t, n); s != "3" {
		t.Fatalf("after one ended: %q, want 3", s)
	}
	if _, s := next(t, n); s != "" {
		t.Fatalf("access %q beyond the limit", s)
	}
	n.SetPerServer(0)
	if _, s := next(t, n); s != "4" {
		t.Fatalf("with the limit lifted: %q, want 4", s)
	}
}

// Queued counts the requests added and not yet dispatched, held ones
// included, and their bytes.
func TestQueued(t *testing.T) {
	const k = 32 << 10
	n := node(t, ionode.Config{Aggregate: 2, PerServer: 1})
	add(t, n, req(1, 0, 1, 0), req(2, 0, 1, k), req(3, 0, 1, 2*k), req(4, 1, 2, 0))
	check := func(when string, reqs int, bytes int64) {
		t.Helper()
		if r, b := n.Queued(); r != reqs || b != bytes {
			t.Fatalf("%s: Queued() = %d requests, %d bytes; want %d, %d", when, r, b, reqs, bytes)
		}
	}
	check("added", 4, 4*k)
	next(t, n) // 1+2
	check("after 1+2", 2, 2*k)
	next(t, n) // 3 is held (server 0 full), 4 goes
	check("after 4", 1, k)
	if n.Held() != 1 {
		t.Fatalf("%d held, want 1", n.Held())
	}
}
