package sched

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
)

func TestAddErrors(t *testing.T) {
	ok := Request{ID: 1, Queue: 0, File: 1, Offset: 0, Length: 10, Op: rw.Read}
	tests := []struct {
		name string
		mod  func(r *Request)
		want error
	}{
		{"zero length", func(r *Request) { r.Length = 0 }, ErrBadLength},
		{"negative length", func(r *Request) { r.Length = -5 }, ErrBadLength},
		{"negative offset", func(r *Request) { r.Offset = -1 }, ErrBadOffset},
		{"huge end", func(r *Request) { r.Offset = 1 << 62 }, ErrBadOffset},
		{"negative queue", func(r *Request) { r.Queue = -1 }, ErrBadQueue},
		{"queue beyond servers", func(r *Request) { r.Queue = 4 }, ErrBadQueue},
		{"zero op", func(r *Request) { r.Op = 0 }, rw.ErrBadOp},
		{"unknown op", func(r *Request) { r.Op = 7 }, rw.ErrBadOp},
		{"duplicate id", func(r *Request) { r.ID = 100 }, ErrDuplicateID},
	}
	for _, name := range Names() {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				s, err := New(name, Config{Servers: 4})
				if err != nil {
					t.Fatal(err)
				}
				first := ok
				first.ID = 100
				if err := s.Add(0, first); err != nil {
					t.Fatalf("valid request: %v", err)
				}
				r := ok
				tt.mod(&r)
				err = s.Add(0, r)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Add: got %v, want %v", err, tt.want)
				}
				if s.Len() != 1 {
					t.Fatalf("Len after rejected Add: got %d, want 1", s.Len())
				}
			})
		}
	}
}

func TestCompleteUnknownBatch(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s, _ := New(name, Config{Servers: 2})
			if err := s.Complete(0, 12345, 0, 0); !errors.Is(err, ErrUnknownBatch) {
				t.Fatalf("unknown id: got %v, want ErrUnknownBatch", err)
			}
			if err := s.Add(0, Request{ID: 1, Length: 4, Op: rw.Write}); err != nil {
				t.Fatal(err)
			}
			b, ok, _ := nextWithin(s, 0, time.Second)
			if !ok {
				t.Fatal("no batch")
			}
			if err := s.Complete(1, b.ID, b.Length, 1); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if err := s.Complete(2, b.ID, b.Length, 1); !errors.Is(err, ErrUnknownBatch) {
				t.Fatalf("second Complete: got %v, want ErrUnknownBatch", err)
			}
		})
	}
}

