package sched

import "time"

// Quantum growth shared by aIOLi and MLF. AGIOS increments every waiting
// request's scheduling factor at each scheduling step and lets a request go
// when factor x quantum reaches its size. A pure scheduler has no steps of
// its own, so we count them in time: a request that has waited w has a
// quantum of Quantum x (1 + floor(w / Timeslice)) bytes. An aggregated
// (virtual) request may go when the sum of its parts' quanta covers its size.

func quantumAt(it *item, now time.Duration, q int64, ts time.Duration) int64 {
	w := now - it.r.Arrival
	if w < 0 {
		w = 0
	}
	steps := int64(w / ts)
	if steps > (1<<62)/q {
		return 1 << 62
	}
	return q * (1 + steps)
}

// eligibleAt is the first instant at which it's quantum covers its length.
func eligibleAt(it *item, q int64, ts time.Duration) time.Duration {
	steps := (it.r.Length - 1) / q
	return it.r.Arrival + time.Duration(steps)*ts
}

// quantaCover reports whether reqs' quanta at now cover their total length.
func quantaCover(reqs []item, now time.Duration, q int64, ts time.Duration) bool {
	var quanta, length int64
	for i := range reqs {
		quanta += quantumAt(&reqs[i], now, q, ts)
		length += reqs[i].r.Length
	}
	return quanta >= length
}
