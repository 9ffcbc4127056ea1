package warnlog

import (
	"testing"
	"time"
)

func TestAllowOncePerPeriodPerKey(t *testing.T) {
	l := Limiter{Every: time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		key     string
		at      time.Duration
		ok      bool
		dropped int
	}{
		{"a", 0, true, 0},
		{"a", 100 * time.Millisecond, false, 0},
		{"b", 200 * time.Millisecond, true, 0}, // another key is not held back
		{"a", 900 * time.Millisecond, false, 0},
		{"a", time.Second, true, 2}, // two suppressed since the last line
		{"a", 1500 * time.Millisecond, false, 0},
		{"b", 3 * time.Second, true, 0},
		{"a", 3 * time.Second, true, 1},
	}
	for i, s := range steps {
		ok, n := l.Allow(s.key, t0.Add(s.at))
		if ok != s.ok || n != s.dropped {
			t.Errorf("step %d (%s at %v): got %v, %d; want %v, %d", i, s.key, s.at, ok, n, s.ok, s.dropped)
		}
	}
}