// nextWithin calls Next, following retryAt up to limit after now.
func nextWithin(s Scheduler, now, limit time.Duration) (Batch, bool, time.Duration) {
	end := now + limit
	for {
		b, ok, retry := s.Next(now)
		if ok || retry == 0 || retry <= now || retry > end {
			return b, ok, now
		}
		now = retry
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New("nope", Config{Servers: 1}); !errors.Is(err, ErrUnknownAlgo) {
		t.Fatalf("unknown algorithm: got %v", err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"no servers", Config{}},
		{"negative node", Config{Servers: 2, Node: -1}},
		{"node beyond nodes", Config{Servers: 2, Node: 3, Nodes: 2}},
		{"negative window", Config{Servers: 2, Window: -1}},
		{"negative max aggregate", Config{Servers: 2, MaxAggregate: -1}},
		{"negative max batch", Config{Servers: 2, MaxBatch: -1}},
		{"negative quantum", Config{Servers: 2, Quantum: -3}},
		{"negative timeslice", Config{Servers: 2, Timeslice: -1}},
		{"negative SW window", Config{Servers: 2, SWWindow: -1}},
		{"one weight for two servers", Config{Servers: 2, Weights: []float64{1}}},
		{"zero weight", Config{Servers: 2, Weights: []float64{1, 0}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New("fifo", tt.cfg); !errors.Is(err, ErrBadConfig) {
				t.Errorf("New(fifo, %+v): got %v, want ErrBadConfig", tt.cfg, err)
			}
		})
	}
}

func TestStats(t *testing.T) {
	s, _ := New("fifo", Config{Servers: 1})
	ms := time.Millisecond
	for i := range 3 {
		if err := s.Add(time.Duration(i)*ms, Request{ID: uint64(i), Length: 100, Op: rw.Read}); err != nil {
			t.Fatal(err)
		}
	}
	// Dispatch two at 4ms (waits 4ms, 3ms), complete them at 5ms and 7ms;
	// dispatch the third at 10ms (wait 8ms), complete at 11ms.
	b1, _, _ := s.Next(4 * ms)
	b2, _, _ := s.Next(4 * ms)
	if err := s.Complete(5*ms, b1.ID, 100, ms); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(7*ms, b2.ID, 100, 3*ms); err != nil {
		t.Fatal(err)
	}
	b3, _, _ := s.Next(10 * ms)
	if err := s.Complete(11*ms, b3.ID, 50, ms); err != nil {
		t.Fatal(err)
	}
	st, ok := StatsOf(s)
	if !ok {
		t.Fatal("fifo does not report statistics")
	}
	want := Stats{Added: 3, Dispatched: 3, Batches: 3, Completed: 3, BytesCompleted: 250,
		Busy: 4 * ms, Service: 5 * ms, WaitTotal: 15 * ms}
	if st != want {
		t.Fatalf("stats:\n got %+v\nwant %+v", st, want)
	}
	if st.MeanWait() != 5*ms || st.MeanBatchSize() != 1 {
		t.Fatalf("MeanWait %v, MeanBatchSize %v; want 5ms, 1", st.MeanWait(), st.MeanBatchSize())
	}
	if (Stats{}).MeanWait() != 0 || (Stats{}).MeanBatchSize() != 0 {
		t.Fatal("empty stats means are not zero")
	}
}

// TestBatchBufferReuse: a batch's Requests stay intact until Complete, and
// completed slots are reused without allocating.
func TestBatchBufferReuse(t *testing.T) {
	s, _ := New("hbrr", Config{Servers: 1})
	for i := range 4 {
		s.Add(0, Request{ID: uint64(i), File: 1, Offset: int64(i) * 10, Length: 10, Op: rw.Write})
	}
	b, _, _ := s.Next(0)
	if len(b.Requests) != 4 {
		t.Fatalf("batch of %d, want 4 merged", len(b.Requests))
	}
	keep := append([]Request(nil), b.Requests...)
	s.Add(1, Request{ID: 9, File: 2, Length: 10, Op: rw.Write})
	if b2, ok, _ := s.Next(1); !ok || b2.Requests[0].ID != 9 {
		t.Fatalf("second batch: %+v", b2)
	}
	if !slices.Equal(b.Requests, keep) {
		t.Fatalf("in-flight batch changed before Complete: %+v", b.Requests)
	}
	allocs := testing.AllocsPerRun(100, func() {
		s.Complete(2, b.ID, 40, 1)
		for i := range 4 {
			s.Add(2, Request{ID: uint64(100 + i), File: 1, Offset: int64(i) * 10, Length: 10, Op: rw.Write})
		}
		b, _, _ = s.Next(2)
	})
	if allocs != 0 {
		t.Fatalf("steady add/next/complete allocates %v times", allocs)
	}
}

func TestWindowLabel(t *testing.T) {
	for _, tt := range []struct {
		w    time.Duration
		want string
	}{
		{125 * time.Microsecond, "125µs"},
		{1500 * time.Nanosecond, "1.5µs"},
		{0, "0µs"},
		{time.Millisecond, "1ms"},
		{1500 * time.Microsecond, "1.5ms"},
		{8 * time.Millisecond, "8ms"},
		{2 * time.Second, "2000ms"},
	} {
		if got := WindowLabel(tt.w); got != tt.want {
			t.Errorf("WindowLabel(%v) = %q, want %q", tt.w, got, tt.want)
		}
	}
}
