// Package warnlog keeps warnings about rejected input from flooding a log:
// at most one line per key (a rejection reason, say) per period, with the
// number of warnings suppressed since the last line.
//
//	var l warnlog.Limiter // zero value: one line per key per DefaultEvery
//	if ok, n := l.Allow("signature", time.Now()); ok {
//		log.Warn("decision rejected", "reason", "signature", "suppressed", n)
//	}
package warnlog

import (
	"sync"
	"time"
)

// DefaultEvery is the period of a zero Limiter.
const DefaultEvery = 5 * time.Second

// Limiter allows one warning per key per Every. Keys should come from a
// small fixed set (reasons), since each is remembered. The zero value is
// ready to use; it is safe for concurrent use.
type Limiter struct {
	Every time.Duration // 0: DefaultEvery

	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	at         time.Time
	suppressed int
}

// Allow reports whether a warning of key may be logged at now and, if so,
// how many warnings of key were suppressed since the last one allowed.
func (l *Limiter) Allow(key string, now time.Time) (ok bool, suppressed int) {
	every := l.Every
	if every <= 0 {
		every = DefaultEvery
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string]*entry{}
	}
	e := l.keys[key]
	if e == nil {
		l.keys[key] = &entry{at: now}
		return true, 0
	}
	if now.Sub(e.at) < every {
		e.suppressed++
		return false, 0
	}
	n := e.suppressed
	e.at, e.suppressed = now, 0
	return true, n
}
