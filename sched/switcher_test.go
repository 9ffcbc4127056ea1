package sched

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/rw"
	"pgregory.net/rapid"
)

// TestSwitcherPairs switches between every pair of algorithms with requests
// queued and batches in flight, and checks that every request is dispatched
// exactly once and that old batches still complete.
func TestSwitcherPairs(t *testing.T) {
	stream := Stream(StreamConfig{Requests: 120, Files: 6, Servers: 3, Size: 4096, Stripe: 16384, Seed: 3})
	for _, from := range Names() {
		for _, to := range Names() {
			t.Run(from+"->"+to, func(t *testing.T) {
				sw, err := NewSwitcher(from, Config{Servers: 3, Window: 100 * time.Microsecond})
				if err != nil {
					t.Fatal(err)
				}
				now := time.Duration(0)
				seen := map[uint64]int{}
				for _, r := range stream[:60] {
					now += time.Microsecond
					if err := sw.Add(now, r); err != nil {
						t.Fatal(err)
					}
				}
				var old []Batch
				for range 20 { // dispatch some, keep them in flight
					b, ok, retry := sw.Next(now)
					if !ok {
						if retry == 0 {
							break
						}
						now = retry
						continue
					}
					for _, r := range b.Requests {
						seen[r.ID]++
					}
					old = append(old, Batch{ID: b.ID, Length: b.Length})
				}
				queued, inflight := sw.Len(), sw.InFlight()
				var order []uint64 // arrival order of what is still queued
				for _, r := range stream[:60] {
					if seen[r.ID] == 0 {
						order = append(order, r.ID)
					}
				}
				if err := sw.Switch(now, to); err != nil {
					t.Fatal(err)
				}
				if sw.Name() != to || sw.Len() != queued || sw.InFlight() != inflight {
					t.Fatalf("after Switch: %s Len %d InFlight %d, want %s %d %d", sw.Name(), sw.Len(), sw.InFlight(), to, queued, inflight)
				}
				// An id queued, or in flight under the old algorithm, is refused.
				if err := sw.Add(now, stream[0]); !errors.Is(err, ErrDuplicateID) {
					t.Fatalf("re-adding id %d (dispatched %d times): got %v, want ErrDuplicateID", stream[0].ID, seen[stream[0].ID], err)
				}
				var after []uint64
				for _, r := range stream[60:] {
					now += time.Microsecond
					if err := sw.Add(now, r); err != nil {
						t.Fatal(err)
					}
				}
				for _, b := range old {
					if err := sw.Complete(now, b.ID, b.Length, time.Microsecond); err != nil {
						t.Fatalf("completing a batch of %s after the switch: %v", from, err)
					}
				}
				d := &Driver{S: recordingScheduler{sw, func(b Batch) {
					for _, r := range b.Requests {
						seen[r.ID]++
						after = append(after, r.ID)
					}
				}}, Now: now}
				if err := d.Drain(); err != nil {
					t.Fatal(err)
				}
				for _, r := range stream {
					if seen[r.ID] != 1 {
						t.Fatalf("request %d dispatched %d times", r.ID, seen[r.ID])
					}
				}
				if to == "fifo" && !slices.Equal(after[:len(order)], order) {
					t.Fatalf("fifo after the switch dispatched %v, want arrival order %v", after[:len(order)], order)
				}
				if len(old) > 0 {
					if err := sw.Complete(d.Now, old[0].ID, 0, 0); !errors.Is(err, ErrUnknownBatch) {
						t.Fatalf("completing twice: got %v, want ErrUnknownBatch", err)
					}
				}
				if sw.InFlight() != 0 {
					t.Fatalf("InFlight %d after draining", sw.InFlight())
				}
			})
		}
	}
}

// recordingScheduler reports every batch Next hands out.
type recordingScheduler struct {
	*Switcher
	on func(Batch)
}

func (r recordingScheduler) Next(now time.Duration) (Batch, bool, time.Duration) {
	b, ok, retry := r.Switcher.Next(now)
	if ok {
		r.on(b)
	}
	return b, ok, retry
}

