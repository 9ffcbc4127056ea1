package dataserver

import (
	"slices"
	"testing"
	"time"

	"github.com/adaptio/adaptio/disk"
	"github.com/adaptio/adaptio/rw"
)

func newServer(t *testing.T, cfg Config, dev disk.Device) *Server {
	t.Helper()
	s, err := New(cfg, dev, disk.DefaultPlacement(1<<40), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs the accesses one after the other, each arriving when the
// previous ends, and returns their service times.
func serve(s *Server, as ...Access) []time.Duration {
	var out []time.Duration
	var now time.Duration
	for _, a := range as {
		s.Arrive(a)
		_, d, _ := s.Start(now)
		s.Done()
		now += d
		out = append(out, d)
	}
	return out
}

func TestSwitchCostOnlyWhenTheIONodeChanges(t *testing.T) {
	s := newServer(t, Config{Overhead: 10 * time.Microsecond, SwitchCost: 300 * time.Microsecond, TokenCost: 50 * time.Microsecond, ReadAheadBytes: -1}, nil)
	w := func(node int, file uint64) Access {
		return Access{Node: node, File: file, Op: rw.Write, Offset: 0, Length: 4096}
	}
	got := serve(s, w(0, 1), w(0, 2), w(1, 2), w(1, 1), w(0, 3))
	us := time.Microsecond
	want := []time.Duration{10 * us, 10 * us, 360 * us, 10 * us, 310 * us}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("access %d: %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	if st := s.Stats(); st.Accesses != 5 || st.Switches != 2 || st.Busy != 700*us {
		t.Errorf("stats %+v, want 5 accesses, 2 switches, 700µs busy", st)
	}
}

func TestContentionCountsOtherNodesWithWork(t *testing.T) {
	s := newServer(t, Config{Overhead: -1, SwitchCost: -1, Contention: 100 * time.Microsecond, ReadAheadBytes: -1}, nil)
	for node := range 3 {
		s.Arrive(Access{Node: node, File: 1, Op: rw.Write, Length: 1})
	}
	_, d, ok := s.Start(0)
	if !ok || d != 200*time.Microsecond {
		t.Errorf("first of 3 nodes' accesses: %v (ok %v), want 200µs", d, ok)
	}
	if _, _, ok := s.Start(0); ok {
		t.Error("Start while busy took a second access")
	}
}

func TestPageCacheHitsAfterAMissAndWritesInvalidate(t *testing.T) {
	dev := disk.None{}
	s := newServer(t, Config{Overhead: -1, SwitchCost: -1, ReadAheadBytes: 128 << 10, CacheCopyBytesPerSec: 1e9}, dev)
	r := func(off int64) Access { return Access{File: 7, Op: rw.Read, Offset: off, Length: 32 << 10} }
	serve(s, r(0), r(32<<10), r(96<<10))
	if st := s.Stats(); st.PageMisses != 1 || st.PageHits != 2 {
		t.Fatalf("three reads inside one 128 KiB chunk: %d misses %d hits, want 1 and 2", st.PageMisses, st.PageHits)
	}
	serve(s, Access{File: 7, Op: rw.Write, Offset: 0, Length: 1}, r(0))
	if st := s.Stats(); st.PageMisses != 2 {
		t.Errorf("a read after a write to its chunk: %d misses in all, want 2 (the write invalidates)", st.PageMisses)
	}
}

func TestQueuedReadsMergeIntoOneDeviceRead(t *testing.T) {
	for _, tt := range []struct {
		merge      int
		wantMisses uint64
	}{{8, 1}, {-1, 4}} {
		s := newServer(t, Config{Overhead: -1, SwitchCost: -1, ReadMerge: tt.merge}, disk.None{})
		for k := range 4 {
			s.Arrive(Access{File: 1, Op: rw.Read, Offset: int64(k) * 128 << 10, Length: 128 << 10})
		}
		for s.Len() > 0 {
			s.Start(0)
			s.Done()
		}
		if st := s.Stats(); st.PageMisses != tt.wantMisses {
			t.Errorf("ReadMerge %d: %d device reads for 4 queued adjacent chunks, want %d", tt.merge, st.PageMisses, tt.wantMisses)
		}
	}
}

func TestElevatorServesInAddressOrder(t *testing.T) {
	for _, tt := range []struct {
		elevator bool
		want     []int64
	}{{false, []int64{3, 1, 2}}, {true, []int64{1, 2, 3}}} {
		s := newServer(t, Config{Elevator: tt.elevator, ReadAheadBytes: -1}, nil)
		for _, off := range []int64{3, 1, 2} {
			s.Arrive(Access{File: 1, Op: rw.Write, Offset: off << 20, Length: 1, Tag: off})
		}
		var got []int64
		for s.Len() > 0 {
			a, _, _ := s.Start(0)
			s.Done()
			got = append(got, a.Tag)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("elevator %v: order %v, want %v", tt.elevator, got, tt.want)
		}
	}
}

func TestTimeScaleMultipliesEveryServiceTime(t *testing.T) {
	as := []Access{
		{Node: 0, File: 1, Op: rw.Write, Offset: 0, Length: 1 << 20},
		{Node: 1, File: 1, Op: rw.Write, Offset: 1 << 20, Length: 32 << 10},
		{Node: 0, File: 2, Op: rw.Read, Offset: 0, Length: 32 << 10},
		{Node: 0, File: 2, Op: rw.Read, Offset: 32 << 10, Length: 32 << 10},
	}
	one := serve(newServer(t, Config{}, nil), as...)
	three := serve(newServer(t, Config{TimeScale: 3}, nil), as...)
	for i := range as {
		if one[i] <= 0 || three[i] != time.Duration(float64(one[i])*3) {
			t.Errorf("access %d: %v at scale 3, want 3 x %v", i, three[i], one[i])
		}
	}
	for _, bad := range []float64{-1, 1001} {
		if _, err := New(Config{TimeScale: bad}, nil, disk.DefaultPlacement(1<<40), nil); err == nil {
			t.Errorf("time scale %v accepted", bad)
		}
	}
}
