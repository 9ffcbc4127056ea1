package knob

import "testing"

func TestStep(t *testing.T) {
	tests := []struct {
		name    string
		k       Knob
		d       int
		want    int
		changed bool
	}{
		{"double", Knob{Value: 4, Min: 1, Max: 16}, 1, 8, true},
		{"halve", Knob{Value: 4, Min: 1, Max: 16}, -1, 2, true},
		{"capped at max", Knob{Value: 12, Min: 1, Max: 16}, 1, 16, true},
		{"at max", Knob{Value: 16, Min: 1, Max: 16}, 1, 16, false},
		{"at min", Knob{Value: 1, Min: 1, Max: 16}, -1, 1, false},
		{"floored at min", Knob{Value: 3, Min: 2, Max: 16}, -1, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.k
			if got := k.Step(tt.d); got != tt.changed || k.Value != tt.want {
				t.Errorf("Step(%d) on %+v: got value %d changed %v, want %d %v", tt.d, tt.k, k.Value, got, tt.want, tt.changed)
			}
		})
	}
}
