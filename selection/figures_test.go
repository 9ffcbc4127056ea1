package selection

import (
	"testing"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/rw"
)

func TestFiguresOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    access.Observation
		want Figures
	}{
		{"reads", access.Observation{Op: rw.Read, Bytes: 100, OpBytes: 80, Completed: 4}, Figures{Bytes: 100, ReadBytes: 80, Served: 4}},
		{"writes", access.Observation{Op: rw.Write, Bytes: 100, OpBytes: 80, Completed: 4}, Figures{Bytes: 100, ReadBytes: 20, Served: 4}},
		{"a report: no count", access.Observation{Op: rw.Write, Bytes: 100, OpBytes: 100}, Figures{Bytes: 100, Served: 1}},
		{"idle", access.Observation{}, Figures{}},
		{"op bytes beyond the bytes", access.Observation{Op: rw.Read, Bytes: 10, OpBytes: 50, Completed: 1}, Figures{Bytes: 10, ReadBytes: 10, Served: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := FiguresOf(tt.o); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := (Figures{1, 2, 3}).Add(Figures{10, 20, 30}); got != (Figures{11, 22, 33}) {
		t.Errorf("Add: got %+v", got)
	}
}
