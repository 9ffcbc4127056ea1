package sched

import (
	"github.com/adaptio/adaptio/internal/ring"
	"math"
	"time"
)

// wfq is the weighted fair queueing AGIOS added in 2022: one arrival-ordered
// queue per data server, visited round robin; a visit to queue i adds
// Weights[i] x Quantum bytes to its allowance, and the queue dispatches its
// head requests (one per batch) while they fit the allowance. What is left
// is carried to the next visit while the queue has requests and dropped when
// it empties (deficit round robin). AGIOS reads integer byte weights from a
// file; here weights scale Quantum. When a whole round dispatches nothing
// (heads larger than the allowances), the rounds needed are credited at once.
type wfq struct {
	core
	queues   []ring.Ring[item]
	debt     []int64 // allowance per queue
	cur      int
	visiting bool // cur's visit has started (its allowance added)
}

var _ Scheduler = (*wfq)(nil)
var _ Tunable = (*wfq)(nil)

func newWFQ(cfg Config) *wfq {
	t := &wfq{queues: make([]ring.Ring[item], cfg.Servers), debt: make([]int64, cfg.Servers)}
	t.init("wfq", cfg)
	return t
}

func (t *wfq) allot(i int) int64 {
	w := 1.0
	if len(t.cfg.Weights) > 0 {
		w = t.cfg.Weights[i]
	}
	a := w * float64(t.cfg.Quantum)
	if a >= math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return max(int64(a), 1)
}

func (t *wfq) Add(now time.Duration, r Request) error {
	seq, err := t.admit(now, &r)
	if err != nil {
		return err
	}
	t.queues[r.Queue].Push(item{r: r, seq: seq})
	return nil
}

func (t *wfq) Next(now time.Duration) (Batch, bool, time.Duration) {
	if t.n == 0 {
		return Batch{}, false, 0
	}
	idle := 0
	for {
		if !t.visiting {
			t.debt[t.cur] = min(t.debt[t.cur]+t.allot(t.cur), math.MaxInt64/2)
			t.visiting = true
		}
		q := &t.queues[t.cur]
		if q.Len() > 0 && q.Peek().r.Length <= t.debt[t.cur] {
			it := q.Pop()
			t.debt[t.cur] -= it.r.Length
			s, buf := t.open()
			return t.emit(now, s, append(buf, it.r)), true, 0
		}
		if q.Len() == 0 {
			t.debt[t.cur] = 0
		}
		t.visiting = false
		t.cur++
		if t.cur == len(t.queues) {
			t.cur = 0
		}
		if idle++; idle >= len(t.queues) {
			t.fastForward()
			idle = 0
		}
	}
}

// fastForward credits the rounds after which the first head fits.
func (t *wfq) fastForward() {
	k := int64(math.MaxInt64)
	for i := range t.queues {
		if t.queues[i].Len() == 0 {
			continue
		}
		need := t.queues[i].Peek().r.Length - t.debt[i]
		a := t.allot(i)
		k = min(k, (need+a-1)/a)
	}
	if k <= 1 || k == math.MaxInt64 {
		return
	}
	for i := range t.queues {
		if t.queues[i].Len() > 0 {
			t.debt[i] += (k - 1) * t.allot(i)
		}
	}
}

func (t *wfq) SetParams(_ time.Duration, p Config) error { return t.setParams(p) }

func (t *wfq) drain(dst []item) []item {
	for i := range t.queues {
		for t.queues[i].Len() > 0 {
			dst = append(dst, t.queues[i].Pop())
		}
		t.debt[i] = 0
	}
	t.visiting = false
	return dst
}
