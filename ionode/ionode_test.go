package ionode_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/ionode"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

// node returns a Node over a FIFO scheduler (one request per batch, in
// arrival order) of 4 data servers.
func node(t *testing.T, cfg ionode.Config) *ionode.Node {
	t.Helper()
	sw, err := sched.NewSwitcher("fifo", sched.Config{Servers: 4})
	if err != nil {
		t.Fatal(err)
	}
	return ionode.New(sw, cfg)
}

// req is request id on server q of file f at offset off (32 KiB).
func req(id uint64, q int, f uint64, off int64) sched.Request {
	return sched.Request{ID: id, Queue: q, File: f, Offset: off, Length: 32 << 10, Op: rw.Write}
}

// ids lists an access's request ids, e.g. "1+2".
func ids(a ionode.Access) string {
	var s []string
	for _, b := range a.Batches {
		for _, r := range b.Requests {
			s = append(s, fmt.Sprint(r.ID))
		}
	}
	return strings.Join(s, "+")
}

func add(t *testing.T, n *ionode.Node, rs ...sched.Request) {
	t.Helper()
	for _, r := range rs {
		if err := n.Add(0, r); err != nil {
			t.Fatal(err)
		}
	}
}

// next takes the next access and returns its ids ("" if none).
func next(t *testing.T, n *ionode.Node) (ionode.Access, string) {
	t.Helper()
	a, ok, _ := n.Next(0, nil)
	if !ok {
		return a, ""
	}
	return a, ids(a)
}

// Joining: batches released one after another that continue each other on
// one server (either direction) become one access, up to Aggregate
// requests; the first that does not is held and starts the next access,
// so the scheduler's order stands.
func TestJoin(t *testing.T) {
	const k = 32 << 10
	for _, tt := range []struct {
		name      string
		aggregate int
		reqs      []sched.Request
		want      []string
	}{
		{"contiguous after", 16, []sched.Request{req(1, 0, 1, 0), req(2, 0, 1, k), req(3, 0, 1, 2*k)}, []string{"1+2+3"}},
		{"contiguous before", 16, []sched.Request{req(1, 0, 1, 2*k), req(2, 0, 1, k), req(3, 0, 1, 0)}, []string{"1+2+3"}},
		{"other server breaks the run", 16, []sched.Request{req(1, 0, 1, 0), req(2, 1, 1, k), req(3, 0, 1, k)}, []string{"1", "2", "3"}},
		{"other file", 16, []sched.Request{req(1, 0, 1, 0), req(2, 0, 2, k)}, []string{"1", "2"}},
		{"gap", 16, []sched.Request{req(1, 0, 1, 0), req(2, 0, 1, 2*k)}, []string{"1", "2"}},
		{"aggregate limit", 2, []sched.Request{req(1, 0, 1, 0), req(2, 0, 1, k), req(3, 0, 1, 2*k), req(4, 0, 1, 3*k)}, []string{"1+2", "3+4"}},
		{"no aggregation", 0, []sched.Request{req(1, 0, 1, 0), req(2, 0, 1, k)}, []string{"1", "2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := node(t, ionode.Config{Aggregate: tt.aggregate})
			add(t, n, tt.reqs...)
			var got []string
			for {
				a, s := next(t, n)
				if s == "" {
					break
				}
				got = append(got, s)
				if err := n.Done(0, a, a.Length, 0); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("accesses %q, want %q", got, tt.want)
			}
			if n.Pending() {
				t.Fatal("requests left after the last access")
			}
		})
	}
}

