package fwd

import "testing"

// Buffers round-trip through the pools without allocating once warm, and
// returning nil (a request without a pooled frame) is free.
func TestPoolDoesNotAllocate(t *testing.T) {
	putBuf(getBuf(32 << 10)) // warm the class
	if n := testing.AllocsPerRun(100, func() { putBuf(getBuf(32 << 10)) }); n != 0 {
		t.Errorf("get+put of a 32 KiB buffer: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { putBuf(nil) }); n != 0 {
		t.Errorf("putBuf(nil): %v allocations, want 0", n)
	}
	b := getBuf(5000)
	if len(b) != 5000 || cap(b) != 8192 {
		t.Fatalf("getBuf(5000): len %d cap %d, want 5000 and 8192", len(b), cap(b))
	}
	putBuf(b[:10]) // a resliced buffer goes back by its capacity
	if c := getBuf(8192); cap(c) != 8192 {
		t.Fatalf("cap %d after put", cap(c))
	}
}
