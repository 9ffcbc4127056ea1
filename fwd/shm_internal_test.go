package fwd

import "testing"

func TestShmSlice(t *testing.T) {
	region := make([]byte, 100)
	for _, tt := range []struct {
		off  uint64
		n    int64
		want bool
	}{
		{0, 100, true}, {0, 0, true}, {100, 0, true}, {99, 1, true},
		{99, 2, false}, {100, 1, false}, {101, 0, false}, {0, 101, false},
		{1<<64 - 1, 2, false}, {1 << 63, 1 << 62, false}, {0, -1, false},
	} {
		b, ok := shmSlice(region, tt.off, tt.n)
		if ok != tt.want || (ok && (len(b) != int(tt.n) || cap(b) != int(tt.n))) {
			t.Errorf("shmSlice(%d, %d) = len %d cap %d, %v; want %v", tt.off, tt.n, len(b), cap(b), ok, tt.want)
		}
	}
}
