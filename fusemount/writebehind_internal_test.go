package fusemount

import (
	"errors"
	"testing"
	"time"
)

// TestWriteBehindReportsFailureAtFlush: a background write's failure is
// returned by the next drain (close or fsync), and refuses later writes of
// the file until then; other files are not affected.
func TestWriteBehindReportsFailureAtFlush(t *testing.T) {
	w := newWriteBehind(1 << 20)
	a, b := &node{}, &node{}
	id, ok, err := w.begin(a, 0, 4096)
	if !ok || err != nil {
		t.Fatalf("begin: ok %v err %v", ok, err)
	}
	boom := errors.New("disk full")
	w.end(a, id, boom)
	if _, _, err := w.begin(a, 4096, 4096); !errors.Is(err, boom) {
		t.Fatalf("write after a failure: err %v, want %v", err, boom)
	}
	if _, ok, err := w.begin(b, 0, 4096); !ok || err != nil {
		t.Fatalf("another file: ok %v err %v", ok, err)
	}
	if err := w.drain(a); !errors.Is(err, boom) {
		t.Fatalf("drain: %v, want %v", err, boom)
	}
	if err := w.drain(a); err != nil {
		t.Fatalf("second drain: %v, want the failure reported once", err)
	}
}

// TestWriteBehindOrdersOverlaps: a write overlapping a pending one waits for
// it (the later bytes must land last), a disjoint one does not; a write
// larger than the budget goes through synchronously; the budget bounds the
// bytes in flight.
func TestWriteBehindOrdersOverlaps(t *testing.T) {
	w := newWriteBehind(8192)
	f := &node{}
	id1, ok, _ := w.begin(f, 0, 4096)
	if !ok {
		t.Fatal("first write not taken")
	}
	if _, ok, _ := w.begin(f, 4096, 4096); !ok {
		t.Fatal("disjoint write not taken")
	}
	if _, ok, _ := w.begin(f, 0, 1<<20); ok {
		t.Fatal("a write larger than the budget was taken")
	}
	got := make(chan struct{})
	go func() {
		w.begin(f, 2048, 1024) // overlaps id1, and the budget is full
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("overlapping write taken while the first is pending")
	case <-time.After(50 * time.Millisecond):
	}
	w.end(f, id1, nil)
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("overlapping write still waiting after the first ended")
	}
}
