package sim

// event kinds.
const (
	evIONArrive    uint8 = iota + 1 // a process's request reaches its I/O node (id: process)
	evIONRetry                      // an I/O node asks its scheduler again (id: node)
	evServerArrive                  // a batch reaches its data server (id: dispatcher thread)
	evDiskDone                      // a data server's access finishes (id: server)
	evBatchDone                     // a batch's reply reaches the I/O node (id: dispatcher thread)
	evClientDone                    // a request's reply reaches the process (id: process)
	evPhaseStart                    // the next pattern starts (id: phase)
)

// event is one scheduled callback: kind applied to object id at time t.
// Events at the same t run in seq (scheduling) order, so runs repeat exactly.
type event struct {
	t    int64
	seq  uint64
	id   int32
	kind uint8
}

func (a *event) less(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// eventQueue is a 4-ary min-heap of events ordered by (t, seq).
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) len() int { return len(q.h) }

func (q *eventQueue) push(t int64, kind uint8, id int32) {
	q.seq++
	q.h = append(q.h, event{t: t, seq: q.seq, id: id, kind: kind})
	i := len(q.h) - 1
	e := q.h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&q.h[p]) {
			break
		}
		q.h[i] = q.h[p]
		i = p
	}
	q.h[i] = e
}

// peek returns the earliest event's time.
func (q *eventQueue) peek() int64 { return q.h[0].t }

func (q *eventQueue) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	e := q.h[n]
	q.h = q.h[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if q.h[j].less(&q.h[m]) {
				m = j
			}
		}
		if !q.h[m].less(&e) {
			break
		}
		q.h[i] = q.h[m]
		i = m
	}
	q.h[i] = e
	return top
}
