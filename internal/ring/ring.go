// Package ring is a FIFO ring buffer that grows by doubling, so a queue in
// steady state allocates nothing. The schedulers and the simulator keep
// their queues in it. The zero value is an empty ring ready to use; a Ring is
// not safe for concurrent use.
package ring

// Ring is a FIFO of T.
type Ring[T any] struct {
	buf        []T
	head, size int
}

// Len is the number of elements queued.
func (q *Ring[T]) Len() int { return q.size }

// Push appends v at the tail.
func (q *Ring[T]) Push(v T) {
	if q.size == len(q.buf) {
		nb := make([]T, max(16, 2*len(q.buf)))
		k := copy(nb, q.buf[q.head:])
		copy(nb[k:], q.buf[:q.head])
		q.buf, q.head = nb, 0
	}
	q.buf[q.index(q.size)] = v
	q.size++
}

// Peek returns a pointer to the head element; the ring must not be empty.
func (q *Ring[T]) Peek() *T { return &q.buf[q.head] }

// Pop removes and returns the head element; the ring must not be empty.
// The vacated slot is zeroed so the ring holds no stale references.
func (q *Ring[T]) Pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.size--
	return v
}

// At returns a pointer to the i-th element from the head (0 <= i < Len()).
func (q *Ring[T]) At(i int) *T { return &q.buf[q.index(i)] }

// Remove takes out the i-th element from the head, keeping the order of the
// others, and returns it.
func (q *Ring[T]) Remove(i int) T {
	v := *q.At(i)
	for ; i > 0; i-- {
		*q.At(i) = *q.At(i - 1)
	}
	q.Pop()
	return v
}

// Clear empties the ring, keeping its storage.
func (q *Ring[T]) Clear() {
	clear(q.buf)
	q.head, q.size = 0, 0
}

func (q *Ring[T]) index(i int) int {
	i += q.head
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	return i
}
