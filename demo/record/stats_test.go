package record

import (
	"slices"
	"testing"
	"time"
)

// The windows to run again are those best in some phase or in the cycle,
// once each, in the rows' order; learning rows are not windows.
func TestWinners(t *testing.T) {
	rows := []StaticResult{
		{Window: time.Millisecond, Phases: map[string]float64{"write": 5, "read": 1.3}, Total: 6.3},
		{Window: 2 * time.Millisecond, Phases: map[string]float64{"write": 4, "read": 1.5}, Total: 5.5},
		{Window: 4 * time.Millisecond, Phases: map[string]float64{"write": 4.1, "read": 1.2}, Total: 5.3},
		{Window: 8 * time.Millisecond, Phases: map[string]float64{"write": 6, "read": 1.4}, Total: 7.4},
		{Label: LabelLastHalf, Phases: map[string]float64{"write": 3, "read": 1}, Total: 4},
	}
	got := Winners(rows)
	want := []time.Duration{2 * time.Millisecond, 4 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Errorf("Winners = %v, want %v (best write, best read and cycle)", got, want)
	}
	if w := Winners(rows[4:]); len(w) != 0 {
		t.Errorf("Winners of learning rows alone = %v, want none", w)
	}
}