// TestSwitcherChain switches through random algorithms while batches of
// several earlier ones are in flight, completing them in random order.
func TestSwitcherChain(t *testing.T) {
	names := Names()
	rapid.Check(t, func(t *rapid.T) {
		sw, err := NewSwitcher(rapid.SampledFrom(names).Draw(t, "first"), Config{Servers: 2})
		if err != nil {
			t.Fatal(err)
		}
		var now time.Duration
		var flight []Batch
		added, done := 0, 0
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			now += time.Duration(rapid.IntRange(0, 500).Draw(t, "us")) * time.Microsecond
			switch rapid.IntRange(0, 4).Draw(t, "action") {
			case 0, 1:
				added++
				r := Request{ID: uint64(added), Queue: rapid.IntRange(0, 1).Draw(t, "q"), File: 1,
					Offset: int64(added) * 10, Length: 10, Op: rw.Read}
				if err := sw.Add(now, r); err != nil {
					t.Fatal(err)
				}
			case 2:
				if b, ok, _ := sw.Next(now); ok {
					done += len(b.Requests)
					flight = append(flight, Batch{ID: b.ID})
				}
			case 3:
				if len(flight) > 0 {
					i := rapid.IntRange(0, len(flight)-1).Draw(t, "which")
					if err := sw.Complete(now, flight[i].ID, 1, 1); err != nil {
						t.Fatal(err)
					}
					flight = slices.Delete(flight, i, i+1)
				}
			case 4:
				q := sw.Len()
				if err := sw.Switch(now, rapid.SampledFrom(names).Draw(t, "to")); err != nil {
					t.Fatal(err)
				}
				if sw.Len() != q {
					t.Fatalf("Switch changed Len from %d to %d", q, sw.Len())
				}
			}
			if sw.InFlight() != len(flight) {
				t.Fatalf("InFlight %d, want %d", sw.InFlight(), len(flight))
			}
		}
		for _, b := range flight {
			if err := sw.Complete(now, b.ID, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		d := &Driver{S: sw, Now: now}
		if err := d.Drain(); err != nil {
			t.Fatal(err)
		}
		if done+d.Dispatched != added {
			t.Fatalf("dispatched %d + %d, added %d", done, d.Dispatched, added)
		}
		var tot Stats
		for _, a := range sw.Totals() {
			tot = addStats(tot, a.Stats)
		}
		if tot.Dispatched != uint64(added) || tot.Completed != tot.Batches {
			t.Fatalf("totals %+v, want %d dispatched and every batch completed", tot, added)
		}
	})
}

func TestSwitcherErrors(t *testing.T) {
	sw, err := NewSwitcher("twins", Config{Servers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Switch(0, "bogus"); !errors.Is(err, ErrUnknownAlgo) {
		t.Fatalf("Switch to unknown: got %v", err)
	}
	if sw.Name() != "twins" {
		t.Fatalf("failed Switch changed the algorithm to %s", sw.Name())
	}
	if _, err := NewSwitcher("bogus", Config{Servers: 2}); !errors.Is(err, ErrUnknownAlgo) {
		t.Fatalf("NewSwitcher unknown: got %v", err)
	}
	for _, tt := range []struct {
		name string
		p    Config
	}{
		{"negative max batch", Config{MaxBatch: -2}},
		{"servers changed", Config{Servers: 3}},
		{"node changed", Config{Node: 1}},
		{"nodes changed", Config{Nodes: 2}},
	} {
		t.Run("SetParams/"+tt.name, func(t *testing.T) {
			if err := sw.SetParams(0, tt.p); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("SetParams(%+v): got %v, want ErrBadConfig", tt.p, err)
			}
		})
	}
	p := sw.Params()
	p.MaxBatch = 3
	if err := sw.SetParams(0, p); err != nil {
		t.Fatal(err)
	}
	if err := sw.SetWindow(0, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := sw.Params(); got.Window != 2*time.Millisecond || got.MaxBatch != 3 {
		t.Fatalf("after SetWindow(2ms): Window %v MaxBatch %d, want 2ms and the 3 set before", got.Window, got.MaxBatch)
	}
	if err := sw.Switch(0, "hbrr"); err != nil {
		t.Fatal(err)
	}
	if err := sw.Switch(0, "twins"); err != nil {
		t.Fatal(err)
	}
	if got := sw.Params().Window; got != 2*time.Millisecond {
		t.Fatalf("Window after switching: %v, want the 2ms set before", got)
	}
}

// TestIDSet checks the open-addressing set against a map.
func TestIDSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s idSet
		ref := map[uint64]bool{}
		for range rapid.IntRange(0, 3000).Draw(t, "n") {
			id := uint64(rapid.IntRange(0, 2000).Draw(t, "id"))
			if rapid.IntRange(0, 2).Draw(t, "op") == 0 {
				s.remove(id)
				delete(ref, id)
			} else if got := s.add(id); got == ref[id] {
				t.Fatalf("add(%d) = %v with present=%v", id, got, ref[id])
			} else {
				ref[id] = true
			}
			if s.has(id) != ref[id] {
				t.Fatalf("has(%d) = %v, want %v", id, s.has(id), ref[id])
			}
		}
		for id := range uint64(2001) {
			if s.has(id) != ref[id] {
				t.Fatalf("has(%d) = %v, want %v", id, s.has(id), ref[id])
			}
		}
	})
}

// TestSwitchKeepsArrival: a request that arrived at time 0 keeps Arrival 0
// when a Switch moves it.
func TestSwitchKeepsArrival(t *testing.T) {
	sw, _ := NewSwitcher("fifo", Config{Servers: 1})
	sw.Add(0, Request{ID: 1, Length: 1, Op: rw.Read})
	sw.Add(5, Request{ID: 2, Length: 1, Op: rw.Read})
	if err := sw.Switch(10, "sw"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []time.Duration{0, 5} {
		b, ok, _ := sw.Next(20)
		if !ok || b.Requests[0].Arrival != want {
			t.Fatalf("got %+v, want arrival %v", b.Requests, want)
		}
	}
	if st := sw.Stats(); st.WaitTotal != 35 {
		t.Fatalf("WaitTotal %v, want 20+15", st.WaitTotal)
	}
}
