package fwd

import (
	"math/bits"
	"sync"
)

// Buffer pools by power-of-two size class, 4 KiB to 32 MiB: frame payloads
// and read buffers are reused instead of allocated (and zeroed) per request.
const (
	minClass = 12
	maxClass = 25
)

var pools [maxClass + 1]sync.Pool

// holders are the empty *[]byte that carry buffers in the pools, reused so
// that returning a buffer allocates nothing.
var holders sync.Pool

// getBuf returns a buffer of length n; its contents are undefined.
func getBuf(n int) []byte {
	c := class(n)
	if c > maxClass {
		return make([]byte, n)
	}
	if p, ok := pools[c].Get().(*[]byte); ok {
		b := (*p)[:n]
		*p = nil
		holders.Put(p)
		return b
	}
	return make([]byte, n, 1<<c)
}

// putBuf returns a buffer obtained from getBuf (or nil, ignored); the
// caller must not use it again.
func putBuf(b []byte) {
	c := class(cap(b))
	if b == nil || c > maxClass || cap(b) != 1<<c {
		return
	}
	p, _ := holders.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:0]
	pools[c].Put(p)
}

func class(n int) int {
	if n <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(n - 1))
}