// An access's span: the lowest offset and the summed length; Done credits
// each batch with the bytes of moved that fall in it.
func TestAccessSpanAndDone(t *testing.T) {
	const k = 32 << 10
	n := node(t, ionode.Config{Aggregate: 16})
	add(t, n, req(1, 2, 7, 3*k), req(2, 2, 7, 2*k))
	a, s := next(t, n)
	if s != "1+2" || a.Queue != 2 || a.File != 7 || a.Offset != 2*k || a.Length != 2*k || a.Requests != 2 {
		t.Fatalf("access %s %+v", s, a.Access)
	}
	// Short: only the first 40 KiB moved, all of request 2 and 8 KiB of 1.
	if err := n.Done(time.Millisecond, a, 40<<10, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	st := n.Scheduler().Stats()
	if st.Completed != 2 || st.BytesCompleted != 40<<10 {
		t.Fatalf("completed %d batches, %d bytes; want 2, %d", st.Completed, st.BytesCompleted, 40<<10)
	}
	if err := n.Done(time.Millisecond, a, 0, 0); err == nil {
		t.Fatal("a second Done of one access was accepted")
	}
}

func TestMoved(t *testing.T) {
	for _, tt := range []struct{ moved, rel, length, want int64 }{
		{100, 0, 50, 50}, {100, 50, 50, 50}, {100, 80, 50, 20}, {100, 100, 50, 0}, {100, 150, 50, 0}, {0, 0, 10, 0},
	} {
		if got := ionode.Moved(tt.moved, tt.rel, tt.length); got != tt.want {
			t.Errorf("Moved(%d, %d, %d) = %d, want %d", tt.moved, tt.rel, tt.length, got, tt.want)
		}
	}
}

// Hold, step by step: a batch of a file with an access in flight is held
// while other files' batches go; it goes first once its file is idle, or
// when nothing else is dispatchable; at most Hold are held, the oldest
// leaving first.
func TestHold(t *testing.T) {
	type step struct {
		do   string // "add" (id, file), "next" (want), "done" (id of an access taken before)
		id   uint64
		file uint64
		want string
	}
	for _, tt := range []struct {
		name  string
		hold  int
		steps []step
	}{
		{"idle files go at once", 4, []step{
			{"add", 1, 10, ""}, {"add", 2, 20, ""}, {"next", 0, 0, "1"}, {"next", 0, 0, "2"}, {"next", 0, 0, ""},
		}},
		{"busy file held, others overtake", 4, []step{
			{"add", 1, 10, ""}, {"next", 0, 0, "1"},
			{"add", 2, 10, ""}, {"add", 3, 10, ""}, {"add", 4, 20, ""}, {"add", 5, 10, ""},
			{"next", 0, 0, "4"}, {"done", 1, 0, ""}, {"next", 0, 0, "2"}, {"next", 0, 0, "3"},
		}},
		{"work-conserving when nothing else", 4, []step{
			{"add", 1, 10, ""}, {"next", 0, 0, "1"}, {"add", 2, 10, ""}, {"add", 3, 10, ""},
			{"next", 0, 0, "2"}, {"next", 0, 0, "3"}, {"next", 0, 0, ""},
		}},
		{"bound: the oldest leaves", 2, []step{
			{"add", 1, 10, ""}, {"next", 0, 0, "1"},
			{"add", 2, 10, ""}, {"add", 3, 10, ""}, {"add", 4, 10, ""}, {"add", 5, 20, ""},
			{"next", 0, 0, "2"}, {"next", 0, 0, "5"}, {"next", 0, 0, "3"}, {"next", 0, 0, "4"},
		}},
		{"ready keeps order among idle files", 4, []step{
			{"add", 1, 10, ""}, {"add", 2, 20, ""}, {"next", 0, 0, "1"}, {"next", 0, 0, "2"},
			{"add", 3, 20, ""}, {"add", 4, 10, ""}, {"add", 5, 20, ""}, {"add", 6, 30, ""},
			{"next", 0, 0, "6"}, {"done", 2, 0, ""}, {"next", 0, 0, "3"}, {"done", 1, 0, ""}, {"next", 0, 0, "4"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := node(t, ionode.Config{Hold: tt.hold})
			taken := map[uint64]ionode.Access{}
			for i, st := range tt.steps {
				switch st.do {
				case "add":
					// Far apart, so no two would join even with aggregation.
					add(t, n, req(st.id, int(st.id)%4, st.file, int64(st.id)<<30))
				case "next":
					a, got := next(t, n)
					if got != st.want {
						t.Fatalf("step %d: next %q, want %q", i, got, st.want)
					}
					if got != "" {
						taken[a.Batches[0].Requests[0].ID] = a
					}
				case "done":
					if err := n.Done(0, taken[st.id], 32<<10, 0); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
		})
	}
}

// A custom rule replaces the server rule; the Aggregate limit still holds.
func TestCustomContinues(t *testing.T) {
	const k = 32 << 10
	evenOnly := func(a ionode.Access, b sched.Batch) bool { return b.Requests[0].ID%2 == 0 }
	n := node(t, ionode.Config{Aggregate: 3, Continues: evenOnly})
	add(t, n, req(1, 0, 1, 0), req(2, 1, 2, 9*k), req(4, 3, 3, 20*k), req(6, 0, 1, k), req(7, 0, 1, 2*k))
	var got []string
	for {
		_, s := next(t, n)
		if s == "" {
			break
		}
		got = append(got, s)
	}
	if want := []string{"1+2+4", "6", "7"}; !slices.Equal(got, want) {
		t.Fatalf("accesses %q, want %q", got, want)
	}
}

// Under TWINS, Next passes on the scheduler's retry time, and an access
// taken at the end of a window does not join the next window's batch.
func TestRetryFromScheduler(t *testing.T) {
	sw, err := sched.NewSwitcher("twins", sched.Config{Servers: 2, Window: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := ionode.New(sw, ionode.Config{Aggregate: 16})
	if err := n.Add(0, req(1, 1, 1, 0)); err != nil { // server 1: not in the first window
		t.Fatal(err)
	}
	_, ok, retry := n.Next(0, nil)
	if ok || retry != time.Millisecond {
		t.Fatalf("Next in server 0's window = %v, retry %v; want none, retry at 1ms", ok, retry)
	}
	a, ok, _ := n.Next(time.Millisecond, nil)
	if !ok || ids(a) != "1" {
		t.Fatalf("Next in server 1's window: %v %q", ok, ids(a))
	}
}

// With PerServer 1, a data server with an access in flight gets no other
// until it ends: its batches wait, held, while other servers' go; they go
// as soon as its access is done.
func TestPerServerLimitHoldsAFullServersBatches(t *testing.T) {
	n := node(t, ionode.Config{PerServer: 1})
	for _, r := range []sched.Request{req(1, 0, 1, 0), req(2, 0, 2, 0), req(3, 0, 3, 0), req(4, 1, 4, 0)} {
		if err := n.Add(0, r); err != nil {
			t.Fatal(err)
		}
	}
	a, ok, _ := n.Next(0, nil)
	if !ok || ids(a) != "1" {
		t.Fatalf("first access %q (ok %v), want 1", ids(a), ok)
	}
	b, ok, _ := n.Next(0, nil)
	if !ok || ids(b) != "4" {
		t.Fatalf("second access %q (ok %v), want 4: server 0 is full, server 1 is not", ids(b), ok)
	}
	if _, ok, _ := n.Next(0, nil); ok {
		t.Fatal("a third access while server 0 is full and server 1 has nothing")
	}
	if n.Held() != 2 {
		t.Fatalf("%d batches held, want server 0's 2", n.Held())
	}
	if err := n.Done(1, a, a.Length, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c, ok, _ := n.Next(1, nil)
	if !ok || ids(c) != "2" {
		t.Fatalf("after server 0's access ended: %q (ok %v), want 2", ids(c), ok)
	}
	for _, tc := range []struct{ threads, servers, want int }{{4, 4, 3}, {128, 4, 96}, {16, 4, 12}, {8, 1, 0}, {1, 4, 0}, {3, 8, 2}} {
		if got := ionode.PerServerLimit(tc.threads, tc.servers); got != tc.want {
			t.Errorf("PerServerLimit(%d, %d) = %d, want %d", tc.threads, tc.servers, got, tc.want)
		}
	}
}
