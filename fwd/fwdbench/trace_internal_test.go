package fwdbench

import "testing"

// filled accepts Fill's content at any offset and length, and names the
// chunk of the first byte that differs.
func TestFilledFindsTheFirstWrongChunk(t *testing.T) {
	scratch := make([]byte, 1000)
	for _, n := range []int{1, 999, 1000, 1001, 5000} {
		b := make([]byte, n)
		Fill(b, 7, 2, 12345)
		if _, ok := filled(b, scratch, 7, 2, 12345); !ok {
			t.Errorf("%d bytes of Fill's content refused", n)
		}
		b[n-1] ^= 1
		if at, ok := filled(b, scratch, 7, 2, 12345); ok || at != 12345+int64((n-1)/1000*1000) {
			t.Errorf("%d bytes, the last flipped: ok %v at %d", n, ok, at)
		}
		b[n-1] ^= 1
		if _, ok := filled(b, scratch, 8, 2, 12345); ok {
			t.Errorf("%d bytes checked against another seed's content: accepted", n)
		}
	}
}
