package tune

import (
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

func TestPatternOf(t *testing.T) {
	for _, tt := range []struct {
		o    access.Observation
		want string
	}{
		{access.Observation{Op: rw.Write, Clients: 4, Processes: 23, FileHandles: 23, ReqAvg: 16 << 20, Requests: 23, Bytes: 1}, "write-fpp-16m-nppc"},
		{access.Observation{Op: rw.Read, Clients: 4, Processes: 256, FileHandles: 1, ReqAvg: 32 << 10, Requests: 9, Bytes: 1}, "read-shared-32k-nppc"},
		{access.Observation{Op: rw.Read, Clients: 4, Processes: 4, FileHandles: 4, ReqAvg: 1000 << 10, Requests: 9}, "read-fpp-1m-1ppc"},
		{access.Observation{Op: rw.Write}, ""},
	} {
		if got := PatternOf(tt.o); got.Key != tt.want {
			t.Errorf("PatternOf(%+v) = %q, want %q", tt.o, got.Key, tt.want)
		}
	}
	a := PatternOf(access.Observation{Op: rw.Write, Clients: 4, Processes: 4, FileHandles: 1, ReqAvg: 1 << 20, Requests: 1})
	b := PatternOf(access.Observation{Op: rw.Write, Clients: 4, Processes: 4, FileHandles: 1, ReqAvg: 2 << 20, Requests: 1})
	c := PatternOf(access.Observation{Op: rw.Read, Clients: 4, Processes: 4, FileHandles: 1, ReqAvg: 1 << 20, Requests: 1})
	dist := func(x, y Pattern) float64 {
		var d float64
		for i := range x.Features {
			d += (x.Features[i] - y.Features[i]) * (x.Features[i] - y.Features[i])
		}
		return d
	}
	if dist(a, b) >= dist(a, c) {
		t.Errorf("a write of twice the size is no nearer than a read of the same size: %v, %v, %v", a.Features, b.Features, c.Features)
	}
}
