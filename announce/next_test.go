package announce

import (
	"testing"
	"time"
)

func TestNextReport(t *testing.T) {
	tests := []struct {
		clock bool
		now   time.Time
		want  time.Duration
	}{
		{false, time.Unix(0, 1_250_000_000), time.Second},
		{true, time.Unix(0, 1_250_000_000), 750 * time.Millisecond},
		{true, time.Unix(7, 0), time.Second},
		{true, time.Unix(7, 999_999_999), time.Nanosecond},
	}
	for _, tt := range tests {
		a := &Announcer{opts: Options{Interval: time.Second, AlignClock: tt.clock}}
		if got := a.next(tt.now); got != tt.want {
			t.Errorf("next(%v, clock=%v) = %v, want %v", tt.now.UnixNano(), tt.clock, got, tt.want)
		}
	}
}
