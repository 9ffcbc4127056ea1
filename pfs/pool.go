package pfs

import "sync"

// Buffers for frame bodies and read data, in two size classes, so that a
// stream of 64 KiB or 1 MiB accesses does not allocate per request.
var pools = [...]struct {
	size int
	pool sync.Pool
}{{size: 72 << 10}, {size: 1<<20 + 8<<10}}

// getBuf returns a buffer of length n; putBuf recycles it.
func getBuf(n int) []byte {
	for i := range pools {
		if n <= pools[i].size {
			if p, ok := pools[i].pool.Get().(*[]byte); ok {
				return (*p)[:n]
			}
			return make([]byte, n, pools[i].size)
		}
	}
	return make([]byte, n)
}

func putBuf(b []byte) {
	for i := range pools {
		if cap(b) == pools[i].size {
			b = b[:0]
			pools[i].pool.Put(&b)
			return
		}
	}
}
